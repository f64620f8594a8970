import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  chain,
  createRunner,
  defineTool,
  functionInvoker,
  memoryBreakerStore,
  memoryLimiterStore,
  type BreakerChangeEvent,
  type LimiterStore,
} from 'chainkit';
import type { BreakerStore } from 'chainkit/stores';
import { storeFailure } from '../../src/stores/guard.js';
import { createMockInvoker } from 'chainkit/testing';
import { http } from '../helpers.js';

const flaky = defineTool({
  name: 'flaky',
  description: 'f',
  input: z.object({}),
  output: z.object({ ok: z.boolean() }),
  effect: 'read',
  retry: false,
});

describe('circuit breaker', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('opens after 5 transient failures, fails fast, then closes after a successful probe', async () => {
    const invoker = createMockInvoker({ flaky: [...Array(5).fill({ error: http(503) }), { ok: { ok: true } }] });
    const runner = createRunner({ invoker, tools: [flaky] });
    const changes: BreakerChangeEvent[] = [];
    runner.events.on('breaker:change', (e) => changes.push(e));
    for (let i = 0; i < 5; i++) expect((await runner.invoke('flaky', {})).status).toBe('failed');
    expect(changes.map((c) => c.state)).toEqual(['open']);

    const fast = await runner.invoke('flaky', {});
    expect(fast.status === 'failed' && fast.error).toMatchObject({
      category: 'circuit_open',
      code: 'circuit_open',
      retryAfterMs: 60_000,
      retryable: false,
      attempts: 1,
    });
    expect(invoker.calls).toHaveLength(5); // not called while open

    await vi.advanceTimersByTimeAsync(60_000);
    expect((await runner.invoke('flaky', {})).status).toBe('completed'); // the probe
    expect(changes.map((c) => c.state)).toEqual(['open', 'closed']);
    expect((await runner.invoke('flaky', {})).status).toBe('completed');
    expect(invoker.calls).toHaveLength(7);
  });

  it('reopens when the probe fails, and lets only one probe through', async () => {
    let release: (v: unknown) => void = () => {};
    const invoker = createMockInvoker({
      flaky: [
        ...Array(3).fill({ error: http(500) }),
        () =>
          new Promise((res) => {
            release = res;
          }),
        { error: http(500) },
      ],
    });
    const runner = createRunner({ invoker, tools: [flaky], breaker: { threshold: 3, openMs: 1000 } });
    for (let i = 0; i < 3; i++) await runner.invoke('flaky', {});
    await vi.advanceTimersByTimeAsync(1000);
    const probe = runner.invoke('flaky', {});
    await vi.advanceTimersByTimeAsync(0);
    const second = await runner.invoke('flaky', {});
    expect(second.status === 'failed' && second.error.category).toBe('circuit_open'); // while the probe is out
    release({ status: 'error', error: 'service_unavailable' });
    expect((await probe).status).toBe('failed');
    const after = await runner.invoke('flaky', {});
    expect(after.status === 'failed' && after.error).toMatchObject({ category: 'circuit_open', retryAfterMs: 1000 });
  });

  it('does not count user errors such as not_found', async () => {
    const invoker = createMockInvoker({ flaky: { error: http(404) } });
    const runner = createRunner({ invoker, tools: [flaky], breaker: { threshold: 2 } });
    for (let i = 0; i < 4; i++) {
      const r = await runner.invoke('flaky', {});
      expect(r.status === 'failed' && r.error.category).toBe('not_found');
    }
    expect(invoker.calls).toHaveLength(4);
  });

  it('counts each attempt, so retries can open it within one call', async () => {
    const retried = defineTool({
      name: 'flaky',
      description: 'f',
      input: z.object({}),
      output: z.object({ ok: z.boolean() }),
      effect: 'read',
    });
    const invoker = createMockInvoker({ flaky: { error: http(500) } });
    const runner = createRunner({ invoker, tools: [retried], breaker: { threshold: 3 }, random: () => 0 });
    const r = runner.invoke('flaky', {});
    await vi.runAllTimersAsync();
    const res = await r;
    // attempts 1–3 fail with 500 and open the breaker; attempt 4 fails fast with circuit_open, never retried
    expect(res.status === 'failed' && res.error).toMatchObject({ category: 'circuit_open', attempts: 4 });
    expect(invoker.calls).toHaveLength(3);
  });

  it("counts a remote 429 (the tool's own rate_limited failure)", async () => {
    const invoker = createMockInvoker({
      flaky: { error: http(429, 'slow down', { headers: { 'retry-after': '1' } }) },
    });
    const runner = createRunner({ invoker, tools: [flaky] });
    for (let i = 0; i < 5; i++) {
      const r = await runner.invoke('flaky', {});
      expect(r.status === 'failed' && r.error.category).toBe('rate_limited');
    }
    const fast = await runner.invoke('flaky', {});
    expect(fast.status === 'failed' && fast.error.category).toBe('circuit_open');
    expect(invoker.calls).toHaveLength(5);
  });

  it("neither counts nor resets on chainkit's own limiter refusals", async () => {
    let release: (v: unknown) => void = () => {};
    const limited = defineTool({
      name: 'limited',
      description: 'l',
      input: z.object({}),
      output: z.object({ ok: z.boolean() }),
      effect: 'read',
      retry: false,
      rateLimit: { limit: 100, intervalMs: 1000, per: 'global', maxConcurrent: 1, maxQueue: 0 },
    });
    const down = { error: http(503) };
    const invoker = createMockInvoker({
      limited: [
        down,
        down,
        down,
        down,
        () =>
          new Promise((res) => {
            release = res;
          }),
      ],
    });
    const runner = createRunner({ invoker, tools: [limited], breaker: { threshold: 5, openMs: 1000 } });
    const changes: string[] = [];
    runner.events.on('breaker:change', (e) => changes.push(e.state));
    for (let i = 0; i < 4; i++) await runner.invoke('limited', {});
    const fifth = runner.invoke('limited', {});
    await vi.advanceTimersByTimeAsync(0);
    const refused = await runner.invoke('limited', {}); // the slot is taken and no call may wait
    expect(refused.status === 'failed' && refused.error.category).toBe('queue_full');
    release({ status: 'error', error: 'service_unavailable' });
    expect((await fifth).status).toBe('failed');
    expect(changes).toEqual(['open']); // five real failures in a row: the refusal between them did not reset the count
  });

  it("does not count a call cut off by its run's deadline or a cancel: the budget ran out, not the tool", async () => {
    const invoker = createMockInvoker({ flaky: { ok: { ok: true }, delayMs: 200 } });
    const runner = createRunner({ invoker, tools: [flaky], breaker: { threshold: 2, openMs: 60_000 } });
    const changes: string[] = [];
    runner.events.on('breaker:change', (e) => changes.push(e.state));
    for (let i = 0; i < 3; i++) {
      const cut = runner.invoke('flaky', {}, { timeoutMs: 50 }); // the tool's own timeout is 10 s
      await vi.advanceTimersByTimeAsync(60);
      const r = await cut;
      expect(r.status === 'failed' && r.error.code).toBe('deadline_exceeded');
    }
    const stop = new AbortController();
    const cancelled = runner.invoke('flaky', {}, { signal: stop.signal });
    await vi.advanceTimersByTimeAsync(10);
    stop.abort();
    expect((await cancelled).status).toBe('failed');
    const whole = runner.invoke('flaky', {});
    await vi.advanceTimersByTimeAsync(250);
    expect((await whole).status).toBe('completed');
    expect(changes).toEqual([]);
  });

  it('gives back a probe that the limiter refused, without closing or reopening the breaker', async () => {
    const perUser = defineTool({
      name: 'per_user',
      description: 'p',
      input: z.object({}),
      output: z.object({ ok: z.boolean() }),
      effect: 'read',
      retry: false,
      rateLimit: { limit: 1, intervalMs: 60_000, per: 'user' },
    });
    const invoker = createMockInvoker({ per_user: [{ error: http(503) }, { ok: { ok: true } }] });
    const runner = createRunner({ invoker, tools: [perUser], breaker: { threshold: 1, openMs: 1000 } });
    const changes: string[] = [];
    runner.events.on('breaker:change', (e) => changes.push(e.state));
    const call = (userId: string) => runner.invoke('per_user', {}, { context: { userId }, timeoutMs: 5000 });
    expect((await call('alice')).status).toBe('failed'); // uses alice's slot of this window, opens the breaker
    await vi.advanceTimersByTimeAsync(1000);
    const refused = await call('alice'); // the probe: refused by alice's own limit, it never reached the tool
    expect(refused.status === 'failed' && refused.error).toMatchObject({
      category: 'rate_limited',
      code: 'rate_limit_wait',
    });
    expect(changes).toEqual(['open']); // says nothing about the tool: not closed, not reopened
    expect((await call('bob')).status).toBe('completed'); // the next call probes, and closes it
    expect(changes).toEqual(['open', 'closed']);
    expect(invoker.calls).toHaveLength(2);
  });

  it('gives back a probe whose limiter store failed (store_unavailable): the tool was not reached', async () => {
    const limited = defineTool({
      name: 'limited',
      description: 'l',
      input: z.object({}),
      output: z.object({ ok: z.boolean() }),
      effect: 'read',
      retry: false,
      rateLimit: { limit: 100, intervalMs: 1000, per: 'global' },
    });
    let down = false;
    const inner = memoryLimiterStore(Date.now);
    // A shared limiter store that fails on demand, as a Redis limiter does when Redis is down.
    const limiter: LimiterStore = {
      limiter: (id, spec, user) => {
        const real = inner.limiter(id, spec, user);
        return {
          acquire: (scope, deadlineAt, onWait) =>
            down
              ? Promise.reject(storeFailure('rate-limit', new Error('ECONNREFUSED')))
              : real.acquire(scope, deadlineAt, onWait),
        };
      },
    };
    const invoker = createMockInvoker({ limited: [{ error: http(503) }, { ok: { ok: true } }] });
    const runner = createRunner({
      invoker,
      tools: [limited],
      breaker: { threshold: 1, openMs: 1000 },
      stores: { limiter },
    });
    const changes: string[] = [];
    runner.events.on('breaker:change', (e) => changes.push(e.state));
    expect((await runner.invoke('limited', {})).status).toBe('failed'); // opens the breaker
    await vi.advanceTimersByTimeAsync(1000);
    down = true;
    const probe = await runner.invoke('limited', {});
    expect(probe.status === 'failed' && probe.error).toMatchObject({ code: 'store_unavailable' });
    expect(changes).toEqual(['open']); // not reopened
    down = false;
    const next = await runner.invoke('limited', {}); // let through as the probe, not circuit_open
    expect(next.status).toBe('completed');
    expect(changes).toEqual(['open', 'closed']);
    expect(invoker.calls).toHaveLength(2);
    await runner.close();
  });

  it('rejects bad breaker and retry options', () => {
    expect(() => createRunner({ invoker: async () => ({}), breaker: { threshold: 0, openMs: -1 } })).toThrow(
      /threshold[\s\S]*openMs/,
    );
    expect(() =>
      createRunner({
        invoker: async () => ({}),
        retry: {
          internal: { retries: -1, minDelayMs: 0, factor: 0.5, maxDelayMs: 0 },
          nonsense: { retries: 1 },
        } as never,
      }),
    ).toThrow(/retry\.internal\.retries[\s\S]*retry\.internal\.factor[\s\S]*retry\.nonsense: Unknown error category/);
  });
});

describe('circuit breaker: a probe the run cut off', () => {
  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const mark = defineTool({
    name: 'mark',
    description: 'Mark an item',
    input: z.object({ id: z.string() }),
    output: z.object({ id: z.string() }),
    effect: 'read',
    retry: false,
  });
  const list = defineTool({
    name: 'list',
    description: 'List ids',
    input: z.object({ n: z.number() }),
    output: z.object({ items: z.array(z.object({ id: z.string() })) }),
    effect: 'read',
  });
  const markOne = chain('mark_one', { input: z.object({ id: z.string() }) })
    .tool('mark', mark, (ref) => ({ id: ref('input', 'id') }))
    .output((s) => s.results.mark.id);

  it("is given back when a sibling's failure cut it off: a healthy tool's breaker is not reopened", async () => {
    let calls = 0;
    const invoker = functionInvoker([mark, list], {
      list: ({ n }) => ({ items: Array.from({ length: n }, (_, i) => ({ id: `t${i}` })) }),
      mark: async ({ id }, call) => {
        if (++calls <= 2) throw http(503); // the outage that opened the breaker
        await new Promise((resolve, reject) => {
          const t = setTimeout(resolve, 30); // healthy again
          call.signal.addEventListener('abort', () => (clearTimeout(t), reject(call.signal.reason)));
        });
        return { id };
      },
    });
    const runner = createRunner({ invoker, tools: [mark, list], breaker: { threshold: 2, openMs: 100 } });
    const changes: string[] = [];
    runner.events.on('breaker:change', (e) => changes.push(e.state));
    for (let i = 0; i < 2; i++) await runner.invoke('mark', { id: 'x' });
    const all = chain('all', { input: z.object({ n: z.number() }) })
      .tool('find', list, (ref) => ({ n: ref('input', 'n') }))
      .forEach('done', (ref) => ({
        over: ref('find', 'items'),
        chain: markOne,
        input: (item) => ({ id: item('id') }),
        concurrency: 3,
      }))
      .output((s) => s.results.done);
    await pause(120); // past openMs: the next call probes
    const r = await runner.run(all, { n: 3 }); // item 0 probes; items 1 and 2 fail fast (circuit_open) and stop the step
    expect(r.status).toBe('failed');
    const single = await runner.invoke('mark', { id: 'y' }); // probes again, and closes it
    expect(single.status).toBe('completed');
    expect(changes).toEqual(['open', 'closed']);
    await runner.close();
  });

  it('is given back when the run was cancelled before it reached the tool', async () => {
    let calls = 0;
    const invoker = functionInvoker([mark], {
      mark: async ({ id }) => {
        if (++calls <= 2) throw http(503);
        return { id };
      },
    });
    // An answer that takes a moment, as a shared store's does: the run can be cancelled before the call.
    const inner = memoryBreakerStore();
    const breakers: BreakerStore = {
      acquire: async (tool, now, openMs) => (await pause(20), inner.acquire(tool, now, openMs)),
      success: (tool) => inner.success(tool),
      failure: (tool, now, threshold, openMs) => inner.failure(tool, now, threshold, openMs),
      release: (tool) => inner.release!(tool),
      isOpen: (tool, now) => inner.isOpen(tool, now),
    };
    const runner = createRunner({
      invoker,
      tools: [mark],
      breaker: { threshold: 2, openMs: 100 },
      stores: { breakers },
    });
    for (let i = 0; i < 2; i++) await runner.invoke('mark', { id: 'x' });
    await pause(150);
    const stop = new AbortController();
    const cut = runner.invoke('mark', { id: 'x' }, { signal: stop.signal });
    await pause(5);
    stop.abort(); // while the breaker store answers: the probe never reaches the tool
    expect((await cut).status).toBe('failed');
    expect(calls).toBe(2);
    expect((await runner.invoke('mark', { id: 'y' })).status).toBe('completed');
    await runner.close();
  });
});
