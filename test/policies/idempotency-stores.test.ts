// Idempotency through a runner on every idempotency store (memory, real Redis, real PostgreSQL):
// keys per tool and per caller (two users, two tools: nothing revealed, nothing replayed), and the
// late answer of a timed-out write kept as its outcome. Real time with short timeouts: the network
// stores answer on real sockets; the tool's late answer is given by the test, not by a timer.
import Redis from 'ioredis';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, memoryIdempotencyStore, ref, type ToolCall } from 'chainkit';
import { type IdempotencyStore } from 'chainkit/stores';
import { createMockInvoker } from 'chainkit/testing';
import { redisStores } from 'chainkit/redis';
import { postgresStores } from 'chainkit/postgres';

const prefix = `chainkit-test-idem-scope:${process.pid}:${Date.now()}`;
const redis = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true, maxRetriesPerRequest: 1 });
const schema = `ck_idem_scope_${process.pid}_${Date.now() % 1_000_000}`;
const pool = new pg.Pool({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test', max: 4 });
afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
});

const stores: [string, () => IdempotencyStore][] = [
  ['memory', () => memoryIdempotencyStore()],
  ['redis', () => redisStores(redis, { prefix, pollMs: 5 }).idempotency],
  ['postgres', () => postgresStores(pool, { schema, pollMs: 5 }).idempotency],
];

const alice = { userId: '11111111-1111-4111-8111-111111111111' };
const bob = { userId: '22222222-2222-4222-8222-222222222222' };
const context = z.object({ userId: z.uuid() });
const moved = z.object({ by: z.string(), amount: z.number() });
const transfer = defineTool({
  name: 'transfer',
  description: 'moves money',
  input: z.object({ amount: z.number() }),
  output: moved,
  effect: 'write',
});
const closeAccount = defineTool({
  name: 'close_account',
  description: 'closes the account',
  input: z.object({ amount: z.number() }),
  output: moved,
  effect: 'destructive',
});
const pay = defineChain({
  name: 'pay',
  input: z.object({ amount: z.number() }),
  context,
  steps: [{ id: 'pay', tool: transfer, input: { amount: ref('input', 'amount') }, confirm: false }],
});
/** What a tool did, and for whom: the caller's own context, never another's. */
const act = ({ amount }: { amount: number }, call: ToolCall) => ({ by: String(call.context.userId), amount });
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
let n = 0;
const unique = (what: string) => `${what}-${++n}-${Date.now()}`;

describe.each(stores)('idempotency keys are per tool and per caller (%s)', (_, store) => {
  it('the same explicit key from another user, or for another tool, is another call: it runs, and gets its own result', async () => {
    const invoker = createMockInvoker({ transfer: act, close_account: act });
    const runner = createRunner({ invoker, tools: [transfer, closeAccount], stores: { idempotency: store() } });
    const key = unique('Idempotency-Key');
    const first = await runner.invoke('transfer', { amount: 10 }, { idempotencyKey: key, context: alice });
    expect(first.status === 'completed' && first.output).toEqual({ by: alice.userId, amount: 10 });
    const again = await runner.invoke('transfer', { amount: 10 }, { idempotencyKey: key, context: alice });
    expect(again.status === 'completed' && again.trace.steps[0]!.status).toBe('cached'); // the same caller: kept
    const byBob = await runner.invoke('transfer', { amount: 99 }, { idempotencyKey: key, context: bob });
    expect(byBob.status === 'completed' && byBob.output).toEqual({ by: bob.userId, amount: 99 });
    expect(byBob.trace.steps[0]!.status).toBe('success');
    const otherTool = await runner.invoke('close_account', { amount: 0 }, { idempotencyKey: key, context: alice });
    expect(otherTool.status === 'completed' && otherTool.output).toEqual({ by: alice.userId, amount: 0 });
    expect(otherTool.trace.steps[0]!.status).toBe('success');
    expect(invoker.calls.map((c) => [c.tool, c.input])).toEqual([
      ['transfer', { amount: 10 }],
      ['transfer', { amount: 99 }],
      ['close_account', { amount: 0 }],
    ]);
    expect(invoker.calls.every((c) => c.idempotencyKey === key)).toBe(true); // the tool still gets the key it was given
    await runner.close();
  });

  it("another user's call in flight under the same key is not waited for", async () => {
    let release: () => void = () => {};
    const invoker = createMockInvoker({
      transfer: [
        (input: { amount: number }, call: ToolCall) =>
          new Promise((r) => {
            release = () => r(act(input, call));
          }),
        act,
      ],
    });
    const runner = createRunner({ invoker, tools: [transfer], stores: { idempotency: store() } });
    const key = unique('held');
    const first = runner.invoke('transfer', { amount: 1 }, { idempotencyKey: key, context: alice });
    while (invoker.calls.length === 0) await pause(2);
    const byBob = await runner.invoke(
      'transfer',
      { amount: 2 },
      { idempotencyKey: key, context: bob, timeoutMs: 5_000 },
    );
    expect(byBob.status === 'completed' && byBob.output).toEqual({ by: bob.userId, amount: 2 });
    release();
    expect((await first).status === 'completed' && (await first).trace.steps[0]!.status).toBe('success');
    await runner.close();
  });

  it("a run id another user used replays nothing of that user's run: each write runs for its own caller", async () => {
    const invoker = createMockInvoker({ transfer: act });
    const runner = createRunner({ invoker, stores: { idempotency: store() } });
    const runId = unique('req');
    const a = await runner.run(pay, { amount: 5 }, { runId, context: alice });
    const b = await runner.run(pay, { amount: 7 }, { runId, context: bob });
    expect(a.status === 'completed' && a.output).toEqual({ by: alice.userId, amount: 5 });
    expect(b.status === 'completed' && b.output).toEqual({ by: bob.userId, amount: 7 });
    expect(b.trace.steps[0]!.status).toBe('success');
    const aliceAgain = await runner.run(pay, { amount: 5 }, { runId, context: alice });
    expect(aliceAgain.status === 'completed' && aliceAgain.output).toEqual({ by: alice.userId, amount: 5 });
    expect(aliceAgain.trace.steps[0]!.status).toBe('cached');
    expect(invoker.calls).toHaveLength(2);
    await runner.close();
  });
});

describe.each(stores)('a timed-out write that answers later (%s)', (_, store) => {
  const slowPay = defineTool({
    name: 'slow_pay',
    description: 'moves money, slowly',
    input: z.object({ amount: z.number() }),
    output: moved,
    effect: 'write',
    timeoutMs: 50,
  });
  const chain = defineChain({
    name: 'slow',
    input: z.object({ amount: z.number() }),
    context,
    steps: [{ id: 'pay', tool: slowPay, input: { amount: ref('input', 'amount') }, confirm: false }],
    timeoutMs: 10_000,
  });

  it('fails a re-run at once while no answer has come; then keeps the late answer: a re-run returns it, cached, with no second call', async () => {
    let answer: () => void = () => {};
    // The first call answers only when the test says so, ignoring its signal; a second call would answer at once.
    const invoker = createMockInvoker({
      slow_pay: [
        (input: { amount: number }, call: ToolCall) =>
          new Promise((r) => {
            answer = () => r(act(input, call));
          }),
        act,
      ],
    });
    const runner = createRunner({ invoker, stores: { idempotency: store() } });
    const runId = unique('late');
    const first = await runner.run(chain, { amount: 3 }, { runId, context: alice });
    expect(first.status === 'failed' && first.error).toMatchObject({ category: 'timeout', retryable: false });

    const t0 = Date.now();
    const waiting = await runner.run(chain, { amount: 3 }, { runId, context: alice });
    expect(Date.now() - t0).toBeLessThan(1_000); // at once, not at the chain's 10 s deadline
    expect(waiting.status === 'failed' && waiting.error).toMatchObject({ category: 'timeout', retryable: false });
    expect(waiting.status === 'failed' && waiting.error.message).toMatch(
      /outcome is unknown.*still waiting for its answer.*another runId or idempotencyKey/s,
    );

    answer();
    let again = await runner.run(chain, { amount: 3 }, { runId, context: alice });
    for (let i = 0; i < 100 && again.status === 'failed'; i++) {
      // the late answer is kept in the background
      await pause(10);
      again = await runner.run(chain, { amount: 3 }, { runId, context: alice });
    }
    expect(again.status === 'completed' && again.output).toEqual({ by: alice.userId, amount: 3 });
    expect(again.trace.steps[0]!.status).toBe('cached');
    expect(invoker.calls).toHaveLength(1);
    // Another user's run under the same id is another call: it does not get Alice's late answer.
    const byBob = await runner.run(chain, { amount: 4 }, { runId, context: bob });
    expect(byBob.status === 'completed' && byBob.output).toEqual({ by: bob.userId, amount: 4 });
    await runner.close();
  });
});

describe.each(stores)('completeLate keeps a late answer only where the outcome is unknown (%s)', (_, store) => {
  it('over an unknown outcome or a key gone: kept; over a result or a call in flight: nothing changes', async () => {
    const s = store();
    const unknown = unique('unknown');
    await s.begin(unknown);
    await s.fail(unknown, new Error('socket hang up'), true);
    await s.completeLate!(unknown, { v: 1 });
    expect(await s.begin(unknown)).toEqual({ status: 'done', at: expect.any(Number), value: { v: 1 } });
    await s.completeLate!(unknown, { v: 2 }); // a second late answer changes nothing
    expect(await s.begin(unknown)).toEqual({ status: 'done', at: expect.any(Number), value: { v: 1 } });

    const held = unique('held');
    await s.begin(held);
    await s.completeLate!(held, { v: 3 }); // another call holds the key (the unknown marker lapsed)
    const claim = await s.begin(held);
    expect(claim.status).toBe('pending');
    if (claim.status === 'pending') claim.cancel?.();
    await s.complete(held, { v: 4 });
    expect(await s.begin(held)).toEqual({ status: 'done', at: expect.any(Number), value: { v: 4 } });

    const gone = unique('gone'); // the unknown marker lapsed and nobody took the key: the answer is still the outcome
    await s.completeLate!(gone, { v: 5 }, 60_000);
    expect(await s.begin(gone)).toEqual({ status: 'done', at: expect.any(Number), value: { v: 5 } });
  });
});

describe.each(stores)('a late failure leaves a kept result (%s)', (_, store) => {
  it('a stalled call whose claim lapsed and was completed by another: its failure changes nothing', async () => {
    const s = store();
    const key = unique('kept');
    await s.begin(key);
    await s.complete(key, { v: 1 }); // the claim lapsed, another call claimed the key and completed it
    await s.fail(key, new Error('socket hang up'), true); // then the stalled first call gives up, outcome unknown
    expect(await s.begin(key)).toEqual({ status: 'done', at: expect.any(Number), value: { v: 1 } });
    await s.fail(key, new Error('bad request'), false); // or fails cleanly: the other call's write stays done
    expect(await s.begin(key)).toEqual({ status: 'done', at: expect.any(Number), value: { v: 1 } });
  });
});

describe.each(stores)('a kept failure never carries the secrets of the call that failed (%s)', (_, store) => {
  it("a later call under the same key is told the write's unknown outcome without the first call's card token", async () => {
    const charge = defineTool({
      name: 'charge',
      description: 'charges a card',
      input: z.object({ amount: z.number(), card_token: z.string() }),
      output: z.object({ ok: z.boolean() }),
      effect: 'write',
    });
    const runner = createRunner({
      invoker: createMockInvoker({
        charge: ({ card_token }: { card_token: string }) => {
          throw Object.assign(new Error(`gateway timeout while charging card ${card_token}`), { status: 504 });
        },
      }),
      tools: [charge],
      stores: { idempotency: store() },
    });
    const key = unique('order');
    const first = await runner.invoke(
      'charge',
      { amount: 5, card_token: 'tok_SECRET_AAAA1111' },
      { context: alice, idempotencyKey: key },
    );
    expect(first.status === 'failed' && first.error.code).toBe('http_504'); // outcome unknown: the key stays claimed
    const second = await runner.invoke(
      'charge',
      { amount: 5, card_token: 'tok_OTHER_BBBB2222' },
      { context: alice, idempotencyKey: key },
    );
    expect(second.status === 'failed' && second.error.code).toBe(first.status === 'failed' && first.error.code);
    expect(JSON.stringify(second)).not.toContain('tok_SECRET_AAAA1111');
    expect(second.status === 'failed' && second.error.message).toContain('still waiting for its answer');
    expect(second.status === 'failed' && second.error.message).toContain('[REDACTED]');
    await runner.close();
  });
});

describe.each(stores)('a kept result keeps its types, and a fractional TTL (%s)', (_, store) => {
  const receipt = defineTool({
    name: 'charge',
    description: 'charges a card',
    input: z.object({ cents: z.bigint() }),
    output: z.object({ cents: z.bigint(), at: z.date() }),
    effect: 'write',
    idempotencyTtlMs: 86_400_000 / 7, // 12342857.14…: Redis refused a fraction, and kept nothing
  });
  it('a write returning a BigInt and a Date is called once; the cached answer from another runner has both', async () => {
    const at = new Date('2023-11-14T22:13:20.000Z');
    const invoker = createMockInvoker({ charge: ({ cents }: { cents: bigint }) => ({ cents, at }) });
    const idempotency = store(); // Redis and PostgreSQL read the result back from the server
    const [a, b] = [0, 1].map(() => createRunner({ invoker, tools: [receipt], stores: { idempotency } }));
    const key = unique('charge');
    const first = await a!.invoke('charge', { cents: 12345n }, { idempotencyKey: key, context: alice });
    expect(first.status === 'completed' && first.output).toEqual({ cents: 12345n, at });
    const again = await b!.invoke('charge', { cents: 12345n }, { idempotencyKey: key, context: alice });
    expect(again.status).toBe('completed'); // it was never kept (BigInt), and waited its claim out
    expect(again.status === 'completed' && again.output).toEqual({ cents: 12345n, at }); // a string for the Date
    expect(again.trace.steps[0]!.status).toBe('cached');
    expect(invoker.calls).toHaveLength(1);
    await a!.close();
    await b!.close();
  });
});
