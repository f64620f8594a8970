import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  createRunner,
  findAndComplete,
  findAndDelete,
  findAndUpdate,
  taskChains,
  taskSummary,
  taskTools,
  toMermaid,
} from 'chainkit';
import { createMockInvoker, createTaskStore, fixtures } from 'chainkit/testing';

const alice = { context: { userId: fixtures.alice } };

describe('built-in task chains on the in-memory store', () => {
  const store = createTaskStore({ users: fixtures.users });
  const runner = createRunner({ invoker: store.invoker, tools: [...taskTools], chains: [...taskChains] });
  beforeEach(() => store.reset());

  it('findAndUpdate renames the one matching task', async () => {
    const r = await runner.run(findAndUpdate, { match: 'DENTIST', title: 'Dentist at 3pm' }, alice);
    expect(r.status === 'completed' && r.output.title).toBe('Dentist at 3pm');
    expect(store.tasks(fixtures.alice).some((t) => t.title === 'Dentist at 3pm')).toBe(true);
  });

  it('findAndUpdate asks which one when several match', async () => {
    const r = await runner.run(findAndUpdate, { match: 'buy', title: 'x' }, alice);
    expect(r.status === 'failed' && r.error.category).toBe('ambiguous');
    expect(r.status === 'failed' && (r.error.candidates as { title: string }[]).map((c) => c.title)).toEqual([
      'Buy groceries',
      'Buy milk',
    ]);
  });

  it('findAndComplete completes a pending task, and says a done one was already completed', async () => {
    const r = await runner.run(findAndComplete, { match: 'milk' }, alice);
    expect(r.status === 'completed' && r.output).toMatchObject({
      title: 'Buy milk',
      completed: true,
      already_completed: false,
    });
    const again = await runner.run(findAndComplete, { match: 'milk' }, alice);
    expect(again.status === 'completed' && again.output).toMatchObject({
      title: 'Buy milk',
      completed: true,
      already_completed: true,
    });
    expect(store.callCount.complete_task).toBe(1);
  });

  it('findAndDelete needs confirmation and deletes once', async () => {
    const r = await runner.run(findAndDelete, { match: 'read' }, alice);
    if (r.status !== 'awaiting_confirmation') throw new Error(r.status);
    const done = await runner.resume<{ title: string }>(r.resumeToken, { approved: true }, alice);
    expect(done.status === 'completed' && done.output.title).toBe('Read a book');
    expect(store.tasks(fixtures.alice)).toHaveLength(4);
  });

  it('taskSummary counts by status and priority', async () => {
    const r = await runner.run(taskSummary, {}, alice);
    expect(r.status === 'completed' && r.output).toEqual({
      total: 5,
      completed: 2,
      pending: 3,
      completion_rate: 40,
      by_priority: { low: 1, medium: 2, high: 2 },
      by_status: { completed: 2, pending: 3 },
    });
    const empty = await runner.run(taskSummary, {}, { context: { userId: '11111111-1111-4111-8111-111111111111' } });
    expect(empty.status === 'completed' && empty.output.completion_rate).toBe(0);
  });

  it("cannot touch another user's task: the store answers permission_denied", async () => {
    const bobsTask = store.tasks(fixtures.bob)[0]!;
    const r = await runner.invoke('complete_task', { user_id: fixtures.alice, task_id: bobsTask.task_id }, alice);
    expect(r.status === 'failed' && r.error).toMatchObject({
      category: 'permission_denied',
      code: 'permission_denied',
      attempts: 1,
    });
    const missing = await runner.invoke(
      'complete_task',
      { user_id: fixtures.alice, task_id: '99999999-9999-4999-8999-999999999999' },
      alice,
    );
    expect(missing.status === 'failed' && missing.error).toMatchObject({
      category: 'not_found',
      code: 'invalid_task_id',
    });
  });

  it('rejects an empty match with a question for the user', async () => {
    const r = await runner.run(findAndDelete, { match: '   ' }, alice);
    expect(r.status === 'failed' && r.error).toMatchObject({
      code: 'precondition_failed',
      userMessage: 'Which task do you mean?',
    });
  });

  it('draws chains as Mermaid', () => {
    const m = toMermaid(findAndDelete);
    expect(m).toContain('flowchart TD');
    expect(m).toContain('find --> target');
    expect(m).toContain('target --> delete');
    expect(m).toContain('⚠ confirm');
    expect(m).not.toContain('find --> delete'); // implied through target
  });
});

describe('taskSummary concurrency', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('overlaps the two list_tasks calls', async () => {
    const invoker = createMockInvoker({ list_tasks: { ok: { tasks: [] }, delayMs: 100 } });
    const done = createRunner({ invoker }).run(taskSummary, {}, alice);
    await vi.advanceTimersByTimeAsync(100);
    const r = await done;
    expect(r.status).toBe('completed');
    expect(invoker.calls.map((c) => c.at - invoker.calls[0]!.at)).toEqual([0, 0]);
    expect(r.trace.totalLatencyMs).toBe(100);
  });
});

describe('the task store', () => {
  it('injects failures and rate limits, and resets to the same seed', async () => {
    let t = 0;
    const store = createTaskStore({ users: fixtures.users, rateLimit: { limit: 2, intervalMs: 60_000 }, now: () => t });
    const ids = store.tasks(fixtures.alice).map((x) => x.task_id);
    const call = (tool: string, input: unknown) =>
      store.invoker({
        tool,
        input,
        attempt: 1,
        signal: new AbortController().signal,
        runId: 'r',
        traceId: 't',
        context: {},
        progress: () => undefined,
      });
    store.failNext('list_tasks', { status: 'error', error: 'service_unavailable' });
    expect(await call('list_tasks', { user_id: fixtures.alice, status: 'all' })).toMatchObject({
      error: 'service_unavailable',
    });
    expect(await call('list_tasks', { user_id: fixtures.alice, status: 'all' })).toHaveProperty('tasks');
    expect(await call('list_tasks', { user_id: fixtures.alice, status: 'all' })).toHaveProperty('tasks');
    t = 1000;
    expect(await call('list_tasks', { user_id: fixtures.alice, status: 'all' })).toMatchObject({
      error: 'rate_limit_exceeded',
      retry_after: 59,
    });
    t = 60_000;
    expect(await call('list_tasks', { user_id: fixtures.alice, status: 'all' })).toHaveProperty('tasks');
    await call('delete_task', { user_id: fixtures.alice, task_id: ids[0] });
    store.failNext('add_task', { throw: new Error('socket hang up') });
    await expect(call('add_task', { user_id: fixtures.alice, title: 'x' })).rejects.toThrow('socket hang up');
    store.reset();
    expect(store.tasks(fixtures.alice).map((x) => x.task_id)).toEqual(ids);
  });
});
