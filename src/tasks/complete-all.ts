// The built-in bulk chain: complete every pending task matching (a `forEach` over a sub-chain, §12).
import { z } from 'zod';
import { defineChain } from '../define/chain.js';
import { ref } from '../define/ref.js';
import { titleHas, user, userContext } from './chains.js';
import { completeTask, listTasks, type Task } from './tools.js';

/** One task completed by {@link completeAll}: completes the task `task_id` of the context's user. */
const completeOne = defineChain({
  name: 'complete_one',
  version: '1',
  description: 'Mark one task (by id) as done',
  input: z.object({ task_id: z.uuid() }),
  context: userContext,
  steps: [{ id: 'complete', tool: completeTask, input: { user_id: user, task_id: ref('input', 'task_id') } }],
  output: (s): Task => s.results.complete.task,
});

/** More pending tasks than this to change, and {@link completeAll} asks first. */
export const COMPLETE_ALL_CONFIRM_OVER = 10;

/** What {@link completeAll} returns. */
export interface CompletedAll {
  /** The tasks marked done, in list order. */
  completed: Task[];
  /** Tasks that could not be completed, with why (the others were still completed). */
  failed: { task_id: string; title: string; error: { category: string; code: string; message: string } }[];
}

const pendingMatching = (s: {
  input: { match?: string | undefined };
  results: Readonly<Record<string, any>>;
}): Task[] => {
  const tasks: Task[] = s.results.find.tasks;
  const needle = s.input.match?.trim().toLowerCase();
  return needle ? tasks.filter((t) => !t.completed && titleHas(t, needle)) : tasks.filter((t) => !t.completed);
};
const completeEach = {
  over: ref('targets'),
  chain: completeOne,
  input: { task_id: ref('item', 'task_id') },
  concurrency: 4,
  onItemError: 'collect',
} as const;

/**
 * Completes every pending task whose title contains `match` (every pending task without one), at
 * most 4 at once. More than {@link COMPLETE_ALL_CONFIRM_OVER} to change asks for confirmation
 * first; a task that fails is reported in `failed` and the others are still completed. Input `{ match? }`.
 *
 * @example
 * ```ts
 * const r = await runner.run(completeAll, { match: 'groceries' }, { context: { userId } });
 * if (r.status === 'awaiting_confirmation') {
 *   await runner.resume(r.resumeToken, { approved: true }, { context: { userId } });
 * }
 * ```
 */
export const completeAll = defineChain({
  name: 'complete_all',
  version: '1',
  description:
    'Mark every pending task (or every one whose title contains `match`) as done; ' +
    'asks first when more than 10 would change',
  keywords: ['complete all', 'done', 'finish everything', 'check off all', 'overdue'],
  useCases: ['Complete all my grocery tasks', 'Mark everything as done'],
  input: z.object({ match: z.string().min(1).optional() }),
  context: userContext,
  steps: [
    { id: 'find', tool: listTasks, input: { user_id: user, status: 'pending' } },
    { id: 'targets', compute: pendingMatching },
    { id: 'few', forEach: completeEach, when: (s) => s.results.targets.length <= COMPLETE_ALL_CONFIRM_OVER },
    {
      id: 'many',
      forEach: completeEach,
      when: (s) => s.results.targets.length > COMPLETE_ALL_CONFIRM_OVER,
      confirm: {
        prompt: (s) =>
          `Mark all ${s.results.targets.length} ` +
          `${s.input.match ? `tasks matching '${s.input.match}'` : 'pending tasks'} as done?`,
        details: (s) => ({
          count: s.results.targets.length,
          titles: (s.results.targets as Task[]).slice(0, 20).map((t) => t.title),
        }),
      },
    },
  ],
  output: (s): CompletedAll => {
    const targets: Task[] = s.results.targets;
    const each: (
      { ok: true; value: Task } | { ok: false; error: { category: string; code: string; message: string } }
    )[] = s.results.few ?? s.results.many ?? [];
    const out: CompletedAll = { completed: [], failed: [] };
    each.forEach((r, i) => {
      if (r.ok) out.completed.push(r.value);
      else
        out.failed.push({
          task_id: targets[i]!.task_id,
          title: targets[i]!.title,
          error: { category: r.error.category, code: r.error.code, message: r.error.message },
        });
    });
    return out;
  },
  timeoutMs: 30_000,
});
