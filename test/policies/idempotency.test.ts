import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, findAndDelete, ref, taskTools, type ToolCall } from 'chainkit';
import { createMockInvoker, createTaskStore, fixtures } from 'chainkit/testing';

const alice = { context: { userId: fixtures.alice } };
const add = defineChain({
  name: 'add_one', input: z.object({ title: z.string() }), context: z.object({ userId: z.uuid() }),
  steps: [{ id: 'add', tool: taskTools[1], input: { user_id: ref('context', 'userId'), title: ref('input', 'title') } }],
});

describe('idempotency', () => {
  afterEach(() => { vi.useRealTimers(); });

  it('a run retried with the same runId performs its write once', async () => {
    const store = createTaskStore({ users: fixtures.users });
    const runner = createRunner({ invoker: store.invoker });
    const first = await runner.run(add, { title: 'Pay rent' }, { ...alice, runId: 'req-42' });
    const again = await runner.run(add, { title: 'Pay rent' }, { ...alice, runId: 'req-42' });
    expect(first.status === 'completed' && again.status === 'completed' && again.output).toEqual(first.status === 'completed' && first.output);
    expect(again.trace.steps[0]!.status).toBe('cached');
    expect(store.callCount.add_task).toBe(1);
    expect(store.tasks(fixtures.alice).filter((t) => t.title === 'Pay rent')).toHaveLength(1);
    await runner.run(add, { title: 'Pay the rent' }, { ...alice, runId: 'req-43' });
    expect(store.callCount.add_task).toBe(2); // another request is another write (add_task also dedupes identical tasks)
  });

  it('findAndDelete run twice concurrently with the same runId deletes once', async () => {
    const store = createTaskStore({ users: fixtures.users });
    const runner = createRunner({ invoker: store.invoker });
    const opts = { ...alice, runId: 'req-7', confirm: () => true };
    const [a, b] = await Promise.all([runner.run(findAndDelete, { match: 'groceries' }, opts), runner.run(findAndDelete, { match: 'groceries' }, opts)]);
    expect([a.status, b.status]).toEqual(['completed', 'completed']);
    expect(store.callCount.delete_task).toBe(1);
    expect(b.trace.steps.at(-1)!.status).toBe('cached');
    const later = await runner.run(findAndDelete, { match: 'groceries' }, opts); // reads run again
    expect(later.status === 'failed' && later.error.category).toBe('not_found');
  });

  it('does not keep failures: the next call with the key runs again', async () => {
    const invoker = createMockInvoker({ add_task: [{ error: Object.assign(new Error('bad'), { status: 400 }) }, { ok: { task: { task_id: '3f0c8a5e-1b2d-4c6e-9f7a-8b9c0d1e2f3a', user_id: fixtures.alice, title: 'x', completed: false, priority: 'medium', created_at: 'now' } } }] });
    const runner = createRunner({ invoker, tools: [...taskTools] });
    const input = { user_id: fixtures.alice, title: 'x' };
    expect((await runner.invoke('add_task', input, { idempotencyKey: 'k' })).status).toBe('failed');
    expect((await runner.invoke('add_task', input, { idempotencyKey: 'k' })).status).toBe('completed');
    const cached = await runner.invoke('add_task', input, { idempotencyKey: 'k' });
    expect(cached.trace.steps[0]!.status).toBe('cached');
    expect(invoker.calls).toHaveLength(2);
  });

  it('ignores and never keeps a result that arrives after its timeout', async () => {
    vi.useFakeTimers();
    const write = defineTool({ name: 'write', description: 'w', input: z.object({}), output: z.object({ v: z.number() }), timeoutMs: 100, retry: false });
    let n = 0;
    const invoker = async (_: ToolCall) => { const v = ++n; await new Promise((r) => setTimeout(r, v === 1 ? 500 : 10)); return { v }; };
    const runner = createRunner({ invoker, tools: [write], retry: { timeout: { retries: 0, minDelayMs: 0, factor: 1, maxDelayMs: 0 } } });
    const first = runner.invoke('write', {}, { idempotencyKey: 'w1' });
    await vi.advanceTimersByTimeAsync(600);
    expect((await first).status).toBe('failed');
    await vi.advanceTimersByTimeAsync(60_000); // its outcome was unknown: the key stays claimed for the pending TTL
    const second = runner.invoke('write', {}, { idempotencyKey: 'w1' });
    await vi.advanceTimersByTimeAsync(10);
    const r = await second;
    expect(r.status === 'completed' && r.output).toEqual({ v: 2 });
  });

  it('a duplicate waiting for the call in flight ends at its own deadline, or at once on cancel, and leaves no timer', async () => {
    vi.useFakeTimers();
    const slow = defineTool({ name: 'slow_write', description: 'w', input: z.object({}), output: z.object({ v: z.number() }), timeoutMs: 30_000 });
    let finish: (v: { v: number }) => void = () => {};
    const invoker = createMockInvoker({ slow_write: () => new Promise((r) => { finish = r; }) });
    const runner = createRunner({ invoker, tools: [slow] });
    const first = runner.invoke('slow_write', {}, { idempotencyKey: 'same', timeoutMs: 60_000 });
    await vi.advanceTimersByTimeAsync(0);
    const timers = vi.getTimerCount();
    const waiting = runner.invoke('slow_write', {}, { idempotencyKey: 'same', timeoutMs: 1000 });
    let settled: Awaited<typeof waiting> | undefined;
    void waiting.then((r) => (settled = r));
    await vi.advanceTimersByTimeAsync(999);
    expect(settled).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(settled?.status === 'failed' && settled.error).toMatchObject({ category: 'timeout', code: 'deadline_exceeded' });
    expect(vi.getTimerCount()).toBe(timers); // the waiter left nothing behind

    const controller = new AbortController();
    const cancelled = runner.invoke('slow_write', {}, { idempotencyKey: 'same', timeoutMs: 60_000, signal: controller.signal });
    await vi.advanceTimersByTimeAsync(10);
    controller.abort();
    await vi.advanceTimersByTimeAsync(0);
    const c = await cancelled;
    expect(c.status === 'failed' && c.error.category).toBe('cancelled');
    expect(vi.getTimerCount()).toBe(timers);

    finish({ v: 1 }); // the call in flight is unaffected by its waiters giving up
    const r = await first;
    expect(r.status === 'completed' && r.output).toEqual({ v: 1 });
    expect(invoker.calls).toHaveLength(1);
    await runner.close();
  });
});
