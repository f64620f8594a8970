// Durable runs keep their promises on every run store (memory, and the real Redis and PostgreSQL):
// compensation is part of the record, a refused value ends the run, a lease-lost owner undoes
// nothing, a run id is bound to its chain and context, recovery claims only what it can continue,
// run ids are checked before a store is asked. The runners share a clock the test moves, so leases
// expire on cue (every store compares leases with the time the runner passes it).
import Redis from 'ioredis';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createRunner,
  defineChain,
  defineTool,
  functionInvoker,
  ref,
  type Runner,
  type ToolCall,
} from '../../src/index.js';
import { type RunStore } from '../../src/stores/index.js';
import { atEndWrite } from '../helpers/end-write.js';
import { postgresStores } from '../../src/postgres/index.js';
import { redisStores } from '../../src/redis/index.js';
import { memoryIdempotencyStore } from '../../src/stores/memory.js';
import type { IdempotencyStore } from '../../src/stores/types.js';
import { memoryRunStore } from '../../src/testing/index.js';

const redis = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true, maxRetriesPerRequest: 1 });
const pool = new pg.Pool({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test', max: 4 });
const tag = `ck_scn_${process.pid}_${Date.now() % 1_000_000}`;
const schemas: string[] = [];
let seq = 0;
afterAll(async () => {
  const keys = await redis.keys(`${tag}*`);
  if (keys.length > 0) await redis.del(...keys);
  for (const s of schemas) await pool.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  redis.disconnect();
  await pool.end();
});

type Kind = 'memory' | 'redis' | 'postgres';
interface Stores {
  runs: RunStore;
  idempotency: IdempotencyStore;
}
/** A fresh namespace on the store of `kind`. */
function storesOf(kind: Kind, now: () => number): Stores {
  const ns = `${tag}_${++seq}`;
  if (kind === 'redis') {
    const s = redisStores(redis, { prefix: ns, pollMs: 5 });
    return { runs: s.runs, idempotency: s.idempotency };
  }
  if (kind === 'postgres') {
    schemas.push(ns);
    const s = postgresStores(pool, { schema: ns, pollMs: 5 });
    return { runs: s.runs, idempotency: s.idempotency };
  }
  const idempotency = memoryIdempotencyStore({ now });
  return { runs: memoryRunStore({ idempotency, now }), idempotency };
}

const LEASE = 60_000; // renewals every 20 s of real time: none happens during a test, the clock moves leases
const ctx = z.object({ userId: z.string() });
const read = defineTool({
  name: 'read',
  description: 'r',
  input: z.object({ n: z.number() }),
  output: z.object({ n: z.number() }),
  effect: 'read',
});
// These writes honour their idempotency key (recovery may call them again under it); a plain write is parked in doubt instead (doubt.test.ts).
const reserve = defineTool({
  name: 'reserve',
  description: 'w',
  input: z.object({ n: z.number() }),
  output: z.object({ id: z.string() }),
  effect: 'write',
  idempotent: true,
});
const ship = defineTool({
  name: 'ship',
  description: 's',
  input: z.object({ id: z.string() }),
  output: z.object({ ok: z.boolean() }),
  effect: 'write',
  retry: false,
  idempotent: true,
});
const release = defineTool({
  name: 'release',
  description: 'u',
  input: z.object({ id: z.string() }),
  output: z.object({ ok: z.boolean() }),
  effect: 'write',
});
const keep = defineTool({
  name: 'keep',
  description: 'k',
  input: z.object({ n: z.number() }),
  output: z.any(),
  effect: 'write',
});
const pay = defineTool({
  name: 'pay',
  description: 'p',
  input: z.object({ n: z.number() }),
  output: z.object({ paid: z.boolean() }),
  effect: 'write',
});

const order = defineChain({
  name: 'scn_order',
  input: z.object({ n: z.number() }),
  context: ctx,
  timeoutMs: 600_000,
  steps: [
    { id: 'a', tool: read, input: { n: ref('input', 'n') } },
    {
      id: 'reserve',
      tool: reserve,
      input: { n: ref('a', 'n') },
      compensate: { tool: release, input: { id: ref('reserve', 'id') } },
    },
    { id: 'ship', tool: ship, input: { id: ref('reserve', 'id') } },
  ],
  output: (s) => ({ secret: `ssn-of-${(s.context as { userId: string }).userId}`, shipped: s.results.ship }),
});
const kept = (last: boolean) =>
  defineChain({
    name: last ? 'scn_keep_last' : 'scn_keep',
    input: z.object({ n: z.number() }),
    context: ctx,
    timeoutMs: 600_000,
    steps: last
      ? [
          { id: 'a', tool: read, input: { n: ref('input', 'n') } },
          { id: 'k', tool: keep, input: { n: ref('a', 'n') } },
        ]
      : [
          { id: 'k', tool: keep, input: { n: ref('input', 'n') } },
          { id: 'a', tool: read, input: { n: ref('k', 'n') } },
        ],
  });
// A write keyed by what it does (not by run and step): its key goes through the idempotency store.
const charge = defineTool({
  name: 'charge',
  description: 'c',
  input: z.object({ n: z.number() }),
  output: z.object({ by: z.string() }),
  effect: 'write',
  idempotent: true,
  retry: false,
  idempotencyKey: (input) => `charge-${input.n}`,
});
const chargeChain = defineChain({
  name: 'scn_charge',
  input: z.object({ n: z.number() }),
  context: ctx,
  timeoutMs: 600_000,
  steps: [{ id: 'c', tool: charge, input: { n: ref('input', 'n') }, confirm: false }],
});
const payChain = defineChain({
  name: 'scn_pay',
  input: z.object({ n: z.number() }),
  context: ctx,
  timeoutMs: 600_000,
  steps: [{ id: 'p', tool: pay, input: { n: ref('input', 'n') } }],
});

type Impl = Partial<
  Record<'read' | 'reserve' | 'ship' | 'release' | 'keep' | 'pay' | 'charge', (call: ToolCall) => unknown>
>;
const runners: Runner[] = [];
afterEach(async () => {
  for (const r of runners.splice(0)) await r.close();
});
const never = (): Promise<never> => new Promise(() => {});
const tick = (ms = 20): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe.each(['memory', 'redis', 'postgres'] as const)('durable runs on %s', (kind) => {
  let t = 1_700_000_000_000;
  const now = (): number => t;
  /** A runner on `stores` (its own process, as far as the run store can tell), recording its tool calls. */
  function runner(stores: Stores, impl: Impl = {}, chains = [order, payChain, chargeChain, kept(false), kept(true)]) {
    const calls: string[] = [];
    const tool = (name: keyof Impl, dflt: (call: ToolCall) => unknown) => async (_input: unknown, call: ToolCall) => {
      calls.push(name);
      return (impl[name] ?? dflt)(call);
    };
    const invoker = functionInvoker([read, reserve, ship, release, keep, pay, charge], {
      read: tool('read', (c) => ({ n: (c.input as { n: number }).n })) as never,
      reserve: tool('reserve', (c) => ({ id: `r-${c.runId}` })) as never,
      ship: tool('ship', () => ({ ok: true })) as never,
      release: tool('release', () => ({ ok: true })) as never,
      keep: tool('keep', () => new Map([[1, 2]])) as never,
      pay: tool('pay', () => ({ paid: true })) as never,
      charge: tool('charge', () => ({ by: 'default' })) as never,
    });
    const r = createRunner({
      invoker,
      tools: [read, reserve, ship, release, keep, pay, charge],
      chains,
      stores,
      leaseMs: LEASE,
      now,
    });
    runners.push(r);
    return { runner: r, calls };
  }
  const alice = { context: { userId: 'alice' } };
  const rid = (what: string): string => `${what}-${++seq}`;
  const failOnce = () => {
    let failed = false;
    return () => {
      if (failed) return { ok: true };
      failed = true;
      throw Object.assign(new Error('carrier busy'), { status: 503 });
    };
  };

  it('compensation is recorded: a store failing once at the end write → recovery never calls the failed step again and ends failed', async () => {
    const stores = storesOf(kind, now);
    let finishFails = 1;
    const flaky = atEndWrite(stores.runs, (write) =>
      finishFails-- > 0 ? Promise.reject(new Error('connection reset')) : write(),
    );
    const owner = runner({ runs: flaky, idempotency: stores.idempotency }, { ship: failOnce() });
    const runId = rid('comp');
    const first = await owner.runner.run(order, { n: 1 }, { ...alice, runId });
    expect(first.status === 'failed' && first.error.code).toBe('store_unavailable'); // the end was not recorded
    expect(owner.calls).toEqual(['read', 'reserve', 'ship', 'release']);
    t += LEASE + 1_000;
    const heir = runner(stores);
    const [recovered] = await heir.runner.recover();
    expect(recovered?.status).toBe('failed');
    expect(recovered?.status === 'failed' && [recovered.error.code, recovered.compensated]).toEqual([
      'http_503',
      ['reserve'],
    ]);
    expect(heir.calls).toEqual([]); // neither ship again nor a second release
    expect((await heir.runner.getRun(runId))?.status).toBe('failed');
    expect(await heir.runner.recover()).toEqual([]);
  });

  it('compensation is recorded: an owner that dies at the end write after its undo: recovery calls nothing again and ends the run failed', async () => {
    const stores = storesOf(kind, now);
    let finishes = 0;
    const dying = atEndWrite(stores.runs, () => (finishes++, never())); // dies at the end write
    const owner = runner({ runs: dying, idempotency: stores.idempotency }, { ship: failOnce() });
    const runId = rid('died');
    void owner.runner.run(order, { n: 2 }, { ...alice, runId });
    for (let i = 0; i < 100 && finishes === 0; i++) await tick(10);
    expect(owner.calls).toEqual(['read', 'reserve', 'ship', 'release']);
    t += LEASE + 1_000;
    const heir = runner(stores);
    const [recovered] = await heir.runner.recover();
    expect(recovered?.status === 'failed' && recovered.compensated).toEqual(['reserve']);
    expect(heir.calls).toEqual([]);
  });

  it('a value the journal refuses ends the run failed in the store: getRun agrees, recover() finds nothing, the write ran once', async () => {
    for (const last of [false, true]) {
      const stores = storesOf(kind, now);
      const owner = runner(stores);
      const runId = rid('map');
      const r = await owner.runner.run(kept(last), { n: 1 }, { ...alice, runId });
      expect(r.status === 'failed' && r.error.code).toBe('checkpoint_unserializable');
      const info = await owner.runner.getRun(runId);
      expect(info?.status).toBe('failed');
      expect(info?.result?.status === 'failed' && info.result.error.code).toBe('checkpoint_unserializable');
      t += LEASE + 1_000;
      const heir = runner(stores);
      expect(await heir.runner.recover()).toEqual([]);
      expect([...owner.calls, ...heir.calls].filter((c) => c === 'keep')).toHaveLength(1);
    }
  });

  it('an owner that stalled past its lease undoes nothing: the new owner completed the run', async () => {
    const stores = storesOf(kind, now);
    let failShip!: (e: Error) => void;
    const stalled = runner(stores, { ship: () => new Promise((_, reject) => (failShip = reject)) });
    const runId = rid('stall');
    const pending = stalled.runner.run(order, { n: 3 }, { ...alice, runId });
    for (let i = 0; i < 100 && !failShip; i++) await tick(10);
    t += LEASE + 1_000; // A is silent past its lease
    const heir = runner(stores);
    const taken = await heir.runner.run(order, { n: 3 }, { ...alice, runId }); // the caller's retry takes it over
    expect(taken.status).toBe('completed');
    failShip(Object.assign(new Error('carrier busy'), { status: 503 })); // A wakes up to a failure
    const late = await pending;
    expect(late.status === 'failed' && late.error.code).toBe('lease_lost');
    expect(stalled.calls).not.toContain('release');
    expect(heir.calls).not.toContain('release');
    expect((await heir.runner.getRun(runId))?.status).toBe('completed');
  });

  it('a stalled owner whose write fails late leaves the claim its successor took over: a duplicate waits for the successor, the write runs twice at most', async () => {
    const stores = storesOf(kind, now);
    let failA!: (e: Error) => void;
    const stalled = runner(stores, { charge: () => new Promise((_, reject) => (failA = reject)) });
    const runId = rid('late-fail');
    const pending = stalled.runner.run(chargeChain, { n: 5 }, { ...alice, runId });
    for (let i = 0; i < 100 && !failA; i++) await tick(10);
    t += LEASE + 1_000; // A is silent past its lease
    let answerB!: (v: unknown) => void;
    const heir = runner(stores, { charge: () => new Promise((resolve) => (answerB = resolve)) });
    const taken = heir.runner.run(chargeChain, { n: 5 }, { ...alice, runId }); // takes the run and the key's claim over
    for (let i = 0; i < 100 && !answerB; i++) await tick(10);
    failA(Object.assign(new Error('card declined'), { status: 402 })); // A's call fails now: not A's claim any more
    await pending;
    const third = runner(stores);
    const duplicate = third.runner.run(chargeChain, { n: 5 }, { ...alice, runId: rid('dup') }); // the same charge, elsewhere
    await tick(100);
    answerB({ by: 'heir' });
    expect((await taken).status).toBe('completed');
    const dup = await duplicate;
    expect(dup.status === 'completed' && dup.output).toEqual({ by: 'heir' }); // it waited for the heir's call
    expect(third.calls).toEqual([]);
  });

  it('an owner whose lease was taken calls no further tool: a call is fenced by the lease before it starts', async () => {
    const stores = storesOf(kind, now);
    const confirmed = defineChain({
      name: 'scn_confirmed',
      input: z.object({ n: z.number() }),
      context: ctx,
      timeoutMs: 600_000,
      steps: [
        { id: 'a', tool: read, input: { n: ref('input', 'n') } },
        { id: 'reserve', tool: reserve, input: { n: ref('a', 'n') }, confirm: { prompt: 'Reserve?' } },
      ],
    });
    const chains = [confirmed];
    const stalled = runner(stores, {}, chains);
    const runId = rid('fence');
    let yes!: (v: boolean) => void;
    const asked = new Promise<boolean>((r) => (yes = r));
    let waiting = false;
    const pending = stalled.runner.run(
      confirmed,
      { n: 4 },
      { ...alice, runId, confirm: () => ((waiting = true), asked) },
    );
    for (let i = 0; i < 200 && !waiting; i++) await tick(10);
    t += LEASE + 1_000; // the user took longer than the lease to answer, and the owner was silent
    const heir = runner(stores, {}, chains);
    expect((await heir.runner.run(confirmed, { n: 4 }, { ...alice, runId })).status).toBe('awaiting_confirmation'); // taken over: it asks again
    yes(true);
    const late = await pending;
    expect(late.status === 'failed' && late.error.code).toBe('lease_lost');
    expect(stalled.calls).toEqual(['read']); // no second reserve from the owner that lost the run
    expect(heir.calls).toEqual([]);
    expect((await heir.runner.getRun(runId))?.status).toBe('awaiting_confirmation');
  });

  it('an owner whose renewal finds its lease lost stops at once: its tool in flight sees its signal abort, nothing is undone', async () => {
    const stores = storesOf(kind, now);
    let aborted: unknown = false;
    let started = false;
    const invoker = functionInvoker([read, reserve, ship, release, keep, pay], {
      read: async ({ n }) => ({ n }),
      reserve: async ({ n }) => ({ id: `r${n}` }),
      release: async () => ({ ok: true }),
      keep: async () => null,
      pay: async () => ({ paid: true }),
      ship: (_input, call) =>
        new Promise((_, reject) => {
          started = true;
          call.signal.addEventListener('abort', () => ((aborted = call.signal.reason), reject(new Error('stopped'))));
        }),
    });
    const released: string[] = [];
    const owner = createRunner({
      invoker: (call) => (call.tool === 'release' && released.push(call.runId), invoker(call)),
      tools: [read, reserve, ship, release, keep, pay],
      chains: [order],
      stores,
      leaseMs: 3_000,
      now,
    }); // renewals 1 s apart: the take-over below falls between two
    runners.push(owner);
    const runId = rid('renewal');
    const pending = owner.run(order, { n: 8 }, { ...alice, runId });
    for (let i = 0; i < 200 && !started; i++) await tick(10);
    t += 10_000;
    const heir = runner(stores, { ship: () => never() });
    void heir.runner.run(order, { n: 8 }, { ...alice, runId }); // takes it over
    const began = Date.now();
    const late = await pending; // the owner's next renewal finds the run gone
    expect(Date.now() - began).toBeLessThan(3_000);
    // The tool is told why: another runner has the run now (not that its caller cancelled it).
    expect(aborted).toMatchObject({ kind: 'cancelled', message: 'Another runner took the run over.' });
    expect(late.status === 'failed' && late.error.code).toBe('lease_lost');
    expect(released).toEqual([]);
  });

  it('a run id is bound to its chain and context: another user or chain gets run_id_taken and nothing of the run', async () => {
    const stores = storesOf(kind, now);
    const a = runner(stores);
    const runId = rid('bound');
    const done = await a.runner.run(order, { n: 5 }, { ...alice, runId });
    expect(done.status === 'completed' && done.output).toMatchObject({ secret: 'ssn-of-alice' });
    const b = runner(stores);
    for (const attempt of [
      () => b.runner.run(order, { n: 5 }, { context: { userId: 'bob' }, runId }),
      () => b.runner.run(payChain, { n: 5 }, { ...alice, runId }),
    ]) {
      const r = await attempt();
      expect(r.status === 'failed' && [r.error.category, r.error.code]).toEqual(['conflict', 'run_id_taken']);
      expect(JSON.stringify(r)).not.toContain('ssn-of-alice');
      expect(r.trace.steps).toEqual([]);
    }
    expect(b.calls).toEqual([]);
    expect((await a.runner.run(order, { n: 5 }, { ...alice, runId })).status).toBe('completed'); // Alice's retry still gets hers
  });

  it('a run id in flight is bound too: another user neither takes it over nor ends it, even past its lease', async () => {
    const stores = storesOf(kind, now);
    let answer!: (v: unknown) => void;
    const a = runner(stores, { ship: () => new Promise((r) => (answer = r)) });
    const runId = rid('inflight');
    const pending = a.runner.run(order, { n: 6 }, { ...alice, runId });
    for (let i = 0; i < 100 && !answer; i++) await tick(10);
    t += LEASE + 1_000;
    const b = runner(stores);
    for (const r of [
      await b.runner.run(order, { n: 6 }, { context: { userId: 'bob' }, runId }),
      await b.runner.run(payChain, { n: 6 }, { ...alice, runId }),
    ]) {
      expect(r.status === 'failed' && r.error.code).toBe('run_id_taken');
    }
    expect(await stores.runs.get(runId)).toMatchObject({
      status: 'running',
      journal: [{ step: 'a' }, { step: 'reserve' }],
    });
    t -= LEASE + 1_000; // A's lease holds again on the store's clock: A finishes its own run
    answer({ ok: true });
    expect((await pending).status).toBe('completed');
    expect(b.calls).toEqual([]);
  });

  it('recover() claims only runs of a chain (and fingerprint) it has; the others stay untouched for a runner that has them', async () => {
    const stores = storesOf(kind, now);
    const a = runner(stores, { ship: () => never() });
    const runId = rid('mine');
    void a.runner.run(order, { n: 7 }, { ...alice, runId });
    for (let i = 0; i < 200 && (await stores.runs.get(runId))?.journal.length !== 2; i++) await tick(10);
    t += LEASE + 1_000;
    const before = await stores.runs.get(runId);
    const without = runner(stores, {}, [payChain]);
    const changed = defineChain({
      name: 'scn_order',
      input: z.object({ n: z.number() }),
      context: ctx,
      timeoutMs: 600_000,
      steps: [{ id: 'a', tool: read, input: { n: ref('input', 'n') } }],
    });
    const other = runner(stores, {}, [changed]);
    expect(await without.runner.recover()).toEqual([]);
    expect(await other.runner.recover()).toEqual([]);
    expect(await stores.runs.get(runId)).toEqual(before); // untouched: same owner, lease and journal
    expect([...without.calls, ...other.calls]).toEqual([]);
    const heir = runner(stores);
    const [recovered] = await heir.runner.recover();
    expect(recovered?.status).toBe('completed');
    expect(heir.calls).toEqual(['ship']);
  });

  it('a run no runner can continue is ended deadline_exceeded once its deadline is well past, by any runner', async () => {
    const stores = storesOf(kind, now);
    const short = defineChain({
      name: 'scn_short',
      input: z.object({ n: z.number() }),
      context: ctx,
      timeoutMs: 1_000,
      steps: [{ id: 'a', tool: read, input: { n: ref('input', 'n') } }],
    });
    const a = runner(stores, { read: () => never() }, [short]);
    const runId = rid('orphan');
    void a.runner.run(short, { n: 1 }, { ...alice, runId });
    for (let i = 0; i < 200 && !(await stores.runs.get(runId)); i++) await tick(10);
    await a.runner.close(); // its owner dies: its own deadline timer cannot end the run first
    t += LEASE + 1_000;
    const without = runner(stores, {}, [payChain]);
    expect(await without.runner.recover()).toEqual([]); // past its deadline, but its own runners get the first turn
    t += 10 * 60_000;
    const [ended] = await without.runner.recover();
    expect(ended?.status === 'failed' && [ended.error.category, ended.error.code]).toEqual([
      'timeout',
      'deadline_exceeded',
    ]);
    expect((await without.runner.getRun(runId))?.status).toBe('failed');
  });

  it('run ids are checked before a store is asked: invalid_run_id as a result, never a rejection', async () => {
    const stores = storesOf(kind, now);
    let asked = 0;
    const counting: RunStore = {
      ...stores.runs,
      create: (...a) => (asked++, stores.runs.create(...a)),
      get: (...a) => (asked++, stores.runs.get(...a)),
    };
    const { runner: r } = runner({ runs: counting, idempotency: stores.idempotency });
    const hostile = {
      toString: () => {
        throw new Error('boom');
      },
    };
    for (const runId of [
      '',
      'x'.repeat(256),
      'a\nb',
      'tab\there',
      '\u0000',
      'order-\uD800',
      'order-\uDBFF',
      { id: 1 },
      hostile,
      42,
    ]) {
      const result = await r.run(order, { n: 1 }, { ...alice, runId: runId as string });
      expect(result.status === 'failed' && [result.error.category, result.error.code]).toEqual([
        'invalid_input',
        'invalid_run_id',
      ]);
      await expect(r.getRun(runId as string)).rejects.toMatchObject({
        info: { category: 'invalid_input', code: 'invalid_run_id' },
      });
    }
    expect(asked).toBe(0);
    expect((await r.run(order, { n: 1 }, { ...alice, runId: `ok ${'é'.repeat(200)} 🙂` })).status).toBe('completed');
  });
});
