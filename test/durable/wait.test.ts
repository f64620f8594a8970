// sleep and waitFor (API.md §12): a durable run that sleeps 1 s or more, or waits for a signal, is
// parked `waiting` (no owner, no lease) and `run()` resolves at once; another runner's recovery wakes
// it, `runner.signal` from any instance continues it exactly once. On memory, Redis and PostgreSQL;
// the runners share a clock the test moves, so nothing waits for real.
import Redis from 'ioredis';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  chain,
  createRunner,
  defineChain,
  defineTool,
  functionInvoker,
  ref,
  SignalRefused,
  type Runner,
  type RunEvent,
} from '../../src/index.js';
import type { RunStore } from '../../src/stores/index.js';
import { postgresStores } from '../../src/postgres/index.js';
import { redisStores } from '../../src/redis/index.js';
import { memoryIdempotencyStore } from '../../src/stores/memory.js';
import type { IdempotencyStore } from '../../src/stores/types.js';
import { memoryRunStore } from '../../src/testing/index.js';

const redis = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true, maxRetriesPerRequest: 1 });
const pool = new pg.Pool({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test', max: 4 });
const tag = `ck_wait_${process.pid}_${Date.now() % 1_000_000}`;
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

const reserve = defineTool({
  name: 'reserve',
  description: 'w',
  input: z.object({ n: z.number() }),
  output: z.object({ id: z.string() }),
  effect: 'write',
  idempotent: true,
});
const release = defineTool({
  name: 'release',
  description: 'u',
  input: z.object({ id: z.string() }),
  output: z.object({ ok: z.boolean() }),
  effect: 'write',
  idempotent: true,
});
const notify = defineTool({
  name: 'notify',
  description: 'n',
  input: z.object({ ok: z.boolean() }),
  output: z.object({ sent: z.boolean() }),
  effect: 'write',
  idempotent: true,
});
const Review = z.object({ ok: z.boolean(), by: z.string() });

const sleeper = chain('sleeper', { input: z.object({ n: z.number() }), timeoutMs: 60_000 })
  .tool('reserve', reserve, (r) => ({ n: r('input', 'n') }))
  .sleep('cool_down', 2_000)
  .tool('notify', notify, () => ({ ok: true }))
  .output((s) => ({ id: s.results.reserve.id, sent: s.results.notify.sent, slept: s.results.cool_down }));

const reviewed = defineChain({
  name: 'reviewed',
  input: z.object({ n: z.number() }),
  timeoutMs: 60_000,
  steps: [
    {
      id: 'reserve',
      tool: reserve,
      input: { n: ref('input', 'n') },
      compensate: { tool: release, input: { id: ref('reserve', 'id') } },
    },
    { id: 'review', waitFor: { signal: 'review', schema: Review, timeoutMs: 3_600_000 } },
    { id: 'notify', tool: notify, input: { ok: ref('review', 'ok') } },
  ] as const,
  output: (s) => ({ ok: s.results.review.ok, by: s.results.review.by, sent: s.results.notify.sent }),
});

// Sleeps and waits inside sub-chains park the whole run (API.md §12), named by their own ids.
const itemSleeps = chain('item_sleeps', { input: z.object({ n: z.number() }) })
  .tool('reserve', reserve, (r) => ({ n: r('input', 'n') }))
  .sleep('nap', 2_000)
  .tool('notify', notify, () => ({ ok: true }))
  .output((s) => s.results.notify.sent);
const sleepsInside = chain('sleeps_inside', {
  input: z.object({ items: z.array(z.object({ n: z.number() })) }),
  timeoutMs: 60_000,
})
  .forEach('each', (ref) => ({ over: ref('input', 'items'), chain: itemSleeps, input: (item) => ({ n: item('n') }) }))
  .output((s) => s.results.each);
const askReview = chain('ask_review', { input: z.object({ n: z.number() }) })
  .tool('reserve', reserve, (r) => ({ n: r('input', 'n') }))
  .waitFor('review', { signal: 'review', schema: Review, timeoutMs: 3_600_000 })
  .output((s) => s.results.review);
const reviewedInside = chain('reviewed_inside', { input: z.object({ n: z.number() }), timeoutMs: 60_000 })
  .chain('ask', askReview, (ref) => ({ n: ref('input', 'n') }))
  .tool('notify', notify, (ref) => ({ ok: ref('ask', 'ok') }))
  .output((s) => ({ by: s.results.ask.by, sent: s.results.notify.sent }));

// Two waits in a row for the same signal: a late take meant for the first must not land on the second.
const twoReviews = chain('two_reviews', { input: z.object({ n: z.number() }), timeoutMs: 60_000 })
  .waitFor('first', { signal: 'review', schema: Review, timeoutMs: 3_600_000 })
  .waitFor('second', { signal: 'review', schema: Review, timeoutMs: 3_600_000 })
  .output((s) => ({ first: s.results.first.by, second: s.results.second.by }));

const runners: Runner[] = [];
afterEach(async () => {
  for (const r of runners.splice(0)) await r.close();
});

describe.each(['memory', 'redis', 'postgres'] as const)('sleep and waitFor on %s', (kind) => {
  let t = 1_700_000_000_000;
  const now = (): number => t;
  function runner(stores: Stores, retention?: { completedMs: number }) {
    const calls: string[] = [];
    const tool = (name: string, fn: (input: any, call: any) => unknown) => async (input: unknown, call: unknown) => {
      calls.push(name);
      return fn(input, call);
    };
    const invoker = functionInvoker([reserve, release, notify], {
      reserve: tool('reserve', (_i, c) => ({ id: `r-${c.runId}` })) as never,
      release: tool('release', () => ({ ok: true })) as never,
      notify: tool('notify', () => ({ sent: true })) as never,
    });
    const r = createRunner({
      invoker,
      tools: [reserve, release, notify],
      chains: [sleeper, reviewed, sleepsInside, reviewedInside, twoReviews],
      stores,
      leaseMs: 30_000,
      now,
      ...(retention && { retention }),
    });
    runners.push(r);
    return { runner: r, calls };
  }
  const rid = (what: string): string => `${what}-${++seq}`;

  it('a run sleeping 2 s parks waiting and is woken by another runner after its own closed', async () => {
    const stores = storesOf(kind, now);
    const a = runner(stores);
    const runId = rid('sleep');
    const parked = await a.runner.run(sleeper, { n: 1 }, { runId });
    expect(parked.status).toBe('waiting');
    if (parked.status !== 'waiting') return;
    expect(parked.waiting).toEqual({ step: 'cool_down', until: t + 2_000 });
    const info = await a.runner.getRun(runId);
    expect(info).toMatchObject({ status: 'waiting', leaseUntil: 0, steps: ['reserve', 'cool_down'] });
    const listed = await a.runner.listRuns({ status: 'waiting' });
    expect(listed.runs.map((r) => [r.runId, r.waiting])).toEqual([[runId, { step: 'cool_down', until: t + 2_000 }]]);
    await a.runner.close();

    const b = runner(stores);
    expect(await b.runner.recover()).toEqual([]); // not yet due
    t += 2_001;
    const [woken, ...rest] = await b.runner.recover();
    expect(rest).toEqual([]);
    expect(woken).toMatchObject({ status: 'completed', output: { id: `r-${runId}`, sent: true, slept: null } });
    expect(b.calls).toEqual(['notify']); // reserve was journaled before the sleep
    expect(await b.runner.recover()).toEqual([]); // woken once
    expect((await b.runner.getRun(runId))?.status).toBe('completed');
  });

  it('keeps the events of a run waiting past its completed retention, and numbers them on after the wake', async () => {
    const stores = storesOf(kind, now);
    const a = runner(stores, { completedMs: 100 });
    const runId = rid('kept');
    expect((await a.runner.run(sleeper, { n: 1 }, { runId })).status).toBe('waiting');
    const seqs = async () => (await stores.runs.events!.read(runId, 0, 100)).map((e) => `${e.seq}:${e.type}`);
    const parked = await seqs();
    expect(parked.at(-1)).toMatch(/:run:end$/);
    t += 300; // the memory store's clock; Redis and PostgreSQL expire by the real one
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await seqs()).toEqual(parked); // it expired after 100 ms while the run waited
    t += 2_000;
    expect(await a.runner.recover()).toMatchObject([{ status: 'completed' }]);
    const all = await seqs();
    expect(all.slice(0, parked.length)).toEqual(parked);
    expect(all.map((e) => Number(e.split(':')[0]))).toEqual(all.map((_, i) => i + 1));
    expect(all.at(-1)).toMatch(/:run:end$/);
  });

  it('a watch of a waiting run ends when its runner closes (it went on reading, on a connection close() had let go)', async () => {
    const stores = storesOf(kind, now);
    const a = runner(stores);
    const runId = rid('closing');
    expect((await a.runner.run(reviewed, { n: 1 }, { runId })).status).toBe('waiting');
    const seen: string[] = [];
    const watched = (async () => {
      for await (const e of a.runner.watch(runId)) seen.push(e.type);
      return 'ended';
    })();
    for (let i = 0; i < 200 && !seen.includes('run:end'); i++) await new Promise((r) => setTimeout(r, 5));
    expect(seen.at(-1)).toBe('run:end'); // the park's: the watch goes on
    await a.runner.close();
    const late = new Promise((r) => setTimeout(r, 2_000, 'still watching'));
    expect(await Promise.race([watched, late])).toBe('ended');
    const after = a.runner.watch(runId)[Symbol.asyncIterator]();
    expect(await after.next()).toEqual({ done: true, value: undefined }); // a watch begun after close ends at once
  });

  it('a park the store fails to record answers store_unavailable, not waiting; recovery parks the run later', async () => {
    const stores = storesOf(kind, now);
    const failing: Stores = {
      ...stores,
      runs: { ...stores.runs, parkWaiting: () => Promise.reject(new Error('ECONNRESET')) },
    };
    const a = runner(failing);
    const runId = rid('unparked');
    const r = await a.runner.run(reviewed, { n: 1 }, { runId });
    expect(r).toMatchObject({ status: 'failed', error: { category: 'unavailable', code: 'store_unavailable' } });
    expect((await a.runner.getRun(runId))?.status).toBe('running');
    t += 60_000; // its lease ran out
    const b = runner(stores);
    expect(await b.runner.recover()).toMatchObject([{ status: 'waiting', waiting: { step: 'review' } }]);
    expect(a.calls).toEqual(['reserve']);
    expect(b.calls).toEqual([]); // reserve was journaled before the wait
  });

  it('a park the store refuses (another runner owns the run now) answers lease_lost, not store_unavailable', async () => {
    const stores = storesOf(kind, now);
    const taken: Stores = { ...stores, runs: { ...stores.runs, parkWaiting: () => Promise.resolve(false) } };
    const r = await runner(taken).runner.run(reviewed, { n: 1 }, { runId: rid('taken') });
    expect(r).toMatchObject({ status: 'failed', error: { category: 'conflict', code: 'lease_lost' } });
  });

  it('stream of a run that parks waiting goes on through its wake to its real end: every seq once, nothing made up', async () => {
    const stores = storesOf(kind, now);
    const a = runner(stores);
    const { runId, events, result } = a.runner.stream(sleeper, { n: 1 }, {});
    const seen: RunEvent[] = [];
    const reading = (async () => {
      for await (const e of events) seen.push(e);
    })();
    expect((await result).status).toBe('waiting');
    for (let i = 0; i < 50 && !seen.some((e) => e.type === 'run:end'); i++) await new Promise((r) => setTimeout(r, 10));
    t += 2_001;
    const [woken] = await a.runner.recover();
    expect(woken?.status).toBe('completed');
    await reading;
    const label = (e: RunEvent): string => (e.type === 'run:end' ? `run:end/${e.data.status}` : e.type);
    expect(seen.map((e) => e.seq)).toEqual(seen.map((_, i) => i + 1));
    expect(seen.filter((e) => e.type === 'run:end').map(label)).toEqual(['run:end/waiting', 'run:end/completed']);
    const again: RunEvent[] = [];
    for await (const e of a.runner.watch(runId)) again.push(e);
    expect(again.map((e) => [e.seq, label(e)])).toEqual(seen.map((e) => [e.seq, label(e)]));
  });

  it('a sleep inside a forEach item parks the whole run at that item; each wake goes on from there, nothing called twice', async () => {
    const stores = storesOf(kind, now);
    const a = runner(stores);
    const runId = rid('item-sleep');
    const parked = await a.runner.run(sleepsInside, { items: [{ n: 1 }, { n: 2 }] }, { runId });
    expect(parked).toMatchObject({ status: 'waiting', waiting: { step: 'each/0/nap', until: t + 2_000 } });
    expect(a.calls).toEqual(['reserve']);
    await a.runner.close();
    const b = runner(stores);
    t += 2_001;
    const [second] = await b.runner.recover();
    expect(second).toMatchObject({ status: 'waiting', waiting: { step: 'each/1/nap', until: t + 2_000 } });
    t += 2_001;
    const [done] = await b.runner.recover();
    expect(done).toMatchObject({ status: 'completed', output: [true, true] });
    expect(b.calls).toEqual(['notify', 'reserve', 'notify']); // item 0's reserve was journaled before its sleep
    if (done?.status !== 'completed') return;
    const items = done.trace.steps.find((s) => s.id === 'each')!.children!;
    expect(items.map((i) => i.children!.map((c) => `${c.id}:${c.status}`))).toEqual([
      ['each/0/reserve:success', 'each/0/nap:success', 'each/0/notify:success'],
      ['each/1/reserve:success', 'each/1/nap:success', 'each/1/notify:success'],
    ]);
  });

  it('a waitFor inside a sub-chain parks the run; its signal is checked against that step and taken once', async () => {
    const stores = storesOf(kind, now);
    const a = runner(stores);
    const runId = rid('sub-wait');
    const parked = await a.runner.run(reviewedInside, { n: 3 }, { runId });
    expect(parked).toMatchObject({ status: 'waiting', waiting: { step: 'ask/review', signal: 'review' } });
    const b = runner(stores);
    await expect(b.runner.signal(runId, 'review', { ok: 'yes' })).rejects.toBeInstanceOf(SignalRefused);
    const [first, second] = await Promise.all([
      b.runner.signal(runId, 'review', { ok: true, by: 'ada' }),
      a.runner.signal(runId, 'review', { ok: true, by: 'bob' }),
    ]);
    const results = [first, second].filter((r) => r !== 'not_waiting');
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ status: 'completed', output: { sent: true } });
    expect([...a.calls, ...b.calls].sort()).toEqual(['notify', 'reserve']);
  });

  it('the recovery poller of another runner wakes a sleeping run once its time has come', async () => {
    const stores = storesOf(kind, now);
    const a = runner(stores);
    const runId = rid('poll');
    expect((await a.runner.run(sleeper, { n: 5 }, { runId })).status).toBe('waiting');
    await a.runner.close();
    const invoker = functionInvoker([reserve, release, notify], {
      reserve: () => ({ id: 'x' }),
      release: () => ({ ok: true }),
      notify: () => ({ sent: true }),
    });
    const b = createRunner({
      invoker,
      tools: [reserve, release, notify],
      chains: [sleeper, reviewed],
      stores,
      leaseMs: 30_000,
      now,
      recover: { intervalMs: 10 },
    });
    runners.push(b);
    await new Promise((r) => setTimeout(r, 50));
    expect((await b.getRun(runId))?.status).toBe('waiting'); // polled, not yet due
    t += 2_001;
    for (let i = 0; i < 200 && (await b.getRun(runId))?.status !== 'completed'; i++)
      await new Promise((r) => setTimeout(r, 10));
    expect((await b.getRun(runId))?.result).toMatchObject({
      status: 'completed',
      output: { id: `r-${runId}`, sent: true },
    });
  });

  it('a signal continues a waiting run from any instance, exactly once; a refused payload leaves it waiting', async () => {
    const stores = storesOf(kind, now);
    const a = runner(stores);
    const runId = rid('review');
    const parked = await a.runner.run(reviewed, { n: 2 }, { runId });
    expect(parked).toMatchObject({
      status: 'waiting',
      waiting: { step: 'review', signal: 'review', until: t + 3_600_000 },
    });
    const b = runner(stores);
    await expect(b.runner.signal(runId, 'review', { ok: 'yes' })).rejects.toBeInstanceOf(SignalRefused);
    await expect(b.runner.signal(runId, 'review', { ok: 'yes' })).rejects.toMatchObject({
      category: 'invalid_input',
      code: 'invalid_signal',
    });
    expect((await b.runner.getRun(runId))?.status).toBe('waiting');
    expect(await b.runner.signal(runId, 'other', { ok: true, by: 'x' })).toBe('not_waiting');
    expect(await b.runner.signal('nope-1', 'review', { ok: true, by: 'x' })).toBe('not_found');
    const c = runner(stores);
    const [one, two] = await Promise.all([
      b.runner.signal(runId, 'review', { ok: true, by: 'ops:alice' }),
      c.runner.signal(runId, 'review', { ok: false, by: 'ops:bob' }),
    ]);
    const results = [one, two];
    expect(results.filter((r) => r === 'not_waiting')).toHaveLength(1);
    const ran = results.find((r) => r !== 'not_waiting')!;
    expect(ran).toMatchObject({ status: 'completed' });
    expect([...b.calls, ...c.calls]).toEqual(['notify']);
    expect(a.calls).toEqual(['reserve']);
    expect(await b.runner.signal(runId, 'review', { ok: true, by: 'again' })).toBe('not_waiting');
    const events: RunEvent[] = [];
    for await (const e of a.runner.watch(runId)) events.push(e);
    expect(events.filter((e) => e.type === 'signal:received').map((e) => [e.step, e.data])).toEqual([
      ['review', { signal: 'review' }],
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'run:end', data: { status: 'completed' } });
  });

  /** Stores whose takes wait until `release()`: a taker that read the run, then reached the store late. */
  function lateTakes(stores: Stores) {
    let release!: () => void;
    let reached!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const taking = new Promise<void>((r) => (reached = r));
    const takeParked: RunStore['takeParked'] = async (...args) => {
      reached();
      await held;
      return stores.runs.takeParked!(...args);
    };
    return { stores: { ...stores, runs: { ...stores.runs, takeParked } }, taking, release };
  }

  it('a signal that read the run at its first wait does not take it at the second (it overwrote the first payload)', async () => {
    const stores = storesOf(kind, now);
    const a = runner(stores);
    const late = lateTakes(stores);
    const b = runner(late.stores);
    const runId = rid('twice');
    expect(await a.runner.run(twoReviews, { n: 1 }, { runId })).toMatchObject({ waiting: { step: 'first' } });
    const fromB = b.runner.signal(runId, 'review', { ok: true, by: 'B' });
    await late.taking;
    expect(await a.runner.signal(runId, 'review', { ok: true, by: 'A' })).toMatchObject({
      status: 'waiting',
      waiting: { step: 'second' },
    });
    late.release();
    expect(await fromB).toBe('not_waiting');
    expect((await a.runner.getRun(runId))?.steps).toEqual(['first']);
    expect(await a.runner.signal(runId, 'review', { ok: true, by: 'C' })).toMatchObject({
      status: 'completed',
      output: { first: 'A', second: 'C' },
    });
  });

  it('a wake-up that read the run past its first wait does not fail it at the second, where a signal moved it', async () => {
    const stores = storesOf(kind, now);
    const a = runner(stores);
    const late = lateTakes(stores);
    const b = runner(late.stores);
    const runId = rid('woken');
    expect((await a.runner.run(twoReviews, { n: 1 }, { runId })).status).toBe('waiting');
    const t0 = t;
    t += 3_600_001; // b's clock: the first wait timed out
    const recovered = b.runner.recover();
    await late.taking;
    t = t0 + 1_000; // a's signal came within the timeout
    expect(await a.runner.signal(runId, 'review', { ok: true, by: 'A' })).toMatchObject({
      waiting: { step: 'second' },
    });
    late.release();
    expect(await recovered).toEqual([]);
    expect(await a.runner.getRun(runId)).toMatchObject({ status: 'waiting', steps: ['first'] });
  });

  it('past its timeout a waitFor fails the run timeout/wait_timeout at recovery, undoing what it completed', async () => {
    const stores = storesOf(kind, now);
    const a = runner(stores);
    const runId = rid('timeout');
    expect((await a.runner.run(reviewed, { n: 3 }, { runId })).status).toBe('waiting');
    t += 3_600_001;
    expect(await a.runner.signal(runId, 'review', { ok: true, by: 'late' })).toBe('not_waiting');
    const b = runner(stores);
    const [ended] = await b.runner.recover();
    expect(ended).toMatchObject({
      status: 'failed',
      error: { category: 'timeout', code: 'wait_timeout', step: 'review' },
      compensated: ['reserve'],
    });
    expect(b.calls).toEqual(['release']);
    expect((await b.runner.getRun(runId))?.status).toBe('failed');
  });

  it('cancelling a waiting run ends it run_cancelled, undoing its completed steps, once', async () => {
    const stores = storesOf(kind, now);
    const a = runner(stores);
    const runId = rid('cancel');
    expect((await a.runner.run(reviewed, { n: 4 }, { runId })).status).toBe('waiting');
    const b = runner(stores);
    expect(await b.runner.cancel(runId, { reason: 'customer left' })).toBe('cancelled');
    expect(b.calls).toEqual(['release']);
    const info = await a.runner.getRun(runId);
    expect(info?.result).toMatchObject({
      status: 'failed',
      error: { category: 'cancelled', code: 'run_cancelled' },
      compensated: ['reserve'],
    });
    expect(await b.runner.signal(runId, 'review', { ok: true, by: 'late' })).toBe('not_waiting');
    expect(await b.runner.cancel(runId)).toBe('ended');
  });
});

describe('sleep without parking', () => {
  it('sleeps in place under 1 s, and without a run store; waitFor without a run store fails the step', async () => {
    const short = chain('short', { input: z.object({}) })
      .sleep('nap', 5)
      .compute('after', () => 1)
      .build();
    const r = createRunner({ invoker: functionInvoker({}) });
    runners.push(r);
    expect(await r.run(short, {})).toMatchObject({ status: 'completed', output: 1 });
    const waits = chain('waits', { input: z.object({}) })
      .waitFor('w', { signal: 's', schema: z.object({}) })
      .build();
    expect(await r.run(waits, {})).toMatchObject({ status: 'failed', error: { code: 'wait_unsupported', step: 'w' } });
  });

  it('refuses a malformed sleep or waitFor at definition time', () => {
    expect(() => defineChain({ name: 'bad', input: z.object({}), steps: [{ id: 's', sleep: -1 }] })).toThrow(/sleep/);
    expect(() =>
      defineChain({
        name: 'bad2',
        input: z.object({}),
        steps: [{ id: 'w', waitFor: { signal: '', schema: z.object({}) } }],
      }),
    ).toThrow(/signal/);
  });
});

describe('a cancel racing the signal that continues a waiting run', () => {
  it('cancels the run the signal continued (it answered ended at once and the run went on to complete)', async () => {
    const write = defineTool({
      name: 'w',
      description: 'Write',
      input: z.object({ n: z.number() }),
      output: z.object({ n: z.number() }),
    });
    const calls: string[] = [];
    const invoker = functionInvoker({
      w: async ({ n }: { n: number }, call: { signal: AbortSignal }) => {
        calls.push(`start w${n}`);
        await new Promise<void>((resolve, reject) => {
          const t = setTimeout(resolve, n === 2 ? 5_000 : 0);
          call.signal.addEventListener(
            'abort',
            () => (clearTimeout(t), calls.push(`w${n} aborted`), reject(new Error('aborted'))),
          );
        });
        return { n };
      },
    });
    const c = defineChain({
      name: 'race_signal',
      input: z.object({}),
      steps: [
        { id: 'w1', tool: write, input: { n: 1 } },
        { id: 'rev', waitFor: { signal: 'go', schema: z.object({}) } },
        { id: 'w2', tool: write, input: { n: 2 } },
      ],
    });
    const runner = createRunner({ invoker, tools: [write], chains: [c], stores: { runs: memoryRunStore() } });
    try {
      expect((await runner.run(c, {}, { runId: 'race-1' })).status).toBe('waiting');
      const signalled = runner.signal('race-1', 'go', {}); // takes the run before the cancel does
      expect(await runner.cancel('race-1', { reason: 'the user left' })).toBe('cancelled');
      const r = await signalled;
      expect(typeof r !== 'string' && r.status === 'failed' && r.error.code).toBe('run_cancelled');
      expect(calls).toContain('w2 aborted');
      expect((await runner.getRun('race-1'))?.status).toBe('failed');
    } finally {
      await runner.close();
    }
  });

  it('logs signal:received before the steps the signal lets run (it came after them)', async () => {
    const c = defineChain({
      name: 'order_signal',
      input: z.object({}),
      steps: [
        { id: 'rev', waitFor: { signal: 'review', schema: z.object({ ok: z.boolean() }) } },
        { id: 'after', compute: () => 1 },
      ],
    });
    const runner = createRunner({ invoker: functionInvoker({}), chains: [c], stores: { runs: memoryRunStore() } });
    try {
      await runner.run(c, {}, { runId: 'order-1' });
      await runner.signal('order-1', 'review', { ok: true });
      const seen: string[] = [];
      for await (const e of runner.watch('order-1')) seen.push(`${e.type}${e.step ? ` ${e.step}` : ''}`);
      expect(seen.slice(-5)).toEqual([
        'run:start',
        'signal:received rev',
        'step:start after',
        'step:end after',
        'run:end',
      ]);
    } finally {
      await runner.close();
    }
  });

  it('refuses a payload the journal cannot keep as SignalRefused, and the run keeps waiting', async () => {
    const c = defineChain({
      name: 'unkeepable_signal',
      input: z.object({}),
      steps: [{ id: 'rev', waitFor: { signal: 'review', schema: z.object({ note: z.any() }) } }],
    });
    const runner = createRunner({ invoker: functionInvoker({}), chains: [c], stores: { runs: memoryRunStore() } });
    try {
      await runner.run(c, {}, { runId: 'keep-1' });
      const refused = runner.signal('keep-1', 'review', { note: () => 'a function' });
      await expect(refused).rejects.toBeInstanceOf(SignalRefused); // a CheckpointEncodeError before
      await expect(refused).rejects.toMatchObject({ code: 'invalid_signal' });
      expect((await runner.getRun('keep-1'))?.status).toBe('waiting');
      const r = await runner.signal('keep-1', 'review', { note: 'fine' });
      expect(typeof r !== 'string' && r.status).toBe('completed');
    } finally {
      await runner.close();
    }
  });
});
