// The task domain's tools: the reference use case of chainkit (list, add, update, complete, delete).
import { sha256, toBase64Url } from '../util/sha256.js';
import { z } from 'zod';
import { defineTool } from '../define/tool.js';
import { codeClassifier } from '../errors/classify.js';

/**
 * A task as the task tools return it.
 *
 * @example
 * ```ts
 * type Task = z.infer<typeof Task>; // { task_id, title, description?, completed, priority, … }
 * ```
 */
export const Task = z.object({
  task_id: z.uuid(),
  user_id: z.uuid(),
  title: z.string(),
  /** Optional: backends without descriptions stay valid. */
  description: z.string().optional(),
  completed: z.boolean(),
  priority: z.enum(['low', 'medium', 'high']),
  created_at: z.string(),
});
export type Task = z.infer<typeof Task>;

/** What a user is told when a task does not exist (a backend's unknown id, or a match no task has). */
export const TASK_NOT_FOUND_MESSAGE = "I couldn't find that task. Would you like me to list your tasks?";

/**
 * The task service's own error codes, registered on every task tool through `classifiers` — the
 * hook any domain uses for its codes. Give it to your own tools that call a task backend.
 * `invalid_task_id` and `task_not_found` are `not_found` (the user is offered the list of tasks);
 * `task_already_completed` is `conflict` ("That task is already completed.", nothing to retry).
 *
 * @example
 * ```ts
 * const archiveTask = defineTool({
 *   name: 'archive_task',
 *   description: 'Archive a task',
 *   input,
 *   output,
 *   classifiers: [taskErrors],
 * });
 * ```
 */
export const taskErrors = codeClassifier({
  invalid_task_id: { category: 'not_found', userMessage: TASK_NOT_FOUND_MESSAGE },
  task_not_found: { category: 'not_found', userMessage: TASK_NOT_FOUND_MESSAGE },
  task_already_completed: { category: 'conflict', userMessage: 'That task is already completed.' },
});
const classifiers = [taskErrors];

const minute = 60_000;
const hour = 60 * minute;
// The reference's budgets: a read may take 3 s, a write 2 s (per attempt).
const READ_TIMEOUT_MS = 3000;
const WRITE_TIMEOUT_MS = 2000;
const title = z.string().min(1).max(200);
const description = z.string().max(2000);
const priority = z.enum(['low', 'medium', 'high']);

/** Text as a person would compare it: trimmed, inner whitespace collapsed, case and Unicode forms folded. */
const normal = (text: string | undefined): string =>
  (text ?? '').normalize('NFKC').trim().replace(/\s+/g, ' ').toLowerCase();

/**
 * The content key of `add_task`: the same user adding the same title (whitespace and case aside),
 * priority and description. Hashed so a long description never makes a long store key.
 */
function sameTask(input: { user_id: string; title: string; priority?: string; description?: string }): string {
  const content = `${normal(input.title)}\u0000${input.priority ?? 'medium'}\u0000${normal(input.description)}`;
  return `add_task:${input.user_id}:${toBase64Url(sha256(content)).slice(0, 32)}`;
}

/**
 * Lists a user's tasks, optionally by status.
 *
 * @example
 * ```ts
 * const r = await runner.invoke('list_tasks', { user_id: userId, status: 'pending' });
 * ```
 */
export const listTasks = defineTool({
  name: 'list_tasks',
  description: "List a user's tasks, optionally only pending or completed ones",
  input: z.object({ user_id: z.uuid(), status: z.enum(['all', 'pending', 'completed']).default('all') }),
  output: z.object({ tasks: z.array(Task) }),
  effect: 'read',
  timeoutMs: READ_TIMEOUT_MS,
  expectedDurationMs: 150,
  rateLimit: { limit: 500, intervalMs: minute, per: 'user' },
  classifiers,
  suggests: [
    { tool: 'update_task', reason: 'Change a task you found' },
    { tool: 'complete_task', reason: 'Mark a task you found as done' },
  ],
});

/**
 * Adds a task. The same user adding an identical task (title — whitespace and case aside —,
 * priority and description) within an hour gets the first task back (`cached`), not a second one;
 * an explicit `idempotencyKey` on the call or step decides instead.
 *
 * @example
 * ```ts
 * await runner.invoke('add_task', { user_id: userId, title: 'Buy stamps', priority: 'low' });
 * ```
 */
export const addTask = defineTool({
  name: 'add_task',
  description:
    'Add a task for a user ' +
    '(an identical task added by the same user within the hour is returned instead of duplicated)',
  input: z.object({
    user_id: z.uuid(),
    title,
    priority: priority.default('medium'),
    description: description.optional(),
  }),
  output: z.object({ task: Task }),
  effect: 'write',
  idempotencyKey: sameTask,
  idempotencyTtlMs: hour,
  timeoutMs: WRITE_TIMEOUT_MS,
  expectedDurationMs: 200,
  rateLimit: { limit: 100, intervalMs: minute, per: 'user' },
  classifiers,
  suggests: [{ tool: 'list_tasks', reason: 'See the updated list' }],
});

/**
 * Updates a task's title, priority, description or completion.
 *
 * @example
 * ```ts
 * await runner.invoke('update_task', { user_id: userId, task_id: taskId, title: 'Oat milk' });
 * ```
 */
export const updateTask = defineTool({
  name: 'update_task',
  description: "Update a task's title, priority, description or completion",
  input: z.object({
    user_id: z.uuid(),
    task_id: z.uuid(),
    title: title.optional(),
    priority: priority.optional(),
    description: description.optional(),
    completed: z.boolean().optional(),
  }),
  output: z.object({ task: Task }),
  effect: 'write',
  timeoutMs: WRITE_TIMEOUT_MS,
  expectedDurationMs: 200,
  rateLimit: { limit: 100, intervalMs: minute, per: 'user' },
  classifiers,
  suggests: [{ tool: 'list_tasks', reason: 'Check the change' }],
});

/**
 * Marks a task as completed.
 *
 * @example
 * ```ts
 * await runner.invoke('complete_task', { user_id: userId, task_id: taskId });
 * ```
 */
export const completeTask = defineTool({
  name: 'complete_task',
  description: 'Mark a task as completed',
  input: z.object({ user_id: z.uuid(), task_id: z.uuid() }),
  output: z.object({ task: Task }),
  effect: 'write',
  timeoutMs: WRITE_TIMEOUT_MS,
  expectedDurationMs: 200,
  rateLimit: { limit: 100, intervalMs: minute, per: 'user' },
  classifiers,
  suggests: [{ tool: 'list_tasks', reason: 'See what is still pending' }],
});

/**
 * Deletes a task (destructive: chains must confirm first).
 *
 * @example
 * ```ts
 * await runner.invoke('delete_task', { user_id: userId, task_id: taskId }, { idempotencyKey: requestId });
 * ```
 */
export const deleteTask = defineTool({
  name: 'delete_task',
  description: 'Delete a task permanently',
  input: z.object({ user_id: z.uuid(), task_id: z.uuid() }),
  output: z.object({ task_id: z.uuid(), title: z.string(), deleted: z.literal(true) }),
  effect: 'destructive',
  timeoutMs: WRITE_TIMEOUT_MS,
  expectedDurationMs: 200,
  rateLimit: { limit: 50, intervalMs: minute, per: 'user' },
  classifiers,
  suggests: [{ tool: 'list_tasks', reason: 'See the remaining tasks' }],
});

/**
 * All five task tools.
 *
 * @example
 * ```ts
 * const runner = createRunner({ invoker: createTaskStore().invoker, tools: [...taskTools] });
 * ```
 */
export const taskTools: readonly [
  typeof listTasks,
  typeof addTask,
  typeof updateTask,
  typeof completeTask,
  typeof deleteTask,
] = [listTasks, addTask, updateTask, completeTask, deleteTask];
