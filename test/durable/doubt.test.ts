// Recovery never blindly re-runs a write that may already have happened (API.md §6, §10): a plain
// write (a write or destructive tool not declared `idempotent`) in flight when its owner went silent
// parks the run `in_doubt`; `runner.decide(runId, { retry, by })` settles it exactly once. On memory,
// Redis and PostgreSQL; the runners share a clock the test moves, so leases expire on cue.
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
import type { RunStore } from '../../src/stores/index.js';
import { postgresStores } from '../../src/postgres/index.js';
import { redisStores } from '../../src/redis/index.js';
import { memoryIdempotencyStore } from '../../src/stores/memory.js';
import type { IdempotencyStore } from '../../src/stores/types.js';
import { memoryRunStore } from '../../src/testing/index.js';

const redis = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true, maxRetriesPerRequest: 1 });
const pool = new pg.Pool({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test', max: 4 });
const tag = `ck_doubt_${process.pid}_${Date.now() % 1_000_000}`;
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

const LEASE = 60_000;
const ctx = z.object({ userId: z.string() });
const read = defineTool({
  name: 'read',
  description: 'r',
  input: z.object({ n: z.number() }),
  output: z.object({ n: z.number() }),
  effect: 'read',
});
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
// The plain write: a payment API that ignores idempotency keys.
const refund = defineTool({
  name: 'issue_refund',
  description: 'p',
  input: z.object({ id: z.string(), token: z.string() }),
  output: z.object({ refunded: z.boolean() }),
  effect: 'write',
});
const notify = defineTool({
  name: 'notify',
  description: 'n',
  input: z.object({ ok: z.boolean() }),
  output: z.object({ sent: z.boolean() }),
  effect: 'write',
  idempotent: true,
});

const chain = defineChain({
  name: 'doubt_refund',
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
    { id: 'refund', tool: refund, input: { id: ref('reserve', 'id'), token: 'tok-secret-123' } },
    { id: 'notify', tool: notify, input: { ok: ref('refund', 'refunded') } },
  ],
});

type Name = 'read' | 'reserve' | 'release' | 'issue_refund' | 'notify';
const runners: Runner[] = [];
afterEach(async () => {
  for (const r of runners.splice(0)) await r.close();
});
const never = (): Promise<never> => new Promise(() => {});
const tick = (ms = 10): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe.each(['memory', 'redis', 'postgres'] as const)('plain writes in doubt on %s', (kind) => {
  let t = 1_700_000_000_000;
  const now = (): number => t;
  /** A runner on `stores` (its own process, as far as the store can tell), recording its tool calls and their keys. */
  function runner(
    stores: Stores,
    impl: Partial<Record<Name, (call: ToolCall) => unknown>> = {},
    retention?: { failedMs: number },
  ) {
    const calls: string[] = [];
    const keys: (string | undefined)[] = [];
    const tool = (name: Name, dflt: (call: ToolCall) => unknown) => async (_input: unknown, call: ToolCall) => {
      calls.push(name);
      if (name === 'issue_refund') keys.push(call.idempotencyKey);
      return (impl[name] ?? dflt)(call);
    };
    const invoker = functionInvoker([read, reserve, release, refund, notify], {
      read: tool('read', (c) => ({ n: (c.input as { n: number }).n })) as never,
      reserve: tool('reserve', (c) => ({ id: `r-${c.runId}` })) as never,
      release: tool('release', () => ({ ok: true })) as never,
      issue_refund: tool('issue_refund', () => ({ refunded: true })) as never,
      notify: tool('notify', () => ({ sent: true })) as never,
    });
    const r = createRunner({
      invoker,
      tools: [read, reserve, release, refund, notify],
      chains: [chain],
      stores,
      leaseMs: LEASE,
      now,
      ...(retention && { retention }),
    });
    runners.push(r);
    return { runner: r, calls, keys };
  }
  const alice = { context: { userId: 'alice' } };
  const rid = (what: string): string => `${what}-${++seq}`;

  /** Starts a run whose refund never answers, then lets its owner's lease expire (it went silent). */
  async function silentInRefund(stores: Stores) {
    const owner = runner(stores, { issue_refund: () => never() });
    const runId = rid('doubt');
    void owner.runner.run(chain, { n: 4 }, { ...alice, runId });
    for (let i = 0; i < 300 && !owner.calls.includes('issue_refund'); i++) await tick();
    expect(owner.calls).toEqual(['read', 'reserve', 'issue_refund']);
    t += LEASE + 1_000;
    return { owner, runId };
  }

  it('recover() parks a run whose plain write was in flight: in_doubt, the write not called again, not claimed again; getRun and listRuns show the step, its redacted input and when it started', async () => {
    const stores = storesOf(kind, now);
    const startedAt = t;
    const { runId } = await silentInRefund(stores);
    const heir = runner(stores);
    const recovered = await heir.runner.recover();
    expect(recovered).toHaveLength(1);
    const parked = recovered[0]!;
    expect(parked.status).toBe('in_doubt');
    if (parked.status !== 'in_doubt') return;
    expect(parked.step).toBe('refund');
    expect(parked.inDoubt).toEqual([
      { step: 'refund', tool: 'issue_refund', input: { id: `r-${runId}`, token: '[REDACTED]' }, startedAt },
    ]);
    expect(heir.calls).toEqual([]);

    const info = await heir.runner.getRun(runId);
    expect(info).toMatchObject({
      status: 'in_doubt',
      leaseUntil: 0,
      steps: ['a', 'reserve'],
      inDoubt: [{ step: 'refund', tool: 'issue_refund', startedAt }],
    });
    expect(JSON.stringify(info)).not.toContain('tok-secret-123');
    const listed = await heir.runner.listRuns({ status: 'in_doubt' });
    expect(listed.runs).toEqual([
      expect.objectContaining({
        runId,
        status: 'in_doubt',
        steps: 2,
        inDoubt: { step: 'refund', tool: 'issue_refund', startedAt },
      }),
    ]);
    expect((await heir.runner.listRuns()).runs.map((r) => r.runId)).toContain(runId); // the default listing covers every status

    t += LEASE + 1_000;
    const other = runner(stores);
    expect(await other.runner.recover()).toEqual([]); // parked: never claimed again
    const again = await other.runner.run(chain, { n: 4 }, { ...alice, runId }); // the caller's retry gets the parked result
    expect(again.status).toBe('in_doubt');
    expect([...heir.calls, ...other.calls]).toEqual([]);
  });

  it('keeps the events of a run in doubt past the failed retention, as long as the run waits for its decision', async () => {
    const stores = storesOf(kind, now);
    const { runId } = await silentInRefund(stores);
    const heir = runner(stores, {}, { failedMs: 100 });
    expect(await heir.runner.recover()).toMatchObject([{ status: 'in_doubt' }]);
    const types = async () => (await stores.runs.events!.read(runId, 0, 100)).map((e) => e.type);
    const parked = await types();
    expect(parked.at(-1)).toBe('run:end');
    t += 300; // the memory store's clock; Redis and PostgreSQL expire by the real one
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await types()).toEqual(parked); // it expired after 100 ms while the run waited for a decision
  });

  it('a re-submitted run id whose owner went silent mid-write is taken over into in_doubt, not called again', async () => {
    const stores = storesOf(kind, now);
    const { runId } = await silentInRefund(stores);
    const heir = runner(stores);
    const r = await heir.runner.run(chain, { n: 4 }, { ...alice, runId });
    expect(r.status === 'in_doubt' && r.step).toBe('refund');
    expect(heir.calls).toEqual([]);
    expect((await heir.runner.getRun(runId))?.status).toBe('in_doubt');
  });

  it('decide({ retry: true }) calls the write exactly once more under the same idempotency key and the run completes; `by` is recorded; a second decision is not_parked', async () => {
    const stores = storesOf(kind, now);
    const { owner, runId } = await silentInRefund(stores);
    const heir = runner(stores);
    await heir.runner.recover();
    // Two instances decide at once: exactly one acts.
    const [d1, d2] = [runner(stores), runner(stores)];
    const answers = await Promise.all([
      d1.runner.decide(runId, { retry: true, by: 'ops:alice' }),
      d2.runner.decide(runId, { retry: true, by: 'ops:bob' }),
    ]);
    const results = answers.filter((a) => typeof a !== 'string');
    expect(answers.filter((a) => a === 'not_parked')).toHaveLength(1);
    expect(results).toHaveLength(1);
    const done = results[0]!;
    expect(done.status).toBe('completed');
    const decider = d1.calls.length > 0 ? d1 : d2;
    expect([...d1.calls, ...d2.calls]).toEqual(['issue_refund', 'notify']); // journaled steps not called again
    expect(decider.keys).toEqual(owner.keys); // the same key as the call in doubt
    expect(owner.keys).toEqual([`${runId}:refund`]);
    const by = decider === d1 ? 'ops:alice' : 'ops:bob';
    expect(done.trace.steps.find((s) => s.id === 'refund')?.decidedBy).toBe(by);
    const info = await heir.runner.getRun(runId);
    expect(info).toMatchObject({ status: 'completed', decidedBy: by, steps: ['a', 'reserve', 'refund', 'notify'] });
    expect(info?.inDoubt).toBeUndefined();
    expect(await heir.runner.decide(runId, { retry: true, by: 'ops:carol' })).toBe('not_parked');
  });

  it('decide({ retry: false }) ends the run failed/outcome_unknown, undoes the steps completed before it, calls neither the write nor a later step', async () => {
    const stores = storesOf(kind, now);
    const { runId } = await silentInRefund(stores);
    const heir = runner(stores);
    await heir.runner.recover();
    const r = await heir.runner.decide(runId, { retry: false, by: 'ops:alice' });
    expect(typeof r === 'object' && r.status).toBe('failed');
    if (typeof r !== 'object' || r.status !== 'failed') return;
    expect([r.error.code, r.error.step]).toEqual(['outcome_unknown', 'refund']);
    expect(r.error.message).toContain('ops:alice');
    expect(r.compensated).toEqual(['reserve']);
    expect(heir.calls).toEqual(['release']);
    const info = await heir.runner.getRun(runId);
    expect(info).toMatchObject({ status: 'failed', decidedBy: 'ops:alice' });
    expect((info?.result as { error: { code: string } }).error.code).toBe('outcome_unknown');
    t += LEASE + 1_000;
    expect(await runner(stores).runner.recover()).toEqual([]);
  });

  it('a recovered run whose retried write is in flight again when its owner goes silent is parked in doubt again', async () => {
    const stores = storesOf(kind, now);
    const { runId } = await silentInRefund(stores);
    await runner(stores).runner.recover();
    const decider = runner(stores, { issue_refund: () => never() });
    void decider.runner.decide(runId, { retry: true, by: 'ops:alice' });
    for (let i = 0; i < 300 && !decider.calls.includes('issue_refund'); i++) await tick();
    t += LEASE + 1_000;
    const heir = runner(stores);
    const [again] = await heir.runner.recover();
    expect(again?.status).toBe('in_doubt');
    expect(heir.calls).toEqual([]);
    const info = await heir.runner.getRun(runId);
    expect(info?.inDoubt?.[0]?.step).toBe('refund');
    expect(info?.decidedBy).toBe('ops:alice');
  });

  it("an owner that stalled past its lease inside a plain write: the caller's retry parks the run in doubt, the owner stops lease_lost and records nothing", async () => {
    const stores = storesOf(kind, now);
    let answer!: (v: unknown) => void;
    const stalled = runner(stores, { issue_refund: () => new Promise((r) => (answer = r)) });
    const runId = rid('stall');
    const pending = stalled.runner.run(chain, { n: 5 }, { ...alice, runId });
    for (let i = 0; i < 300 && !answer; i++) await tick();
    t += LEASE + 1_000;
    const heir = runner(stores);
    expect((await heir.runner.run(chain, { n: 5 }, { ...alice, runId })).status).toBe('in_doubt');
    const before = await stores.runs.get(runId);
    answer({ refunded: true }); // the stalled owner's write answers after all
    const late = await pending;
    expect(late.status === 'failed' && late.error.code).toBe('lease_lost');
    expect(stalled.calls).toEqual(['read', 'reserve', 'issue_refund']); // nothing after, no undo
    expect(heir.calls).toEqual([]);
    expect(await stores.runs.get(runId)).toEqual(before); // recorded nothing
  });

  it('cancel() of a run in doubt ends it cancelled without calling the write, undoing what it completed', async () => {
    const stores = storesOf(kind, now);
    const { runId } = await silentInRefund(stores);
    const heir = runner(stores);
    await heir.runner.recover();
    expect(await heir.runner.cancel(runId, { reason: 'customer left' })).toBe('cancelled');
    expect(heir.calls).toEqual(['release']);
    const info = await heir.runner.getRun(runId);
    expect(info?.status).toBe('failed');
    expect((info?.result as { error: { code: string } }).error.code).toBe('run_cancelled');
  });

  it('cancel() that loses its take of a run in doubt reads it again: still parked, it cancels it (it answered ended)', async () => {
    const stores = storesOf(kind, now);
    const { runId } = await silentInRefund(stores);
    await runner(stores).runner.recover();
    // The cancel's first take is refused, as when a decision re-parked the run in doubt after it read it.
    let refusals = 1;
    const takeParked: RunStore['takeParked'] = (...args) =>
      refusals-- > 0 ? Promise.resolve(false) : stores.runs.takeParked!(...args);
    const canceller = runner({ ...stores, runs: { ...stores.runs, takeParked } });
    expect(await canceller.runner.cancel(runId)).toBe('cancelled');
    expect((await canceller.runner.getRun(runId))?.status).toBe('failed');
  });

  it('a decision of the wrong form is a TypeError: { approved } for a run in doubt, { retry } for a gate; neither changes the run', async () => {
    const stores = storesOf(kind, now);
    const { runId } = await silentInRefund(stores);
    const heir = runner(stores);
    await heir.runner.recover();
    await expect(heir.runner.decide(runId, { approved: true, by: 'ops' })).rejects.toThrow(/retry, by/);
    await expect(heir.runner.decide(runId, { retry: true, approved: true, by: 'ops' } as never)).rejects.toThrow(
      TypeError,
    );
    await expect(heir.runner.decide(runId, { retry: 'yes', by: 'ops' } as never)).rejects.toThrow(TypeError);
    expect((await heir.runner.getRun(runId))?.status).toBe('in_doubt');
    expect(await heir.runner.decide(rid('missing'), { retry: true, by: 'ops' })).toBe('not_found');
    expect(heir.calls).toEqual([]);
  });
});

describe('what recording a plain write costs', () => {
  /** A memory run store that counts the calls made to it, by method. */
  function counted(): { runs: RunStore; idempotency: IdempotencyStore; calls: Map<string, number> } {
    const idempotency = memoryIdempotencyStore();
    const inner = memoryRunStore({ idempotency });
    const calls = new Map<string, number>();
    const runs = new Proxy(inner, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver) as unknown;
        if (typeof value !== 'function' || typeof key !== 'string') return value;
        return (...args: unknown[]) => {
          calls.set(key, (calls.get(key) ?? 0) + 1);
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    return { runs, idempotency, calls };
  }
  const idemWrite = defineTool({
    name: 'w_idem',
    description: 'w',
    input: z.object({ n: z.number() }),
    output: z.object({ n: z.number() }),
    effect: 'write',
    idempotent: true,
  });
  const plainWrite = defineTool({
    name: 'w_plain',
    description: 'w',
    input: z.object({ n: z.number() }),
    output: z.object({ n: z.number() }),
    effect: 'write',
  });
  const shape = (name: string, write: typeof idemWrite | typeof plainWrite) =>
    defineChain({
      name,
      input: z.object({ n: z.number() }),
      timeoutMs: 60_000,
      steps: [
        { id: 'a', tool: read, input: { n: ref('input', 'n') } },
        { id: 'w', tool: write, input: { n: ref('a', 'n') } },
        { id: 'b', tool: read, input: { n: ref('w', 'n') } },
      ],
    });
  const reads = shape('cost_reads', idemWrite);
  const withPlain = shape('cost_plain', plainWrite);
  const echo = async ({ n }: { n: number }) => ({ n });

  it("a plain write's `started` entry carries the read only it waits for: no store round trip more than an idempotent write", async () => {
    const costOf = async (c: typeof reads | typeof withPlain) => {
      const stores = counted();
      const r = createRunner({
        invoker: functionInvoker([read, idemWrite, plainWrite], { read: echo, w_idem: echo, w_plain: echo }),
        tools: [read, idemWrite, plainWrite],
        chains: [c],
        stores,
      });
      runners.push(r);
      stores.calls.clear();
      const result = await r.run(c, { n: 1 });
      expect(result.status).toBe('completed');
      const journal = (await stores.runs.get(result.runId))!.journal;
      return { calls: new Map(stores.calls), journal: journal.map((e) => (e.started ? `${e.step}:started` : e.step)) };
    };
    const base = await costOf(reads);
    const plain = await costOf(withPlain);
    // a alone, then w (b waits for it), b with the end
    expect(base.journal).toEqual(['a', 'w', 'b']);
    // a and w's start in one write (before w is called), then w, b with the end
    expect(plain.journal).toEqual(['a', 'w:started', 'w', 'b']);
    expect(plain.calls.get('journal')).toBe(2);
    expect(plain.calls).toEqual(base.calls);
  });
});

describe('a plain write inside a forEach item (memory)', () => {
  it('is recorded as started like a top-level one: recovery parks the run in doubt at that item, and decide({ retry: true }) calls only that write again', async () => {
    let t = 1_700_000_000_000;
    const now = (): number => t;
    const stores = storesOf('memory', now);
    const list = defineTool({
      name: 'list',
      description: 'l',
      input: z.object({}),
      output: z.object({ ids: z.array(z.string()) }),
      effect: 'read',
    });
    const pay = defineTool({
      name: 'pay',
      description: 'p',
      input: z.object({ id: z.string() }),
      output: z.object({ paid: z.boolean() }),
      effect: 'write',
    });
    const payOne = defineChain({
      name: 'pay_one',
      input: z.object({ id: z.string() }),
      steps: [{ id: 'pay', tool: pay, input: { id: ref('input', 'id') } }],
    });
    const payAll = defineChain({
      name: 'pay_all',
      input: z.object({}),
      timeoutMs: 600_000,
      steps: [
        { id: 'list', tool: list, input: {} },
        { id: 'paid', forEach: { over: ref('list', 'ids'), chain: payOne, input: { id: ref('item') } } },
      ],
    });
    const make = (hang: string | undefined) => {
      const paid: string[] = [];
      const invoker = functionInvoker([list, pay], {
        list: async () => ({ ids: ['a', 'b', 'c'] }),
        pay: async ({ id }) => {
          paid.push(id);
          if (id === hang) await never();
          return { paid: true };
        },
      });
      const r = createRunner({ invoker, chains: [payAll, payOne], stores, leaseMs: LEASE, now });
      runners.push(r);
      return { runner: r, paid };
    };
    const owner = make('b');
    const runId = `fe-doubt-${++seq}`;
    void owner.runner.run(payAll, {}, { runId });
    for (let i = 0; i < 300 && !owner.paid.includes('b'); i++) await tick();
    expect(owner.paid).toEqual(['a', 'b']);
    t += LEASE + 1_000;

    const heir = make(undefined);
    const [parked] = await heir.runner.recover();
    expect(parked?.status === 'in_doubt' && parked.step).toBe('paid/1/pay');
    expect(heir.paid).toEqual([]);
    const decided = await heir.runner.decide(runId, { retry: true, by: 'ops:alice' });
    expect(typeof decided === 'object' && decided.status).toBe('completed');
    expect((await heir.runner.getRun(runId))?.status).toBe('completed');
    expect(heir.paid).toEqual(['b', 'c']); // 'a' was journaled: not paid again; 'b' once more, as decided
  });
});

describe("steps riding on a plain write's start (memory)", () => {
  it('two plain writes after one read: the second is not journaled (nor called) before the write carrying the read is kept', async () => {
    const inner = memoryRunStore();
    const writes: string[][] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const runs: RunStore = {
      ...inner,
      journal: async (runId, owner, entries, complete) => {
        writes.push(entries.map((e) => (e.started ? `${e.step}:started` : e.step)));
        if (writes.length === 1) await held;
        return inner.journal(runId, owner, entries, complete);
      },
    };
    const pay = <N extends string>(name: N) =>
      defineTool({ name, description: 'p', input: z.object({ n: z.number() }), output: z.object({ n: z.number() }) });
    const [p1, p2] = [pay('pay1'), pay('pay2')];
    const twice = defineChain({
      name: 'two_payments',
      input: z.object({ n: z.number() }),
      steps: [
        { id: 'a', tool: read, input: { n: ref('input', 'n') } },
        { id: 'w1', tool: p1, input: { n: ref('a', 'n') } },
        { id: 'w2', tool: p2, input: { n: ref('a', 'n') } },
      ],
    });
    const called: string[] = [];
    const echo =
      (name: string) =>
      async ({ n }: { n: number }) => (called.push(name), { n });
    const r = createRunner({
      invoker: functionInvoker([read, p1, p2], { read: echo('read'), pay1: echo('pay1'), pay2: echo('pay2') }),
      tools: [read, p1, p2],
      stores: { runs },
    });
    runners.push(r);
    const done = r.run(twice, { n: 3 }, { runId: 'two-payments' });
    for (let i = 0; i < 100 && writes.length === 0; i++) await tick(2);
    await tick(20);
    expect(writes).toEqual([['a', 'w1:started']]);
    expect(called).toEqual(['read']);
    release();
    expect((await done).status).toBe('completed');
    expect(writes.slice(0, 2)).toEqual([['a', 'w1:started'], ['w2:started']]);
    const journal = (await runs.get('two-payments'))!.journal.map((e) => (e.started ? `${e.step}:started` : e.step));
    expect(journal.slice(0, 3)).toEqual(['a', 'w1:started', 'w2:started']);
    expect(journal.filter((s) => s === 'a')).toHaveLength(1);
    expect(called.sort()).toEqual(['pay1', 'pay2', 'read']);
  });
  it('three writes woken by the same carrying write: one that depends on a step another wakes to carry waits for that write too', async () => {
    const inner = memoryRunStore();
    const writes: string[][] = [];
    const holds: (() => void)[] = [];
    const runs: RunStore = {
      ...inner,
      journal: async (runId, owner, entries, complete) => {
        const n = writes.push(entries.map((e) => (e.started ? `${e.step}:started` : e.step)));
        if (n <= 2) await new Promise<void>((r) => holds.push(r)); // the first two writes are slow
        return inner.journal(runId, owner, entries, complete);
      },
    };
    const tool = <N extends string>(name: N, effect: 'read' | 'write') =>
      defineTool({
        name,
        description: name,
        input: z.object({ n: z.number() }),
        output: z.object({ n: z.number() }),
        effect,
      });
    const [ra, rd] = [tool('read_a', 'read'), tool('read_d', 'read')];
    const [p1, p2, p3] = [tool('pay1', 'write'), tool('pay2', 'write'), tool('pay3', 'write')];
    const race = defineChain({
      name: 'three_payments',
      input: z.object({ n: z.number() }),
      steps: [
        { id: 'a', tool: ra, input: { n: ref('input', 'n') } },
        { id: 'd', tool: rd, input: { n: ref('input', 'n') } },
        { id: 'w1', tool: p1, input: { n: ref('a', 'n') } },
        { id: 'w2', tool: p2, input: { n: ref('a', 'n') } },
        { id: 'w3', tool: p3, input: { n: ref('d', 'n') } },
      ],
    });
    const journaledAtPay3: string[] = [];
    const echo =
      (name: string, delay = 0) =>
      async ({ n }: { n: number }) => {
        if (delay) await tick(delay);
        if (name === 'pay3') journaledAtPay3.push(...(await inner.get('three'))!.journal.map((e) => e.step));
        return { n };
      };
    const r = createRunner({
      invoker: functionInvoker([ra, rd, p1, p2, p3], {
        read_a: echo('read_a'),
        read_d: echo('read_d', 15), // ends while the write carrying a is held
        pay1: echo('pay1'),
        pay2: echo('pay2'),
        pay3: echo('pay3'),
      }),
      tools: [ra, rd, p1, p2, p3],
      stores: { runs },
    });
    runners.push(r);
    const done = r.run(race, { n: 3 }, { runId: 'three' });
    for (let i = 0; i < 100 && holds.length < 1; i++) await tick(2);
    await tick(40);
    holds[0]!(); // a's write lands: w2 and w3 wake; one of them carries d, the other must wait for it
    for (let i = 0; i < 100 && holds.length < 2; i++) await tick(2);
    await tick(40);
    expect(journaledAtPay3).toEqual([]); // w3 not called while d is not journaled
    holds[1]!();
    expect((await done).status).toBe('completed');
    expect(journaledAtPay3).toContain('d');
  });

  it("a failed run's journal keeps the masked values of the steps journaled with its end", async () => {
    const look = defineTool({
      name: 'look',
      description: 'l',
      input: z.object({ q: z.string() }),
      output: z.object({ q: z.string() }),
      effect: 'read',
    });
    const boom = defineTool({
      name: 'boom',
      description: 'b',
      input: z.object({ q: z.string() }),
      output: z.object({}),
      effect: 'read',
    });
    // a is journaled with the end (nothing waits for it): after the failed run's trace is masked.
    const masking = defineChain({
      name: 'masking',
      input: z.object({ password: z.string() }),
      steps: [
        { id: 'a', tool: look, input: { q: ref('input', 'password') } },
        { id: 'b', tool: boom, input: { q: ref('input', 'password') } },
      ],
    });
    const runs = memoryRunStore();
    const r = createRunner({
      invoker: functionInvoker([look, boom], {
        look: async () => ({ q: 'x' }),
        boom: async () => {
          await new Promise((ok) => setTimeout(ok, 10));
          throw Object.assign(new Error('refused'), { status: 400 });
        },
      }),
      tools: [look, boom],
      stores: { runs },
      traceDetail: 'full',
    });
    runners.push(r);
    const res = await r.run(masking, { password: 'hunter2-secret' }, { runId: 'masked' });
    expect(res.status).toBe('failed');
    expect(JSON.stringify(res.trace)).not.toContain('hunter2-secret');
    const stored = (await runs.get('masked'))!;
    expect(stored.journal.map((e) => e.step)).toContain('a');
    expect(JSON.stringify(stored.journal)).not.toContain('hunter2-secret');
  });
});
