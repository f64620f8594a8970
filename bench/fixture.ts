// The bench's find-and-update workload, shared by `npm run bench` (run.ts) and the profiling scripts:
// a user's five tasks and the built-in chain over copies of the task tools without rate limits.
import { setTimeout as sleep } from 'node:timers/promises';
import { parseSchema, type Schema } from '../src/define/schema.js';
import { defineChain, defineTool, findAndUpdate, listTasks, ref, updateTask, type Tool } from '../src/index.js';

export const USER = '6f1d2c3b-4a5e-4f60-8a7b-1c2d3e4f5a6b';
export const TASKS = ['Buy groceries', 'Buy milk', 'Call mom', 'Dentist appointment', 'Read a book'].map(
  (title, i) => ({
    task_id: `0000000${i}-1b2d-4c6e-9f7a-8b9c0d1e2f3a`,
    user_id: USER,
    title,
    completed: i === 2,
    priority: 'medium' as const,
    created_at: '2026-01-01T00:00:00Z',
  }),
);

// The built-in task tools carry the reference spec's per-user rate limits (100 updates a minute);
// the baseline has none, so the bench runs the same chain over copies without them.
const unlimited = (t: Tool) => defineTool({ ...t, rateLimit: undefined });
export const list = unlimited(listTasks);
export const update = unlimited(updateTask);

/** find (list_tasks) → target (select by title) → update (update_task with `updateTool`). */
function findAndUpdateWith<U extends typeof update>(name: string, updateTool: U) {
  return defineChain({
    name,
    input: findAndUpdate.input,
    context: findAndUpdate.context!,
    steps: [
      { id: 'find', tool: list, input: { user_id: ref('context', 'userId'), status: 'all' } },
      {
        id: 'target',
        select: { from: ref('find', 'tasks'), where: { title: { contains: ref('input', 'match') } }, expect: 'one' },
      },
      {
        id: 'update',
        tool: updateTool,
        input: { user_id: ref('context', 'userId'), task_id: ref('target', 'task_id'), title: ref('input', 'title') },
      },
    ],
    output: (s) => s.results.update.task,
    timeoutMs: 7000,
  });
}

/** The chain every row runs: `update_task` is a plain write (not declared idempotent). */
export const chain = findAndUpdateWith('find_and_update', update);
/** The same chain with the update declared idempotent (durable table: what a plain write's start record costs). */
export const idempotentChain = findAndUpdateWith(
  'find_and_update_idempotent',
  defineTool({ ...update, idempotent: true }),
);

/** The task tools' fake implementations taking 5 ms each (the 10,000-chain load of run.ts and its profiles). */
export const slow = {
  list_tasks: async (_input?: { user_id: string }) => {
    await sleep(5);
    return { tasks: TASKS };
  },
  update_task: async (i: { task_id?: string; title?: string }) => {
    await sleep(5);
    return { task: { ...TASKS[3]!, title: i.title ?? '' } };
  },
};

/** What `schema.parse` is for zod: tool schemas are typed structurally (any zod copy or Standard Schema). */
export const parse = <T>(schema: Schema<T, any>, value: unknown): T => {
  const r = parseSchema(schema, value);
  if (!r.success) throw new Error(r.error.issues[0]?.message ?? 'invalid');
  return r.data;
};
