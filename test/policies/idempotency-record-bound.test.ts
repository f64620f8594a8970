// The idempotency record of a call's outcome never holds the caller's answer past the run's deadline
// or its close(): a silent store holds no run past its deadline (API.md §10), and close()
// leaves no timer of the policy behind.
import Redis from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, ref } from 'chainkit';
import { createMockInvoker } from 'chainkit/testing';
import { redisStores } from 'chainkit/redis';
import { freezableProxy, type FreezableProxy } from '../helpers/proxy.js';

let proxy: FreezableProxy;
let redis: Redis;
const prefix = `ck-idem-bound:${process.pid}:${Date.now()}`;
beforeAll(async () => {
  proxy = await freezableProxy({ host: '127.0.0.1', port: 6379 });
  redis = new Redis({ host: '127.0.0.1', port: proxy.port, maxRetriesPerRequest: 1 });
});
afterAll(async () => {
  proxy.thaw();
  const clean = new Redis({ host: '127.0.0.1', port: 6379 });
  const keys = await clean.keys(`${prefix}*`);
  if (keys.length > 0) await clean.del(...keys);
  clean.disconnect();
  redis.disconnect();
  await proxy.close();
});

it('a run ends within its deadline when the store falls silent before its write is recorded', async () => {
  const charge = defineTool({
    name: 'ck_charge',
    description: 'charges',
    input: z.object({ amount: z.number() }),
    output: z.object({ id: z.string() }),
    effect: 'write',
    idempotent: true,
  });
  const chain = defineChain({
    name: 'ck_paid',
    input: z.object({ amount: z.number() }),
    timeoutMs: 3_000,
    steps: [
      {
        id: 'charge',
        tool: charge,
        input: { amount: ref('input', 'amount') },
        idempotencyKey: (s) => `order-${s.input.amount}`,
      },
    ],
  });
  let release!: () => void;
  let entered!: () => void;
  const reached = new Promise<void>((r) => (entered = r));
  const released = new Promise<void>((r) => (release = r));
  const invoker = createMockInvoker({
    ck_charge: async () => {
      entered();
      await released;
      return { id: 'p1' };
    },
  });
  const runner = createRunner({
    invoker,
    tools: [charge],
    chains: [chain],
    stores: { idempotency: redisStores(redis, { prefix }).idempotency },
  });
  const t0 = Date.now();
  const running = runner.run(chain, { amount: 7 }, { runId: `r-${Date.now()}` });
  await reached;
  proxy.freeze();
  release();
  const r = await running;
  const took = Date.now() - t0;
  await runner.close();
  proxy.thaw();
  expect(r.runId).toBeDefined();
  expect(took).toBeLessThanOrEqual(3_700);
}, 30_000);

it('close() ends the wait for the record of a silent store and leaves no timer behind', async () => {
  const pay = defineTool({
    name: 'pay',
    description: 'pays',
    input: z.object({ amount: z.number() }),
    output: z.object({ ok: z.boolean() }),
    effect: 'write',
    timeoutMs: 30_000,
  });
  const chain = defineChain({
    name: 'paychain',
    input: z.object({ amount: z.number() }),
    timeoutMs: 60_000,
    steps: [
      {
        id: 'pay',
        tool: pay,
        input: { amount: ref('input', 'amount') },
        confirm: false,
        idempotencyKey: () => 'custom-key',
      },
    ],
  });
  let answer!: () => void;
  let entered!: () => void;
  const reached = new Promise<void>((r) => (entered = r));
  const invoker = createMockInvoker({
    pay: () =>
      new Promise((r) => {
        entered();
        answer = () => r({ ok: true });
      }),
  });
  const runner = createRunner({
    invoker,
    tools: [pay],
    chains: [chain],
    stores: { idempotency: redisStores(redis, { prefix }).idempotency },
  });
  const running = runner.run(chain, { amount: 1 }, { runId: `r2-${Date.now()}` });
  await reached;
  proxy.freeze();
  // Timers made from here on, and whether they are still pending.
  const real = globalThis.setTimeout;
  const realClear = globalThis.clearTimeout;
  const live = new Map<unknown, number>();
  const tracked = ((fn: (...x: unknown[]) => void, ms?: number, ...a: unknown[]) => {
    const t = real(
      (...x: unknown[]) => {
        live.delete(t);
        fn(...x);
      },
      ms,
      ...a,
    );
    live.set(t, ms ?? 0);
    return t;
  }) as typeof setTimeout;
  globalThis.setTimeout = tracked;
  globalThis.clearTimeout = ((t: Parameters<typeof clearTimeout>[0]) => {
    live.delete(t);
    realClear(t);
  }) as typeof clearTimeout;
  try {
    await runner.close();
    const settled = await Promise.race([
      running.then(() => 'settled'),
      new Promise((res) => real(() => res('pending'), 2_000)),
    ]);
    answer(); // the tool answers after close(): its late answer is kept, with no timer
    await new Promise((res) => real(res, 200));
    expect(settled).toBe('settled');
    expect([...live.values()].filter((ms) => ms > 1_000)).toEqual([]);
  } finally {
    globalThis.setTimeout = real;
    globalThis.clearTimeout = realClear;
    for (const t of live.keys()) realClear(t as Parameters<typeof clearTimeout>[0]);
    proxy.thaw();
  }
}, 30_000);
