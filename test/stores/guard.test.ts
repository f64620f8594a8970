import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { AbortScope, createRunner, defineChain, defineTool, DEFAULT_RETRY_TABLE, memoryBreakerStore } from 'chainkit';
import { createMockInvoker } from 'chainkit/testing';
import type { IdempotencyClaim } from '../../src/stores/types.js';
import { breakerPolicy } from '../../src/policies/breaker.js';
import { retryPolicy } from '../../src/policies/retry.js';
import { storeFailure } from '../../src/stores/guard.js';

const write = defineTool({
  name: 'write',
  description: 'w',
  input: z.object({}),
  output: z.object({ ok: z.boolean() }),
  effect: 'write',
});
const chain = defineChain({
  name: 'w',
  input: z.object({}),
  steps: [{ id: 'w', tool: write, input: {} }],
  timeoutMs: 500,
});

describe('stores that fail or fall silent', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a store that never answers fails the call with store_unavailable at the deadline, without calling the tool', async () => {
    vi.useFakeTimers();
    const invoker = createMockInvoker({ write: { ok: { ok: true } } });
    const silent = { begin: () => new Promise<never>(() => {}), complete: async () => {}, fail: async () => {} };
    const pending = createRunner({ invoker, stores: { idempotency: silent } }).run(chain, {});
    await vi.advanceTimersByTimeAsync(500);
    const r = await pending;
    expect(r.status === 'failed' && r.error).toMatchObject({
      category: 'unavailable',
      code: 'store_unavailable',
      message: expect.stringContaining('no answer before the deadline'),
    });
    expect(invoker.calls).toHaveLength(0);
  });

  it('a claim that arrives after the call gave up on the store is released (new) or stops waiting (pending)', async () => {
    vi.useFakeTimers();
    const invoker = createMockInvoker({ write: { ok: { ok: true } } });
    let cancelled = 0;
    const released: string[] = [];
    const late = (claim: IdempotencyClaim) => ({
      begin: () => new Promise<IdempotencyClaim>((r) => setTimeout(() => r(claim), 800)),
      complete: async () => {},
      fail: async (key: string) => {
        released.push(key);
      },
    });
    for (const claim of [
      { status: 'new' } as const,
      {
        status: 'pending',
        settled: new Promise(() => {}),
        cancel: () => {
          cancelled++;
        },
      } as const,
    ]) {
      const runner = createRunner({ invoker, stores: { idempotency: late(claim) } });
      const pending = runner.run(chain, {}, { runId: `late-${claim.status}` });
      await vi.advanceTimersByTimeAsync(1000);
      const r = await pending;
      expect(r.status === 'failed' && r.error.code).toBe('store_unavailable');
      await runner.close();
    }
    expect(released).toEqual([expect.stringMatching(/^write:[0-9a-f]{64}:late-new:w$/)]); // the run's key, scoped to its tool and caller
    expect(cancelled).toBe(1);
    expect(invoker.calls).toHaveLength(0);
  });

  it('a breaker store that throws fails safe; one that fails to record does not hide a success', async () => {
    const invoker = createMockInvoker({ write: { ok: { ok: true } } });
    const broken = {
      acquire: () => {
        throw new Error('boom');
      },
      success: () => undefined,
      failure: () => undefined,
      isOpen: () => false,
    };
    const r = await createRunner({ invoker, stores: { breakers: broken } }).run(chain, {});
    expect(r.status === 'failed' && r.error.code).toBe('store_unavailable');
    const flaky = {
      acquire: () => ({ status: 'closed' as const }),
      success: () => Promise.reject(new Error('lost')),
      failure: () => undefined,
      isOpen: () => false,
    };
    expect((await createRunner({ invoker, stores: { breakers: flaky } }).run(chain, {})).status).toBe('completed');
  });
});

describe('a store failure is chainkit-side: once, fast, never retried, never counted by the breaker', () => {
  afterEach(() => {
    vi.useRealTimers();
  });
  const read = defineTool({
    name: 'read',
    description: 'r',
    input: z.object({}),
    output: z.object({ ok: z.boolean() }),
    effect: 'read',
  });
  const readChain = defineChain({
    name: 'r',
    input: z.object({}),
    steps: [{ id: 'r', tool: read, input: {} }],
    timeoutMs: 60_000,
  });

  it('a breaker store that rejects fails a read-only chain at once with store_unavailable, without a retry or a tool call', async () => {
    vi.useFakeTimers();
    const invoker = createMockInvoker({ read: { ok: { ok: true } } });
    let acquired = 0;
    const down = {
      acquire: () => {
        acquired++;
        return Promise.reject(new Error('ECONNREFUSED 127.0.0.1:6379'));
      },
      success: async () => undefined,
      failure: async () => undefined,
      isOpen: async () => false,
    };
    const runner = createRunner({ invoker, stores: { breakers: down } });
    const retries: unknown[] = [];
    runner.events.on('step:retry', (e) => retries.push(e));
    let r: Awaited<ReturnType<typeof runner.run>> | undefined;
    void runner.run(readChain, {}).then((v) => (r = v));
    await vi.advanceTimersByTimeAsync(0); // no wait of any length: the failure is immediate
    expect(r?.status === 'failed' && r.error).toMatchObject({
      category: 'unavailable',
      code: 'store_unavailable',
      attempts: 1,
    });
    expect(acquired).toBe(1);
    expect(retries).toEqual([]);
    expect(invoker.calls).toHaveLength(0);
    await runner.close();
  });

  it('an idempotency store that rejects fails a write once, without calling the tool', async () => {
    const invoker = createMockInvoker({ write: { ok: { ok: true } } });
    let begun = 0;
    const down = {
      begin: () => {
        begun++;
        return Promise.reject(Object.assign(new Error('connection lost'), { status: 503 }));
      },
      complete: async () => {},
      fail: async () => {},
    };
    const runner = createRunner({ invoker, stores: { idempotency: down } });
    const r = await runner.run(chain, {});
    expect(r.status === 'failed' && r.error).toMatchObject({
      category: 'unavailable',
      code: 'store_unavailable',
      attempts: 0,
    });
    expect(begun).toBe(1);
    expect(invoker.calls).toHaveLength(0);
    await runner.close();
  });

  it('a store failure inside an attempt (e.g. the rate-limit store) is not retried and not counted by the breaker', async () => {
    let failures = 0;
    const breakers = {
      ...memoryBreakerStore(),
      failure: () => {
        failures++;
        return undefined;
      },
    };
    const policy = breakerPolicy({ store: breakers, now: Date.now, threshold: 1, openMs: 60_000 });
    const storeDown = policy(() => Promise.reject(storeFailure('rate-limit', new Error('READONLY'))));
    await expect(storeDown({ tool: read } as never)).rejects.toMatchObject({ info: { code: 'store_unavailable' } });
    expect(failures).toBe(0);
    expect(breakers.isOpen('read', Date.now())).toBe(false);

    let calls = 0;
    const retry = retryPolicy({ random: () => 0, now: Date.now });
    const ctx = {
      tool: read,
      run: new AbortScope(),
      retry: DEFAULT_RETRY_TABLE,
      deadlineAt: Date.now() + 60_000,
      attempt: 0,
      timeoutMs: 1000,
    };
    await expect(
      retry(() => {
        calls++;
        return Promise.reject(storeFailure('rate-limit', new Error('READONLY')));
      })(ctx as never),
    ).rejects.toMatchObject({ info: { category: 'unavailable', code: 'store_unavailable' } });
    expect(calls).toBe(1);
  });
});
