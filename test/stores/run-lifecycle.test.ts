// The rest of a run's life in each run store (memory, Redis, PostgreSQL; docs/guides/watching-runs.md):
// retention of ended runs and their events (nothing left in the listing indexes), the `retrying`
// status while a run waits out a backoff, cancel of a run whose owner died, and what a run nobody
// watches costs in event round trips.
import Redis from 'ioredis';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, functionInvoker, ref, type Runner } from '../../src/index.js';
import { postgresStores } from '../../src/postgres/index.js';
import { redisStores } from '../../src/redis/index.js';
import { memoryIdempotencyStore } from '../../src/stores/memory.js';
import { memoryRunStore } from '../../src/stores/memory-runs.js';
import type { RunStore } from '../../src/stores/run-store.js';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
let n = 0;
const uid = (what: string): string => `${what}-${process.pid}-${++n}-${Math.random().toString(36).slice(2, 8)}`;

/** Polls `check` until it holds (or gives its last answer after `ms`). */
async function eventually<T>(read: () => Promise<T>, check: (v: T) => boolean, ms = 5_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (check(v) || Date.now() > until) return v;
    await pause(25);
  }
}

interface Setup {
  /** A run store and peers on the same data (other connections, as other processes would have). */
  runs: RunStore;
  peer: RunStore;
  /** Makes a retention of `ms` pass for the store (a clock moved on, or real time waited). */
  pass(ms: number): Promise<void>;
  /** What the store still holds of `runId` anywhere (records, journal, events, listing entries): names, empty when nothing. */
  leftovers(runId: string, chain: string): Promise<string[]>;
}

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

const setups: Record<string, () => Promise<Setup>> = {
  memory: async () => {
    let skew = 0;
    const idempotency = memoryIdempotencyStore();
    const runs = memoryRunStore({ idempotency, now: () => Date.now() + skew });
    return {
      runs,
      peer: runs,
      pass: async (ms) => void (skew += ms + 1),
      leftovers: async (runId) =>
        ((await runs.get(runId)) ? ['record'] : []).concat(
          (await runs.events!.read(runId, 0, 10)).length > 0 ? ['events'] : [],
        ),
    };
  },
  redis: async () => {
    const prefix = uid('ck-life');
    const conns = [new Redis({ host: '127.0.0.1', port: 6379 }), new Redis({ host: '127.0.0.1', port: 6379 })];
    const stores = conns.map((c) => redisStores(c, { prefix }));
    cleanups.push(async () => {
      for (const s of stores) await s.runs.close?.();
      const keys = await conns[0]!.keys(`${prefix}*`);
      if (keys.length) await conns[0]!.del(...keys);
      for (const c of conns) c.disconnect();
    });
    const redis = conns[0]!;
    return {
      runs: stores[0]!.runs,
      peer: stores[1]!.runs,
      pass: async (ms) => {
        await pause(ms + 50); // Redis expires keys by its own clock
      },
      async leftovers(runId, chain) {
        const out: string[] = [];
        for (const [name, key] of [
          ['record', `${prefix}:run:${runId}`],
          ['journal', `${prefix}:run-j:${runId}`],
          ['events', `${prefix}:run-e:${runId}`],
        ] as const) {
          if ((await redis.exists(key)) === 1) out.push(name);
        }
        for (const status of ['running', 'retrying', 'awaiting_confirmation', 'completed', 'failed', 'declined']) {
          for (const key of [`${prefix}:runs:st:${status}`, `${prefix}:runs:sc:${status}:${chain}`]) {
            if ((await redis.zscore(key, runId)) !== null) out.push(key.slice(prefix.length + 1));
          }
        }
        if ((await redis.zrange(`${prefix}:runs:exp`, 0, -1)).some((m) => m.includes(JSON.stringify(runId))))
          out.push('runs:exp');
        for (const key of await redis.keys(`${prefix}:runs:cx*:*`))
          if ((await redis.zscore(key, runId)) !== null) out.push('runs:cx');
        if ((await redis.zscore(`${prefix}:runs:live`, runId)) !== null) out.push('runs:live');
        return out;
      },
    };
  },
  postgres: async () => {
    const schema = `ck_life_${process.pid}_${++n}_${Date.now() % 100_000}`;
    const pools = [
      new pg.Pool({ host: '127.0.0.1', user: 'postgres', database: 'test', max: 3 }),
      new pg.Pool({ host: '127.0.0.1', user: 'postgres', database: 'test', max: 3 }),
    ];
    let skew = 0;
    // The stores' clock (retention, expiry, sweeps) is moved on by pass(); the runners keep real time.
    const stores = pools.map((p) => postgresStores(p, { schema, sweepIntervalMs: 1, now: () => Date.now() + skew }));
    await stores[0]!.migrate();
    cleanups.push(async () => {
      for (const s of stores) await s.runs.close?.();
      await pools[0]!.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      for (const p of pools) await p.end();
    });
    const pool = pools[0]!;
    return {
      runs: stores[0]!.runs,
      peer: stores[1]!.runs,
      pass: async (ms) => void (skew += ms + 1),
      async leftovers(runId) {
        const out: string[] = [];
        for (const table of ['runs', 'run_journal', 'run_events', 'run_event_logs']) {
          const r = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".${table} WHERE run_id = $1`, [runId]);
          if ((r.rows[0] as { n: number }).n > 0) out.push(table);
        }
        return out;
      },
    };
  },
};

const quick = defineTool({
  name: 'quick',
  description: 'q',
  input: z.object({ n: z.number() }),
  output: z.object({ n: z.number() }),
  effect: 'read',
});
const flaky = defineTool({
  name: 'flaky',
  description: 'f',
  input: z.object({ n: z.number() }),
  output: z.object({ n: z.number() }),
  effect: 'read',
});
const reserve = defineTool({
  name: 'reserve',
  description: 'r',
  input: z.object({ n: z.number() }),
  output: z.object({ id: z.string() }),
  effect: 'write',
  idempotent: true,
});
const release = defineTool({
  name: 'release',
  description: 'r',
  input: z.object({ id: z.string() }),
  output: z.object({ ok: z.boolean() }),
  effect: 'write',
  idempotent: true,
});
const hang = defineTool({
  name: 'hang',
  description: 'h',
  input: z.object({ id: z.string() }),
  output: z.object({ n: z.number() }),
  effect: 'read',
});

const twoSteps = defineChain({
  name: 'life-two',
  input: z.object({ n: z.number() }),
  steps: [
    { id: 'first', tool: quick, input: { n: ref('input', 'n') } },
    { id: 'second', tool: flaky, input: { n: ref('first', 'n') } },
  ],
});
const cancellable = defineChain({
  name: 'life-cancel',
  input: z.object({ n: z.number() }),
  timeoutMs: 60_000,
  steps: [
    {
      id: 'reserve',
      tool: reserve,
      input: { n: ref('input', 'n') },
      compensate: { tool: release, input: { id: ref('reserve', 'id') } },
    },
    { id: 'wait', tool: hang, input: { id: ref('reserve', 'id') } },
    { id: 'after', tool: quick, input: { n: ref('wait', 'n') } },
  ],
});

const unused = Object.fromEntries(
  ['quick', 'flaky', 'reserve', 'release', 'hang'].map((n) => [
    n,
    async () => {
      throw new Error(`${n} is not used by this test`);
    },
  ]),
);

for (const [name, make] of Object.entries(setups)) {
  describe(`${name}: the rest of a run's life`, () => {
    const runners: Runner[] = [];
    afterEach(async () => {
      for (const r of runners.splice(0)) await r.close();
    });
    const runner = (
      runs: RunStore,
      handlers: Record<string, (input: never, call: never) => unknown>,
      extra: Record<string, unknown> = {},
    ): Runner => {
      const r = createRunner({
        // Every tool needs an implementation (createRunner checks): the ones a test does not use throw.
        invoker: functionInvoker([quick, flaky, reserve, release, hang], { ...unused, ...handlers } as never),
        chains: [twoSteps, cancellable],
        stores: { runs },
        ...extra,
      });
      runners.push(r);
      return r;
    };

    it('forgets ended runs and their events after their retention (completed and failed each their own), leaving no listing entry', async () => {
      const { runs, pass, leftovers } = await make();
      const failNext = { yes: false };
      const a = runner(
        runs,
        {
          quick: async ({ n }: { n: number }) => ({ n }),
          flaky: async ({ n }: { n: number }) => {
            if (failNext.yes) throw Object.assign(new Error('refused'), { status: 400 });
            return { n };
          },
        },
        { retention: { completedMs: 3_600_000, failedMs: 600 } },
      );
      const done = await a.run(twoSteps, { n: 1 }, { runId: uid('kept') });
      failNext.yes = true;
      const failed = await a.run(twoSteps, { n: 2 }, { runId: uid('gone') });
      expect([done.status, failed.status]).toEqual(['completed', 'failed']);
      expect((await a.getRun(failed.runId))?.status).toBe('failed');
      expect((await a.listRuns({ status: 'failed' })).runs.map((r) => r.runId)).toEqual([failed.runId]);
      expect((await runs.events!.read(failed.runId, 0, 100)).at(-1)?.type).toBe('run:end');
      await pass(300);
      const younger = await a.run(twoSteps, { n: 4 }, { runId: uid('younger') }); // fails too, later: it keeps the index alive
      failNext.yes = false;
      expect(younger.status).toBe('failed');

      await pass(350);
      // A later write prunes what expired (Redis: the listing indexes; PostgreSQL: its sweep).
      expect((await a.run(twoSteps, { n: 3 }, { runId: uid('later') })).status).toBe('completed');
      // Checked before any listing: a listing would drop what it meets, and no entry may wait for one.
      expect(
        await eventually(
          () => leftovers(failed.runId, twoSteps.name),
          (l) => l.length === 0,
        ),
      ).toEqual([]);
      expect(await a.getRun(failed.runId)).toBeUndefined();
      expect(await runs.events!.read(failed.runId, 0, 100)).toEqual([]);
      expect((await a.listRuns({ status: 'failed' })).runs.map((r) => r.runId)).toEqual([younger.runId]);
      // The completed run has a retention of its own: still there, listed, with its events.
      expect((await a.getRun(done.runId))?.status).toBe('completed');
      expect((await a.listRuns({ status: 'completed' })).runs.map((r) => r.runId)).toContain(done.runId);
      expect((await runs.events!.read(done.runId, 0, 100)).length).toBeGreaterThan(0);
    });

    it('keeps a run parked at a gate until its resume token expires, then forgets it', async () => {
      const { runs, pass, leftovers } = await make();
      const gated = defineChain({
        name: 'life-gated',
        input: z.object({ n: z.number() }),
        steps: [{ id: 'send', tool: quick, input: { n: ref('input', 'n') }, confirm: { prompt: 'Send?' } }],
      });
      const a = createRunner({
        invoker: functionInvoker([quick], { quick: async ({ n }) => ({ n }) }),
        chains: [gated],
        stores: { runs },
        confirmationTtlMs: 800,
        retention: { completedMs: 3_600_000, failedMs: 3_600_000 },
      });
      runners.push(a);
      const parked = await a.run(gated, { n: 1 });
      expect(parked.status).toBe('awaiting_confirmation');
      expect((await a.listRuns({ status: 'awaiting_confirmation' })).runs.map((r) => r.runId)).toEqual([parked.runId]);
      await pass(400);
      const younger = await a.run(gated, { n: 2 });
      expect((await a.getRun(parked.runId))?.status).toBe('awaiting_confirmation'); // its token is still valid
      await pass(450);
      expect(await a.getRun(parked.runId)).toBeUndefined();
      await a.run(gated, { n: 3 }); // a later write prunes
      expect(
        await eventually(
          () => leftovers(parked.runId, gated.name),
          (l) => l.length === 0,
        ),
      ).toEqual([]);
      const listed = (await a.listRuns({ status: 'awaiting_confirmation' })).runs.map((r) => r.runId);
      expect(listed).toContain(younger.runId);
      expect(listed).not.toContain(parked.runId);
    });

    it('shows a run retrying while it waits out a backoff, running again after, with one store write each way', async () => {
      const { runs, peer, leftovers } = await make();
      let calls = 0;
      let unblock!: () => void;
      const blocked = new Promise<void>((r) => (unblock = r));
      let secondAttempt!: () => void;
      const retried = new Promise<void>((r) => (secondAttempt = r));
      const marks: (number | null)[] = [];
      const mark = runs.markRetrying!.bind(runs);
      (runs as { markRetrying: typeof mark }).markRetrying = (runId, owner, until) => {
        marks.push(until);
        return mark(runId, owner, until);
      };
      const a = runner(
        runs,
        {
          quick: async ({ n }: { n: number }) => ({ n }),
          flaky: async ({ n }: { n: number }) => {
            if (++calls === 1) throw Object.assign(new Error('busy'), { status: 503 });
            secondAttempt();
            await blocked;
            return { n };
          },
        },
        { retry: { unavailable: { retries: 1, minDelayMs: 1_500, maxDelayMs: 1_500 } }, random: () => 0 },
      );
      const b = runner(peer, {});
      const runId = uid('retrying');
      const result = a.run(twoSteps, { n: 1 }, { runId });
      expect(
        (
          await eventually(
            () => b.getRun(runId),
            (r) => r?.status === 'retrying',
          )
        )?.status,
      ).toBe('retrying');
      expect((await b.listRuns({ status: 'retrying' })).runs.map((r) => [r.runId, r.status])).toEqual([
        [runId, 'retrying'],
      ]);
      expect((await b.listRuns({ status: 'running' })).runs).toEqual([]);
      expect((await b.listRuns()).runs.map((r) => r.status)).toEqual(['retrying']);
      await retried;
      expect(
        (
          await eventually(
            () => b.getRun(runId),
            (r) => r?.status === 'running',
          )
        )?.status,
      ).toBe('running');
      expect((await b.listRuns({ status: 'running' })).runs.map((r) => [r.runId, r.status])).toEqual([
        [runId, 'running'],
      ]);
      expect((await b.listRuns({ status: 'retrying' })).runs).toEqual([]);
      unblock();
      expect((await result).status).toBe('completed');
      expect(marks).toHaveLength(2);
      expect(marks[1]).toBeNull();
      expect((await b.listRuns({ status: ['running', 'retrying'] })).runs).toEqual([]);
      expect(
        (await leftovers(runId, twoSteps.name)).filter((l) => l.includes('retrying') || l.includes('running')),
      ).toEqual([]);
    });

    it('a short backoff (under a second) writes nothing to the store', async () => {
      const { runs } = await make();
      let calls = 0;
      const marks: unknown[] = [];
      const mark = runs.markRetrying!.bind(runs);
      (runs as { markRetrying: typeof mark }).markRetrying = (...args) => (marks.push(args), mark(...args));
      const a = runner(
        runs,
        {
          quick: async ({ n }: { n: number }) => ({ n }),
          flaky: async ({ n }: { n: number }) => {
            if (++calls === 1) throw Object.assign(new Error('busy'), { status: 503 });
            return { n };
          },
        },
        { retry: { unavailable: { retries: 1, minDelayMs: 20, maxDelayMs: 20 } } },
      );
      expect((await a.run(twoSteps, { n: 1 })).status).toBe('completed');
      expect(calls).toBe(2);
      expect(marks).toEqual([]);
    });

    it('cancel of a run whose owner died: the canceller takes it over, compensates and ends it run_cancelled', async () => {
      const { runs, peer } = await make();
      const calls: string[] = [];
      let started!: () => void;
      const waiting = new Promise<void>((r) => (started = r));
      const handlers = (who: string) => ({
        reserve: async ({ n }: { n: number }) => (calls.push(`${who}:reserve`), { id: `r${n}` }),
        release: async () => (calls.push(`${who}:release`), { ok: true }),
        hang: () => (calls.push(`${who}:hang`), started(), new Promise(() => undefined)),
        quick: async ({ n }: { n: number }) => (calls.push(`${who}:after`), { n }),
      });
      const a = runner(runs, handlers('A'), { leaseMs: 300 });
      const b = runner(peer, handlers('B'), { leaseMs: 300 });
      const runId = uid('orphan');
      void a.run(cancellable, { n: 1 }, { runId });
      await waiting;
      await a.close(); // A dies: its run stays recorded in flight, its lease runs out
      await pause(400);
      expect((await b.getRun(runId))?.status).toBe('running');
      expect(await b.cancel(runId, { reason: 'owner gone' })).toBe('cancelled');
      const info = await b.getRun(runId);
      expect(info?.status).toBe('failed');
      expect(info?.result?.status === 'failed' && info.result.error).toMatchObject({
        category: 'cancelled',
        code: 'run_cancelled',
      });
      expect(info?.result?.status === 'failed' && info.result.error.message).toContain('owner gone');
      expect(info?.result?.status === 'failed' && info.result.compensated).toEqual(['reserve']);
      expect(calls).toEqual(['A:reserve', 'A:hang', 'B:release']);
      expect(await b.cancel(runId)).toBe('ended');
      // Nothing left running: no recoverer can continue it.
      expect(await b.recover()).toEqual([]);
    });

    it('cancel from a runner without the chain is recorded: the next recoverer ends the run cancelled instead of continuing it', async () => {
      const { runs, peer } = await make();
      const calls: string[] = [];
      let started!: () => void;
      const waiting = new Promise<void>((r) => (started = r));
      const handlers = (who: string) => ({
        reserve: async ({ n }: { n: number }) => (calls.push(`${who}:reserve`), { id: `r${n}` }),
        release: async () => (calls.push(`${who}:release`), { ok: true }),
        hang: () => (calls.push(`${who}:hang`), started(), new Promise(() => undefined)),
        quick: async ({ n }: { n: number }) => (calls.push(`${who}:after`), { n }),
      });
      const a = runner(runs, handlers('A'), { leaseMs: 300 });
      const ops = createRunner({ invoker: functionInvoker([], {}), stores: { runs: peer }, leaseMs: 300 });
      runners.push(ops);
      const runId = uid('orphan');
      void a.run(cancellable, { n: 1 }, { runId });
      await waiting;
      await a.close();
      await pause(400);
      expect(await ops.cancel(runId, { reason: 'ops' })).toBe('cancelled');
      expect((await ops.getRun(runId))?.status).toBe('running'); // nobody here can undo its steps
      const recoverer = runner(peer, handlers('C'), { leaseMs: 300 });
      const [ended] = await recoverer.recover();
      expect(ended?.status === 'failed' && ended.error).toMatchObject({ category: 'cancelled', code: 'run_cancelled' });
      expect(ended?.status === 'failed' && ended.compensated).toEqual(['reserve']);
      expect(calls).toEqual(['A:reserve', 'A:hang', 'C:release']); // 'hang' and 'after' never ran again
      expect((await ops.getRun(runId))?.status).toBe('failed');
    });

    it('cancel of a run that completes while the cancel is recorded answers ended, not cancelled', async () => {
      const { runs } = await make();
      let finish!: () => void;
      let started!: () => void;
      const running = new Promise<void>((r) => (started = r));
      // The cancel's record takes a while (a remote store's round trip): the run completes meanwhile.
      const slowCancel: RunStore = {
        ...runs,
        requestCancel: async (runId, reason) => {
          finish();
          await pause(200);
          return runs.requestCancel!(runId, reason);
        },
      };
      const a = runner(slowCancel, {
        reserve: async ({ n }: { n: number }) => ({ id: `r${n}` }),
        hang: () => (started(), new Promise((r) => (finish = () => r({ n: 1 })))),
        quick: async ({ n }: { n: number }) => ({ n }),
      });
      const runId = uid('race');
      const result = a.run(cancellable, { n: 1 }, { runId });
      await running;
      expect(await a.cancel(runId)).toBe('ended');
      expect((await result).status).toBe('completed');
      expect((await a.getRun(runId))?.status).toBe('completed');
    });

    it('a run nobody watches costs at most one event round trip to the store', async () => {
      const { runs } = await make();
      const counted = { n: 0 };
      const log = runs.events!;
      const instrumented: RunStore = {
        ...runs,
        events: new Proxy(log, {
          get(target, key, receiver) {
            const v = Reflect.get(target, key, receiver) as unknown;
            if (typeof v !== 'function' || key === 'onAnnounce') return v;
            return (...args: unknown[]) => {
              counted.n++;
              return (v as (...a: unknown[]) => unknown).apply(target, args);
            };
          },
        }),
      };
      const a = runner(instrumented, {
        quick: async ({ n }: { n: number }) => ({ n }),
        flaky: async ({ n }: { n: number }) => ({ n }),
      });
      const result = await a.run(twoSteps, { n: 1 });
      expect(result.status).toBe('completed');
      // In-process logs append each event as it happens, at no round trip; the others once, at the end.
      if (!log.local) expect(counted.n).toBeLessThanOrEqual(1);
      expect((await log.read(result.runId, 0, 100)).map((e) => e.type)).toEqual([
        'run:start',
        'step:start',
        'step:end',
        'step:start',
        'step:end',
        'run:end',
      ]);
    });
  });
}

describe('the retention option', () => {
  const invoker = functionInvoker([], {});
  it('takes positive integers of ms for completed and failed runs, and needs a run store', () => {
    expect(() =>
      createRunner({
        invoker,
        stores: { runs: memoryRunStore() },
        retention: { completedMs: 60_000, failedMs: 7 * 86_400_000 },
      }),
    ).not.toThrow();
    expect(() => createRunner({ invoker, stores: { runs: memoryRunStore() }, retention: {} })).not.toThrow();
    expect(() =>
      createRunner({ invoker, stores: { runs: memoryRunStore() }, retention: { completedMs: 0, failedMs: 1.5 } }),
    ).toThrow(
      /retention\.completedMs: Expected `completedMs` to be a positive integer[\s\S]*retention\.failedMs: Expected `failedMs` to be a positive integer/,
    );
    expect(() => createRunner({ invoker, stores: { runs: memoryRunStore() }, retention: 86_400_000 as never })).toThrow(
      /Expected `retention` to be an object \{ completedMs\?, failedMs\? \}/,
    );
    expect(() => createRunner({ invoker, retention: { completedMs: 1_000 } })).toThrow(
      /retention: Retention applies to durable runs/,
    );
  });
});
