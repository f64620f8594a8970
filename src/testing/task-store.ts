// An in-memory task backend implementing the five task tools, with realistic in-band errors.
import type { ToolCall, ToolInvoker } from '../invokers/types.js';
import type { Task } from '../tasks/tools.js';

/** A seeded task. */
export interface SeedTask {
  title: string;
  description?: string;
  completed?: boolean;
  priority?: Task['priority'];
}

/** Options of {@link createTaskStore}. */
export interface TaskStoreOptions {
  /** Tasks per user id (uuid). */
  users?: Record<string, SeedTask[]>;
  /** Per-user, per-tool limit; past it a call returns `rate_limit_exceeded` with `retry_after`. Default: none. */
  rateLimit?: { limit: number; intervalMs: number };
  /** Clock for created_at and rate windows. Default `Date.now`. */
  now?: () => number;
}

/** An in-band error result as the task backend returns it. */
export interface InBandError {
  status: 'error';
  error: string;
  message?: string;
  retry_after?: number;
}

/** The in-memory task backend. */
export interface TaskStore {
  /** Calls the five task tools. */
  readonly invoker: ToolInvoker;
  /** A user's tasks (copies), oldest first. */
  tasks(userId: string): Task[];
  /** Restores the seed (same task ids) and clears injected failures and rate windows. */
  reset(): void;
  /** Makes the next `times` calls of `tool` fail with this in-band error (or thrown value). */
  failNext(tool: string, failure: InBandError | { throw: unknown }, times?: number): void;
  /** How many calls each tool received that reached the backend (failed or not). */
  readonly callCount: Readonly<Record<string, number>>;
}

type Input = Record<string, any>;

/**
 * Creates an in-memory task backend. Another user's task answers `permission_denied`, an unknown id
 * `invalid_task_id`, as a real service would.
 *
 * @example
 * ```ts
 * const store = createTaskStore({
 *   users: { [userId]: [{ title: 'Buy groceries' }, { title: 'Call mom', completed: true }] },
 * });
 * const runner = createRunner({ invoker: store.invoker, tools: [...taskTools] });
 * ```
 */
export function createTaskStore(options: TaskStoreOptions = {}): TaskStore {
  const now = options.now ?? Date.now;
  const seed: Task[] = [];
  let clock = Date.UTC(2026, 0, 1);
  for (const [userId, list] of Object.entries(options.users ?? {})) {
    for (const t of list) {
      seed.push({
        task_id: crypto.randomUUID(),
        user_id: userId,
        title: t.title,
        ...(t.description !== undefined && { description: t.description }),
        completed: t.completed ?? false,
        priority: t.priority ?? 'medium',
        created_at: new Date((clock += 60_000)).toISOString(),
      });
    }
  }
  const byId = new Map<string, Task>();
  const failures = new Map<string, { failure: InBandError | { throw: unknown }; times: number }[]>();
  const windows = new Map<string, { start: number; count: number }>();
  const callCount: Record<string, number> = {};

  const reset = (): void => {
    byId.clear();
    for (const t of seed) byId.set(t.task_id, { ...t });
    failures.clear();
    windows.clear();
    for (const k of Object.keys(callCount)) delete callCount[k];
  };
  reset();

  const err = (error: string, message: string): InBandError => ({ status: 'error', error, message });
  const owned = (input: Input): Task | InBandError => {
    const task = byId.get(input.task_id);
    if (!task) return err('invalid_task_id', `No task with id ${input.task_id}.`);
    if (task.user_id !== input.user_id) return err('permission_denied', 'That task belongs to another user.');
    return task;
  };
  const isError = (v: Task | InBandError): v is InBandError => (v as InBandError).status === 'error';

  // Looked up by the called tool's name: a Map, so `constructor` or `toString` is just an unknown tool.
  const handlers = new Map<string, (input: Input) => unknown>(
    Object.entries({
      list_tasks: (input) => ({
        tasks: [...byId.values()]
          .filter(
            (t) =>
              t.user_id === input.user_id &&
              (input.status === 'all' || input.status === undefined || (input.status === 'completed') === t.completed),
          )
          .map((t) => ({ ...t })),
      }),
      add_task: (input) => {
        const task: Task = {
          task_id: crypto.randomUUID(),
          user_id: input.user_id,
          title: input.title,
          ...(input.description !== undefined && { description: input.description }),
          completed: false,
          priority: input.priority ?? 'medium',
          created_at: new Date(now()).toISOString(),
        };
        byId.set(task.task_id, task);
        return { task: { ...task } };
      },
      update_task: (input) => {
        const task = owned(input);
        if (isError(task)) return task;
        if (input.title !== undefined) task.title = input.title;
        if (input.priority !== undefined) task.priority = input.priority;
        if (input.description !== undefined) task.description = input.description;
        if (input.completed !== undefined) task.completed = input.completed;
        return { task: { ...task } };
      },
      complete_task: (input) => {
        const task = owned(input);
        if (isError(task)) return task;
        task.completed = true;
        return { task: { ...task } };
      },
      delete_task: (input) => {
        const task = owned(input);
        if (isError(task)) return task;
        byId.delete(task.task_id);
        return { task_id: task.task_id, title: task.title, deleted: true };
      },
    }),
  );

  const limited = (tool: string, userId: string): InBandError | undefined => {
    const rl = options.rateLimit;
    if (!rl) return undefined;
    const key = `${tool}:${userId}`;
    const t = now();
    let w = windows.get(key);
    if (!w || t - w.start >= rl.intervalMs) windows.set(key, (w = { start: t, count: 0 }));
    if (++w.count <= rl.limit) return undefined;
    return {
      ...err('rate_limit_exceeded', `Rate limit of ${rl.limit} per ${rl.intervalMs} ms exceeded.`),
      retry_after: Math.ceil((w.start + rl.intervalMs - t) / 1000),
    };
  };

  const invoker: ToolInvoker = async (call: ToolCall) => {
    const handler = handlers.get(call.tool);
    if (!handler) throw Object.assign(new Error(`The task store has no tool '${call.tool}'.`), { status: 404 });
    callCount[call.tool] = (callCount[call.tool] ?? 0) + 1;
    const queue = failures.get(call.tool);
    const injected = queue?.[0];
    if (injected) {
      if (--injected.times <= 0) queue.shift();
      if ('throw' in injected.failure) throw injected.failure.throw;
      return { ...injected.failure };
    }
    const input = call.input as Input;
    return limited(call.tool, String(input.user_id)) ?? handler(input);
  };

  return {
    invoker,
    tasks: (userId) => [...byId.values()].filter((t) => t.user_id === userId).map((t) => ({ ...t })),
    reset,
    failNext(tool, failure, times = 1) {
      if (!handlers.has(tool)) throw new TypeError(`Unknown task tool '${tool}'.`);
      if (!(Number.isInteger(times) && times > 0)) throw new TypeError('Expected `times` to be a positive integer.');
      const queue = failures.get(tool) ?? [];
      queue.push({ failure, times });
      failures.set(tool, queue);
    },
    callCount,
  };
}
