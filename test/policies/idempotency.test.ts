import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, findAndDelete, ref, taskTools, type ToolCall } from 'chainkit';
import { createMockInvoker, createTaskStore, fixtures } from 'chainkit/testing';

const alice = { context: { userId: fixtures.alice } };
const add = defineChain({
  name: 'add_one',
  input: z.object({ title: z.string() }),
  context: z.object({ userId: z.uuid() }),
  steps: [
    { id: 'add', tool: taskTools[1], input: { user_id: ref('context', 'userId'), title: ref('input', 'title') } },
  ],
});

describe('idempotency', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a write cancelled in its retry backoff (nothing in flight) is not held as unknown: a re-run calls it again', async () => {
    const write = defineTool({
      name: 'w',
      description: 'Write',
      input: z.object({}),
      output: z.object({ ok: z.boolean() }),
      effect: 'write',
    });
    let calls = 0;
    let refuse = true;
    const runner = createRunner({
      invoker: async () => {
        calls++;
        // Nothing was sent: retried as usual, after a backoff.
        if (refuse) throw Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:443'), { code: 'ECONNREFUSED' });
        return { ok: true };
      },
      tools: [write],
    });
    const chain = defineChain({ name: 'one_write', input: z.object({}), steps: [{ id: 's', tool: write, input: {} }] });
    const caller = new AbortController();
    runner.events.on('step:retry', () => setTimeout(() => caller.abort(), 20)); // cancelled during the backoff
    const first = await runner.run(chain, {}, { runId: 'order-1', signal: caller.signal });
    expect(first.status === 'failed' && first.error.category).toBe('cancelled');
    refuse = false;
    const again = await runner.run(chain, {}, { runId: 'order-1' });
    expect(again.status).toBe('completed'); // it failed at once with outcome_unknown for 60 s
    expect(calls).toBe(2);
    await runner.close();
  });

  it('a run retried with the same runId performs its write once', async () => {
    const store = createTaskStore({ users: fixtures.users });
    const runner = createRunner({ invoker: store.invoker });
    const first = await runner.run(add, { title: 'Pay rent' }, { ...alice, runId: 'req-42' });
    const again = await runner.run(add, { title: 'Pay rent' }, { ...alice, runId: 'req-42' });
    expect(first.status === 'completed' && again.status === 'completed' && again.output).toEqual(
      first.status === 'completed' && first.output,
    );
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
    const [a, b] = await Promise.all([
      runner.run(findAndDelete, { match: 'groceries' }, opts),
      runner.run(findAndDelete, { match: 'groceries' }, opts),
    ]);
    expect([a.status, b.status]).toEqual(['completed', 'completed']);
    expect(store.callCount.delete_task).toBe(1);
    expect(b.trace.steps.at(-1)!.status).toBe('cached');
    const later = await runner.run(findAndDelete, { match: 'groceries' }, opts); // reads run again
    expect(later.status === 'failed' && later.error.category).toBe('not_found');
  });

  it('does not keep failures: the next call with the key runs again', async () => {
    const invoker = createMockInvoker({
      add_task: [
        { error: Object.assign(new Error('bad'), { status: 400 }) },
        {
          ok: {
            task: {
              task_id: '3f0c8a5e-1b2d-4c6e-9f7a-8b9c0d1e2f3a',
              user_id: fixtures.alice,
              title: 'x',
              completed: false,
              priority: 'medium',
              created_at: 'now',
            },
          },
        },
      ],
    });
    const runner = createRunner({ invoker, tools: [...taskTools] });
    const input = { user_id: fixtures.alice, title: 'x' };
    expect((await runner.invoke('add_task', input, { idempotencyKey: 'k' })).status).toBe('failed');
    expect((await runner.invoke('add_task', input, { idempotencyKey: 'k' })).status).toBe('completed');
    const cached = await runner.invoke('add_task', input, { idempotencyKey: 'k' });
    expect(cached.trace.steps[0]!.status).toBe('cached');
    expect(invoker.calls).toHaveLength(2);
  });

  it("keeps a timed-out write's late answer as its outcome: a re-run with the same runId returns it (cached), with no second call", async () => {
    vi.useFakeTimers();
    const write = defineTool({
      name: 'write',
      description: 'w',
      input: z.object({}),
      output: z.object({ v: z.number() }),
      effect: 'write',
      timeoutMs: 100,
    });
    const chain = defineChain({
      name: 'write_once',
      input: z.object({}),
      steps: [{ id: 'w', tool: write, input: {}, confirm: false }],
      timeoutMs: 30_000,
    });
    let n = 0;
    // The first call answers after 500 ms, ignoring its signal; any second call would answer { v: 2 }.
    const invoker = async (_: ToolCall) => {
      const v = ++n;
      await new Promise((r) => setTimeout(r, v === 1 ? 500 : 10));
      return { v };
    };
    const runner = createRunner({ invoker, chains: [chain] });
    const first = runner.run(chain, {}, { runId: 'late-1' });
    await vi.advanceTimersByTimeAsync(100);
    const failed = await first;
    expect(failed.status === 'failed' && failed.error).toMatchObject({
      category: 'timeout',
      code: 'attempt_timeout',
      retryable: false,
    });

    // No answer yet: a re-run fails at once (no timer needed), saying how long and how to go on.
    let early: Awaited<ReturnType<typeof runner.run>> | undefined;
    void runner.run(chain, {}, { runId: 'late-1' }).then((r) => (early = r));
    await vi.advanceTimersByTimeAsync(0);
    expect(early?.status === 'failed' && early.error).toMatchObject({ category: 'timeout', retryable: false });
    expect(early?.status === 'failed' && early.error.message).toMatch(
      /outcome is unknown.*still waiting for its answer.*60 s after that call failed.*another runId or idempotencyKey/s,
    );

    await vi.advanceTimersByTimeAsync(400); // the late answer comes
    const again = runner.run(chain, {}, { runId: 'late-1' });
    await vi.advanceTimersByTimeAsync(0);
    const r = await again;
    expect(r.status === 'completed' && r.output).toEqual({ v: 1 });
    expect(r.trace.steps[0]!.status).toBe('cached');
    await vi.advanceTimersByTimeAsync(3_600_000); // kept like a result (24 h), not the 60 s of an unknown outcome
    const later = await runner.run(chain, {}, { runId: 'late-1' });
    expect(later.status === 'completed' && later.output).toEqual({ v: 1 });
    expect(n).toBe(1);
    await runner.close();
  });

  it('keeps the late answer of a write the run cut off at its deadline, and of an idempotent write answering while its retry runs', async () => {
    vi.useFakeTimers();
    const act = defineTool({
      name: 'act',
      description: 'a',
      input: z.object({}),
      output: z.object({ v: z.number() }),
      effect: 'destructive',
      timeoutMs: 5_000,
    });
    const cut = defineChain({
      name: 'cut',
      input: z.object({}),
      steps: [{ id: 'act', tool: act, input: {}, confirm: false }],
      timeoutMs: 1_000,
    });
    let answer: (v: { v: number }) => void = () => {};
    const invoker = createMockInvoker({
      act: [
        () =>
          new Promise((r) => {
            answer = r;
          }),
        { ok: { v: 2 } },
      ],
    });
    const runner = createRunner({ invoker, chains: [cut] });
    const first = runner.run(cut, {}, { runId: 'cut-1' });
    await vi.advanceTimersByTimeAsync(1_000);
    const cutOff = await first;
    expect(cutOff.status === 'failed' && cutOff.error.code).toBe('deadline_exceeded');
    answer({ v: 1 });
    await vi.advanceTimersByTimeAsync(0);
    const again = await runner.run(cut, {}, { runId: 'cut-1' });
    expect(again.status === 'completed' && again.output).toEqual({ v: 1 });
    expect(invoker.calls).toHaveLength(1);
    await runner.close();

    // An idempotent write: attempt 1 times out and is retried; attempt 2 hangs too, and attempt 1's answer
    // arrives while the call is still running. The call fails (both attempts timed out); the answer is kept.
    const idem = defineTool({
      name: 'idem',
      description: 'i',
      input: z.object({}),
      output: z.object({ v: z.number() }),
      effect: 'write',
      idempotent: true,
      timeoutMs: 100,
    });
    let first1: (v: { v: number }) => void = () => {};
    const hangs = createMockInvoker({
      idem: [
        () =>
          new Promise((r) => {
            first1 = r;
          }),
        () => new Promise(() => {}),
        { ok: { v: 3 } },
      ],
    });
    const other = createRunner({
      invoker: hangs,
      tools: [idem],
      retry: { timeout: { retries: 1, minDelayMs: 0, factor: 1, maxDelayMs: 0 } },
    });
    const call = other.invoke('idem', {}, { idempotencyKey: 'i1', timeoutMs: 10_000 });
    await vi.advanceTimersByTimeAsync(150); // attempt 2 (timeout doubled: 200 ms) is running
    expect(hangs.calls).toHaveLength(2);
    first1({ v: 1 });
    await vi.advanceTimersByTimeAsync(200);
    expect((await call).status).toBe('failed');
    const rerun = await other.invoke('idem', {}, { idempotencyKey: 'i1', timeoutMs: 10_000 });
    expect(rerun.status === 'completed' && rerun.output).toEqual({ v: 1 });
    expect(rerun.trace.steps[0]!.status).toBe('cached');
    expect(hangs.calls).toHaveLength(2);
    await other.close();
  });

  it('an explicit key is per tool and per caller: the same key from another user or for another tool runs and reveals nothing', async () => {
    vi.useFakeTimers();
    const by = z.object({ by: z.string(), n: z.number() });
    const transfer = defineTool({
      name: 'transfer',
      description: 't',
      input: z.object({ n: z.number() }),
      output: by,
      effect: 'write',
    });
    const close = defineTool({
      name: 'close_account',
      description: 'c',
      input: z.object({ n: z.number() }),
      output: by,
      effect: 'destructive',
    });
    const who = ({ n }: { n: number }, call: ToolCall) => ({ by: String(call.context.userId), n });
    const invoker = createMockInvoker({ transfer: who, close_account: who });
    const runner = createRunner({ invoker, tools: [transfer, close] });
    const as = (userId: string) => ({ idempotencyKey: 'Idempotency-Key-1', context: { userId } });
    const alice = await runner.invoke('transfer', { n: 1 }, as('alice'));
    const bob = await runner.invoke('transfer', { n: 2 }, as('bob'));
    const closed = await runner.invoke('close_account', { n: 3 }, as('alice'));
    const aliceAgain = await runner.invoke('transfer', { n: 1 }, as('alice'));
    expect([alice, bob, closed, aliceAgain].map((r) => r.status === 'completed' && r.output)).toEqual([
      { by: 'alice', n: 1 },
      { by: 'bob', n: 2 },
      { by: 'alice', n: 3 },
      { by: 'alice', n: 1 },
    ]);
    expect([alice, bob, closed, aliceAgain].map((r) => r.trace.steps[0]!.status)).toEqual([
      'success',
      'success',
      'success',
      'cached',
    ]);
    expect(invoker.calls).toHaveLength(3);
    await runner.close();
  });

  it('a duplicate waiting for the call in flight ends at its own deadline, or at once on cancel, and leaves no timer', async () => {
    vi.useFakeTimers();
    const slow = defineTool({
      name: 'slow_write',
      description: 'w',
      input: z.object({}),
      output: z.object({ v: z.number() }),
      timeoutMs: 30_000,
    });
    let finish: (v: { v: number }) => void = () => {};
    const invoker = createMockInvoker({
      slow_write: () =>
        new Promise((r) => {
          finish = r;
        }),
    });
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
    expect(settled?.status === 'failed' && settled.error).toMatchObject({
      category: 'timeout',
      code: 'deadline_exceeded',
    });
    expect(vi.getTimerCount()).toBe(timers); // the waiter left nothing behind

    const controller = new AbortController();
    const cancelled = runner.invoke(
      'slow_write',
      {},
      { idempotencyKey: 'same', timeoutMs: 60_000, signal: controller.signal },
    );
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
