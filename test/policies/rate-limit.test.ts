import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createRunner, defineTool, memoryLimiterStore, taskTools, type ToolCall } from 'chainkit';
import { createTaskStore, fixtures } from 'chainkit/testing';
import { AbortScope } from '../../src/policies/abort.js';

describe('rate limits', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('lets 100 add_task calls of one user start in the first minute, the rest in the next; another user is not slowed', async () => {
    const store = createTaskStore({ users: fixtures.users });
    const starts: { user: string; at: number }[] = [];
    const t0 = Date.now();
    const runner = createRunner({
      invoker: (call: ToolCall) => {
        starts.push({ user: String(call.context.userId), at: Date.now() - t0 });
        return store.invoker(call);
      },
      tools: [...taskTools],
    });
    const add = (userId: string, i: number) =>
      runner.invoke('add_task', { user_id: userId, title: `t${i}` }, { context: { userId }, timeoutMs: 180_000 });
    const alice = Array.from({ length: 120 }, (_, i) => add(fixtures.alice, i));
    await vi.advanceTimersByTimeAsync(0);
    const bob = add(fixtures.bob, 0);
    await vi.advanceTimersByTimeAsync(0);
    expect(starts.filter((s) => s.user === fixtures.alice && s.at < 60_000)).toHaveLength(100);
    expect(starts.filter((s) => s.user === fixtures.bob).map((s) => s.at)).toEqual([0]);
    expect((await bob).status).toBe('completed');
    await vi.advanceTimersByTimeAsync(59_999);
    expect(starts.filter((s) => s.user === fixtures.alice)).toHaveLength(100);
    await vi.advanceTimersByTimeAsync(1);
    const results = await Promise.all(alice);
    expect(results.every((r) => r.status === 'completed')).toBe(true);
    expect(starts.filter((s) => s.user === fixtures.alice && s.at === 60_000)).toHaveLength(20);
    await runner.close();
  });

  const limited = (rateLimit: Parameters<typeof defineTool>[0]['rateLimit']) =>
    defineTool({
      name: 'limited',
      description: 'l',
      input: z.object({ i: z.number() }),
      output: z.object({ i: z.number() }),
      effect: 'read',
      rateLimit,
    });

  it('fails at once with queue_full when maxQueue waiting calls are already queued', async () => {
    const runner = createRunner({
      invoker: async (c) => c.input,
      tools: [limited({ limit: 2, intervalMs: 1000, per: 'global', maxQueue: 1 })],
    });
    const calls = [0, 1, 2, 3].map((i) => runner.invoke('limited', { i }));
    await vi.advanceTimersByTimeAsync(0);
    const last = await calls[3]!;
    expect(last.status === 'failed' && last.error).toMatchObject({
      category: 'queue_full',
      code: 'queue_full',
      retryable: false,
    });
    await vi.advanceTimersByTimeAsync(1000);
    expect((await Promise.all(calls.slice(0, 3))).map((r) => r.status)).toEqual([
      'completed',
      'completed',
      'completed',
    ]);
    await runner.close();
  });

  it('fails at once with rate_limited when the next slot comes after the deadline', async () => {
    const runner = createRunner({
      invoker: async (c) => c.input,
      tools: [limited({ limit: 1, intervalMs: 60_000, per: 'global' })],
    });
    expect((await runner.invoke('limited', { i: 0 })).status).toBe('completed');
    const r = await runner.invoke('limited', { i: 1 }, { timeoutMs: 30_000 });
    expect(r.status === 'failed' && r.error).toMatchObject({
      category: 'rate_limited',
      code: 'rate_limit_wait',
      retryAfterMs: 60_000,
      attempts: 1,
    });
    await runner.close();
  });

  it('caps concurrency with maxConcurrent', async () => {
    const starts: number[] = [];
    const t0 = Date.now();
    const runner = createRunner({
      invoker: (c) => {
        starts.push(Date.now() - t0);
        return new Promise((res) => setTimeout(() => res(c.input), 100));
      },
      tools: [limited({ limit: 100, intervalMs: 1000, per: 'global', maxConcurrent: 1 })],
    });
    const calls = [0, 1, 2].map((i) => runner.invoke('limited', { i }));
    await vi.advanceTimersByTimeAsync(300);
    await Promise.all(calls);
    expect(starts).toEqual([0, 100, 200]);
    await runner.close();
  });

  it('cancels waiting calls when the runner closes', async () => {
    const runner = createRunner({
      invoker: async (c) => c.input,
      tools: [limited({ limit: 1, intervalMs: 60_000, per: 'global' })],
    });
    await runner.invoke('limited', { i: 0 });
    const waiting = runner.invoke('limited', { i: 1 }, { timeoutMs: 120_000 });
    await vi.advanceTimersByTimeAsync(10);
    await runner.close();
    const r = await waiting;
    expect(r.status === 'failed' && r.error).toMatchObject({ category: 'cancelled', code: 'runner_closed' });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('forgets idle per-user limiters, so memory stays bounded with many users', async () => {
    const store = memoryLimiterStore();
    const spec = { limit: 10, intervalMs: 1000, per: 'user' as const };
    const scope = new AbortScope();
    for (let u = 0; u < 1023; u++) (store.limiter(`tool:${u}`, spec).acquire(scope, Infinity) as () => void)();
    expect(store.size()).toBe(1023);
    await vi.advanceTimersByTimeAsync(61_000);
    store.limiter('tool:new', spec); // the 1024th creation sweeps idle limiters
    expect(store.size()).toBe(1);
  });
});

describe('one user never blocks another (memory store)', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const tool = (name: string, rateLimit: Parameters<typeof defineTool>[0]['rateLimit']) =>
    defineTool({
      name,
      description: 'd',
      input: z.object({ i: z.number() }),
      output: z.object({ i: z.number() }),
      effect: 'read',
      rateLimit,
    });

  /** What `p` settled with once pending timers of this instant ran, or 'pending'. */
  const settledNow = async <T>(p: Promise<T>): Promise<T | 'pending'> => {
    let out: T | 'pending' = 'pending';
    void p.then((v) => {
      out = v;
    });
    await vi.advanceTimersByTimeAsync(0);
    return out;
  };

  it('refuses a user past the limit fast, does not count a wait that ran into the deadline, and another user still completes', async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    const invoker = async (c: ToolCall) => {
      if ((c.input as { i: number }).i === 0) await held; // alice's first call holds her only concurrent slot
      return c.input;
    };
    const runner = createRunner({
      invoker,
      tools: [tool('per_user', { limit: 2, intervalMs: 60_000, per: 'user', maxConcurrent: 1 })],
    });
    const changes: string[] = [];
    runner.events.on('breaker:change', (e) => changes.push(e.state));
    const call = (userId: string, i: number, timeoutMs = 1000) =>
      runner.invoke('per_user', { i }, { context: { userId }, timeoutMs });
    const first = call('alice', 0, 120_000);
    await vi.advanceTimersByTimeAsync(0);
    // Blocked by concurrency (the wait cannot be computed): these wait, and the deadline comes while they are queued.
    const queued = [1, 2, 3, 4, 5].map((i) => call('alice', i));
    await vi.advanceTimersByTimeAsync(1000);
    expect((await Promise.all(queued)).map((r) => r.status)).toEqual(Array(5).fill('failed'));
    expect(changes).toEqual([]); // five deadlines while queued: not the tool's failures
    release();
    expect(await settledNow(first)).toMatchObject({ status: 'completed' });
    expect(await settledNow(call('alice', 6))).toMatchObject({ status: 'completed' }); // her second slot of this window
    for (let i = 0; i < 10; i++) {
      // The window is used up: the next slot comes after the deadline, so the call is refused at once.
      const r = await settledNow(call('alice', 10 + i));
      expect(r !== 'pending' && r.status === 'failed' && r.error).toMatchObject({
        category: 'rate_limited',
        code: 'rate_limit_wait',
        attempts: 1,
      });
    }
    expect(changes).toEqual([]);
    expect(await settledNow(call('bob', 0))).toMatchObject({ status: 'completed' });
    await runner.close();
  });

  it('gives every limiter a default maxQueue of 50 waiting calls', async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    const invoker = async (c: ToolCall) => {
      if ((c.input as { i: number }).i === 0) await held;
      return c.input;
    };
    const runner = createRunner({
      invoker,
      tools: [tool('busy', { limit: 1000, intervalMs: 1000, per: 'global', maxConcurrent: 1 })],
    });
    const calls = Array.from({ length: 51 }, (_, i) => runner.invoke('busy', { i }, { timeoutMs: 60_000 }));
    await vi.advanceTimersByTimeAsync(0);
    const last = await settledNow(runner.invoke('busy', { i: 51 }, { timeoutMs: 60_000 }));
    expect(last !== 'pending' && last.status === 'failed' && last.error).toMatchObject({
      category: 'queue_full',
      code: 'queue_full',
      message: expect.stringContaining('maxQueue 50'),
    });
    release();
    await vi.advanceTimersByTimeAsync(0);
    expect((await Promise.all(calls)).every((r) => r.status === 'completed')).toBe(true);
    await runner.close();
  });

  it('keeps at most 10,000 per-user limiters, evicting the oldest idle ones, never one in use; user ids such as __proto__ are ordinary users', () => {
    let t = 0;
    const store = memoryLimiterStore(() => t);
    const spec = { limit: 1, intervalMs: 60_000, per: 'user' as const };
    const scope = new AbortScope();
    const take = (user: string) => store.limiter('chainkit:tool', spec, user).acquire(scope, 1000);
    const heldLimiter = store.limiter('chainkit:tool', spec, 'held');
    const held = take('held');
    expect(typeof held).toBe('function');
    for (const user of ['__proto__', 'constructor', 'toString']) (take(user) as () => void)(); // one slot each
    expect(take('__proto__')).toMatchObject({ refused: 'wait' }); // its own window, used up
    for (let u = 0; u < 25_000; u++) {
      t++;
      (take(`user-${u}`) as () => void)();
    }
    expect(store.size()).toBeLessThanOrEqual(10_000);
    expect(store.limiter('chainkit:tool', spec, 'held')).toBe(heldLimiter);
    expect(store.limiter('chainkit:tool', spec, 'user-24999').acquire(scope, 1000)).toMatchObject({ refused: 'wait' }); // the newest are kept
    (held as () => void)();
  });
});
