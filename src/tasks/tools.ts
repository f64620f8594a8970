// The task domain's tools: the reference use case of chainkit (list, add, update, complete, delete).
import { z } from 'zod';
import { defineTool } from '../define/tool.js';

/**
 * A task as the task tools return it.
 *
 * @example
 * ```ts
 * type Task = z.infer<typeof Task>; // { task_id, title, completed, priority, … }
 * ```
 */
export const Task = z.object({
  task_id: z.string().uuid(),
  user_id: z.string().uuid(),
  title: z.string(),
  completed: z.boolean(),
  priority: z.enum(['low', 'medium', 'high']),
  created_at: z.string(),
});
export type Task = z.infer<typeof Task>;

const minute = 60_000;

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
  input: z.object({ user_id: z.string().uuid(), status: z.enum(['all', 'pending', 'completed']).default('all') }),
  output: z.object({ tasks: z.array(Task) }),
  effect: 'read',
  timeoutMs: 3000,
  expectedDurationMs: 150,
  rateLimit: { limit: 500, intervalMs: minute, per: 'user' },
  suggests: [
    { tool: 'update_task', reason: 'Change a task you found' },
    { tool: 'complete_task', reason: 'Mark a task you found as done' },
  ],
});

/**
 * Adds a task.
 *
 * @example
 * ```ts
 * await runner.invoke('add_task', { user_id: userId, title: 'Buy stamps', priority: 'low' });
 * ```
 */
export const addTask = defineTool({
  name: 'add_task',
  description: 'Add a task for a user',
  input: z.object({ user_id: z.string().uuid(), title: z.string().min(1).max(200), priority: z.enum(['low', 'medium', 'high']).default('medium') }),
  output: z.object({ task: Task }),
  effect: 'write',
  timeoutMs: 3000,
  expectedDurationMs: 200,
  rateLimit: { limit: 100, intervalMs: minute, per: 'user' },
  suggests: [{ tool: 'list_tasks', reason: 'See the updated list' }],
});

/**
 * Updates a task's title, priority or completion.
 *
 * @example
 * ```ts
 * await runner.invoke('update_task', { user_id: userId, task_id: taskId, title: 'Oat milk' });
 * ```
 */
export const updateTask = defineTool({
  name: 'update_task',
  description: "Update a task's title, priority or completion",
  input: z.object({
    user_id: z.string().uuid(),
    task_id: z.string().uuid(),
    title: z.string().min(1).max(200).optional(),
    priority: z.enum(['low', 'medium', 'high']).optional(),
    completed: z.boolean().optional(),
  }),
  output: z.object({ task: Task }),
  effect: 'write',
  timeoutMs: 3000,
  expectedDurationMs: 200,
  rateLimit: { limit: 100, intervalMs: minute, per: 'user' },
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
  input: z.object({ user_id: z.string().uuid(), task_id: z.string().uuid() }),
  output: z.object({ task: Task }),
  effect: 'write',
  timeoutMs: 3000,
  expectedDurationMs: 200,
  rateLimit: { limit: 100, intervalMs: minute, per: 'user' },
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
  input: z.object({ user_id: z.string().uuid(), task_id: z.string().uuid() }),
  output: z.object({ task_id: z.string().uuid(), title: z.string(), deleted: z.literal(true) }),
  effect: 'destructive',
  timeoutMs: 3000,
  expectedDurationMs: 200,
  rateLimit: { limit: 50, intervalMs: minute, per: 'user' },
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
export const taskTools = [listTasks, addTask, updateTask, completeTask, deleteTask] as const;
