// The task domain's chains: find-then-act flows and a summary with two concurrent lists.
import { z } from 'zod';
import { defineChain } from '../define/chain.js';
import { ref } from '../define/ref.js';
import { completeTask, deleteTask, listTasks, updateTask, type Task } from './tools.js';

const userContext = z.object({ userId: z.string().uuid() });
const user = ref('context', 'userId');
const findByTitle = { id: 'find', tool: listTasks, input: { user_id: user, status: 'all' } } as const;
const pickOne = { id: 'target', select: { from: ref('find', 'tasks'), where: { title: { contains: ref('input', 'match') } }, expect: 'one' } } as const;
const needsMatch = { check: (s: { input: { match: string } }) => s.input.match.trim().length > 0, message: 'Which task do you mean?' };

/**
 * Finds one task by (part of) its title and renames it. Input `{ match, title }`.
 *
 * @example
 * ```ts
 * await runner.run(findAndUpdate, { match: 'dentist', title: 'Dentist at 3pm' }, { context: { userId } });
 * ```
 */
export const findAndUpdate = defineChain({
  name: 'find_and_update',
  version: '1',
  description: 'Find a task by title and change its title',
  keywords: ['update', 'rename', 'change', 'edit'],
  useCases: ['Rename the dentist task to "Dentist at 3pm"'],
  input: z.object({ match: z.string().min(1), title: z.string().min(1).max(200) }),
  context: userContext,
  steps: [
    findByTitle,
    pickOne,
    { id: 'update', tool: updateTask, input: { user_id: user, task_id: ref('target', 'task_id'), title: ref('input', 'title') } },
  ],
  output: (s): Task => s.results.update.task,
  timeoutMs: 7000,
  preconditions: [needsMatch],
});

/**
 * Finds one task by title, asks for confirmation, then deletes it. Input `{ match }`.
 *
 * @example
 * ```ts
 * const r = await runner.run(findAndDelete, { match: 'groceries' }, { context: { userId } });
 * if (r.status === 'awaiting_confirmation') await runner.resume(r.resumeToken, { approved: true }, { context: { userId } });
 * ```
 */
export const findAndDelete = defineChain({
  name: 'find_and_delete',
  version: '1',
  description: 'Find a task by title, confirm, then delete it',
  keywords: ['delete', 'remove'],
  useCases: ['Delete the grocery task'],
  input: z.object({ match: z.string().min(1) }),
  context: userContext,
  steps: [
    findByTitle,
    pickOne,
    {
      id: 'delete',
      tool: deleteTask,
      input: { user_id: user, task_id: ref('target', 'task_id') },
      confirm: {
        prompt: (s) => `Are you sure you want to delete '${s.results.target.title}'?`,
        details: (s) => ({ task_id: s.results.target.task_id, title: s.results.target.title }),
      },
    },
  ],
  output: (s): { task_id: string; title: string; deleted: true } => s.results.delete,
  timeoutMs: 7000,
  preconditions: [needsMatch],
});

/**
 * Finds one task by title and marks it completed. Input `{ match }`.
 *
 * @example
 * ```ts
 * await runner.run(findAndComplete, { match: 'milk' }, { context: { userId } });
 * ```
 */
export const findAndComplete = defineChain({
  name: 'find_and_complete',
  version: '1',
  description: 'Find a task by title and mark it as done',
  keywords: ['complete', 'done', 'finish', 'check off'],
  useCases: ['Mark the milk task as done'],
  input: z.object({ match: z.string().min(1) }),
  context: userContext,
  steps: [
    { id: 'find', tool: listTasks, input: { user_id: user, status: 'pending' } },
    pickOne,
    { id: 'complete', tool: completeTask, input: { user_id: user, task_id: ref('target', 'task_id') } },
  ],
  output: (s): Task => s.results.complete.task,
  timeoutMs: 7000,
  preconditions: [needsMatch],
});

/** The output of {@link taskSummary}. */
export interface TaskSummary {
  total: number;
  completed: number;
  pending: number;
  /** completed / total, 0 when there are no tasks (two decimals). */
  completion_rate: number;
  by_priority: Record<'low' | 'medium' | 'high', number>;
  by_status: { completed: number; pending: number };
}

/**
 * Lists pending and completed tasks concurrently and summarises them. Input `{}`.
 *
 * @example
 * ```ts
 * const r = await runner.run(taskSummary, {}, { context: { userId } });
 * if (r.status === 'completed') console.log(r.output.completion_rate);
 * ```
 */
export const taskSummary = defineChain({
  name: 'task_summary',
  version: '1',
  description: "Summarise a user's tasks: totals, completion rate, counts by priority and status",
  keywords: ['summary', 'overview', 'stats', 'progress', 'how many'],
  useCases: ['How am I doing on my tasks?'],
  input: z.object({}),
  context: userContext,
  steps: [
    { id: 'pending', tool: listTasks, input: { user_id: user, status: 'pending' } },
    { id: 'done', tool: listTasks, input: { user_id: user, status: 'completed' } },
    {
      id: 'summary',
      compute: (s): TaskSummary => {
        const pending: Task[] = s.results.pending.tasks;
        const done: Task[] = s.results.done.tasks;
        const by_priority = { low: 0, medium: 0, high: 0 };
        for (const t of pending) by_priority[t.priority]++;
        for (const t of done) by_priority[t.priority]++;
        const total = pending.length + done.length;
        return {
          total,
          completed: done.length,
          pending: pending.length,
          completion_rate: total === 0 ? 0 : Math.round((done.length / total) * 100) / 100,
          by_priority,
          by_status: { completed: done.length, pending: pending.length },
        };
      },
    },
  ],
  output: (s): TaskSummary => s.results.summary,
  timeoutMs: 7000,
});

/**
 * All four built-in task chains.
 *
 * @example
 * ```ts
 * const runner = createRunner({ invoker, chains: [...taskChains] }); // resume any of them by name
 * ```
 */
export const taskChains = [findAndUpdate, findAndDelete, findAndComplete, taskSummary] as const;
