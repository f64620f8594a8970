// The task domain's chains: find-then-act flows and a summary with two concurrent lists.
import { z } from 'zod';
import { defineChain } from '../define/chain.js';
import { ref } from '../define/ref.js';
import { completeTask, deleteTask, listTasks, TASK_NOT_FOUND_MESSAGE, updateTask, type Task } from './tools.js';

/** The trusted context every task chain declares: the user whose tasks they act on. */
export const userContext = z.object({ userId: z.uuid() });
/** The context's user, as the task tools' `user_id`. */
export const user = ref('context', 'userId');
const needsMatch = {
  check: (s: { input: { match: string } }) => s.input.match.trim().length > 0,
  message: 'Which task do you mean?',
};

/** What the pick steps read of a run's scope. */
interface PickScope {
  readonly input: { match: string };
  readonly results: Readonly<Record<string, any>>;
}

const listed = (s: PickScope): Task[] => s.results.find.tasks;

/**
 * The position a `match` names, 1-based: `#3`, `3`, `task 3` and `task #3` (any case, spaces
 * around) mean the 3rd task of the list, in list order; anything else is `undefined` (a title).
 *
 * @example
 * ```ts
 * taskPosition('task #3'); // 3
 * taskPosition('Buy 3 apples'); // undefined
 * ```
 */
function taskPosition(match: string): number | undefined {
  const m = /^\s*(?:task\s*)?#?\s*(\d{1,9})\s*$/i.exec(match);
  return m ? Number(m[1]) : undefined;
}

// The pick runs once per listed task with the same `match`: parse it once (a one-entry cache).
let parsedFor: string | undefined;
let parsed: { position: number | undefined; needle: string } = { position: undefined, needle: '' };
const parse = (match: string): typeof parsed => {
  if (match !== parsedFor) {
    parsedFor = match;
    parsed = { position: taskPosition(match), needle: match.toLowerCase() };
  }
  return parsed;
};
/** Whether the task's title holds `needle` (already lower-cased). */
export const titleHas = (task: Task, needle: string): boolean => task.title.toLowerCase().includes(needle);

// Position wins over title: a match that is only a number names a position, never a title.
const picked = (task: Task, s: PickScope): boolean => {
  const { position, needle } = parse(s.input.match);
  return position === undefined ? titleHas(task, needle) : listed(s)[position - 1] === task;
};

// For completing: a title that matches a pending task and a completed one means the pending one.
const pickedToComplete = (task: Task, s: PickScope): boolean => {
  if (!picked(task, s)) return false;
  const { position, needle } = parse(s.input.match);
  if (!task.completed || position !== undefined) return true;
  return !listed(s).some((t) => !t.completed && titleHas(t, needle));
};

const PICK_RULE =
  'by (part of) its title, or by its position in the list (`#3`, `3` or `task 3`: the 3rd task, 1-based)';

/** What {@link findAndComplete} returns: the task, and whether it had been completed before. */
export type CompletedTask = Task & {
  /** True when the task was already completed: nothing was changed. */
  already_completed: boolean;
};

/**
 * Finds one task (by title or position) and changes its title, priority and/or description.
 * Input `{ match, title?, priority?, description? }`: at least one of the three.
 *
 * @example
 * ```ts
 * await runner.run(findAndUpdate, { match: 'dentist', title: 'Dentist at 3pm' }, { context: { userId } });
 * await runner.run(findAndUpdate, { match: 'task 2', priority: 'high' }, { context: { userId } });
 * ```
 */
export const findAndUpdate = defineChain({
  name: 'find_and_update',
  version: '2',
  description: `Find a task ${PICK_RULE} and change its title, priority or description`,
  keywords: ['update', 'rename', 'change', 'edit', 'priority', 'description'],
  useCases: ['Rename the dentist task to "Dentist at 3pm"', 'Make task 2 high priority'],
  input: z.object({
    match: z.string().min(1),
    title: z.string().min(1).max(200).optional(),
    priority: z.enum(['low', 'medium', 'high']).optional(),
    description: z.string().max(2000).optional(),
  }),
  context: userContext,
  steps: [
    { id: 'find', tool: listTasks, input: { user_id: user, status: 'all' } },
    {
      id: 'target',
      select: { from: ref('find', 'tasks'), where: picked, expect: 'one', noMatch: TASK_NOT_FOUND_MESSAGE },
    },
    {
      id: 'update',
      tool: updateTask,
      input: {
        user_id: user,
        task_id: ref('target', 'task_id'),
        title: ref('input', 'title'),
        priority: ref('input', 'priority'),
        description: ref('input', 'description'),
      },
    },
  ],
  output: (s): Task => s.results.update.task,
  timeoutMs: 7000,
  preconditions: [
    needsMatch,
    {
      check: (s) => s.input.title !== undefined || s.input.priority !== undefined || s.input.description !== undefined,
      message: 'What should I change: the title, the priority or the description?',
    },
  ],
});

/**
 * Finds one task (by title or position), asks for confirmation, then deletes it. Input `{ match }`.
 *
 * @example
 * ```ts
 * const r = await runner.run(findAndDelete, { match: 'groceries' }, { context: { userId } });
 * if (r.status === 'awaiting_confirmation') {
 *   await runner.resume(r.resumeToken, { approved: true }, { context: { userId } });
 * }
 * ```
 */
export const findAndDelete = defineChain({
  name: 'find_and_delete',
  version: '2',
  description: `Find a task ${PICK_RULE}, confirm, then delete it`,
  keywords: ['delete', 'remove'],
  useCases: ['Delete the grocery task'],
  input: z.object({ match: z.string().min(1) }),
  context: userContext,
  steps: [
    { id: 'find', tool: listTasks, input: { user_id: user, status: 'all' } },
    {
      id: 'target',
      select: { from: ref('find', 'tasks'), where: picked, expect: 'one', noMatch: TASK_NOT_FOUND_MESSAGE },
    },
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
 * Finds one task (by title or position) and marks it completed. Input `{ match }`. A title that
 * matches a pending and a completed task means the pending one; a task that was already completed
 * is returned with `already_completed: true` and nothing is written (the goal already holds, and
 * there is nothing to retry).
 *
 * @example
 * ```ts
 * const r = await runner.run(findAndComplete, { match: 'milk' }, { context: { userId } });
 * if (r.status === 'completed' && r.output.already_completed) say(`'${r.output.title}' was already done.`);
 * ```
 */
export const findAndComplete = defineChain({
  name: 'find_and_complete',
  version: '2',
  description: `Find a task ${PICK_RULE} and mark it as done; says so if it already was`,
  keywords: ['complete', 'done', 'finish', 'check off'],
  useCases: ['Mark the milk task as done'],
  input: z.object({ match: z.string().min(1) }),
  context: userContext,
  steps: [
    { id: 'find', tool: listTasks, input: { user_id: user, status: 'all' } },
    {
      id: 'target',
      select: { from: ref('find', 'tasks'), where: pickedToComplete, expect: 'one', noMatch: TASK_NOT_FOUND_MESSAGE },
    },
    {
      id: 'complete',
      tool: completeTask,
      input: { user_id: user, task_id: ref('target', 'task_id') },
      when: (s) => !s.results.target.completed,
    },
  ],
  // A skipped step leaves no result: then the task as found, flagged.
  output: (s): CompletedTask => {
    const done = s.results.complete;
    return done ? { ...done.task, already_completed: false } : { ...s.results.target, already_completed: true };
  },
  timeoutMs: 7000,
  preconditions: [needsMatch],
});

/** The output of {@link taskSummary}. */
export interface TaskSummary {
  total: number;
  completed: number;
  pending: number;
  /**
   * Percentage done: completed / total × 100, rounded to one decimal
   * (2 of 4 → 50, 1 of 3 → 33.3); 0 when there are no tasks.
   */
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
 * if (r.status === 'completed') console.log(`${r.output.completion_rate} % done`); // 2 of 4 → 50
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
          completion_rate: total === 0 ? 0 : Math.round((done.length / total) * 1000) / 10,
          by_priority,
          by_status: { completed: done.length, pending: pending.length },
        };
      },
    },
  ],
  output: (s): TaskSummary => s.results.summary,
  timeoutMs: 8000, // the reference's summary budget
});

/**
 * All four built-in task chains.
 *
 * @example
 * ```ts
 * const runner = createRunner({ invoker, chains: [...taskChains] }); // resume any of them by name
 * ```
 */
export const taskChains: readonly [
  typeof findAndUpdate,
  typeof findAndDelete,
  typeof findAndComplete,
  typeof taskSummary,
] = [findAndUpdate, findAndDelete, findAndComplete, taskSummary];
