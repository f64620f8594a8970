// The Postgres run store keeps the run-store contract, on a real PostgreSQL; and a recovered run
// takes over the idempotency claim its dead owner left.
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { SCHEMA_VERSION } from '../../src/postgres/schema.js';
import { postgresStores } from '../../src/postgres/index.js';
import {
  entry,
  record,
  runEventsContract,
  runStoreContract,
  takeOverContract,
  watchAcrossRunnersContract,
  cancelAcrossRunnersContract,
  decideAcrossRunnersContract,
  type RunEventsSetup,
} from '../stores/run-store-contract.js';
import type { RunStore } from '../../src/stores/run-store.js';

// Real PostgreSQL on 127.0.0.1:5432 (db test, user postgres); each setup gets a schema of its own, all dropped afterwards.
const base = `ck_runs_${process.pid}_${Date.now() % 1_000_000}`;
const connection = { host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test' };
const pool = new pg.Pool({ ...connection, max: 4 });
const pools: pg.Pool[] = [pool];
const schemas: string[] = [];
afterAll(async () => {
  for (const store of eventStores) await store.close?.();
  for (const p of pools.slice(1)) await p.end();
  for (const s of schemas) await pool.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  await pool.end();
});
let n = 0;
const schema = (): string => {
  const s = `${base}_${++n}`;
  schemas.push(s);
  return s;
};

/** PostgreSQL's plan for `sql` with sequential scans off (a tiny table: whether an index can answer at all). */
async function planOf(sql: string): Promise<string> {
  const client = await pool.connect();
  try {
    await client.query(`SET enable_seqscan = off`);
    return (await client.query(`EXPLAIN ${sql}`)).rows.map((r) => r['QUERY PLAN']).join('\n');
  } finally {
    await client.query(`RESET enable_seqscan`);
    client.release();
  }
}

runStoreContract('postgres', async () => {
  const s = schema();
  const { runs, idempotency } = postgresStores(pool, { schema: s, pollMs: 5 });
  return {
    runs,
    idempotency,
    peers: async (count) =>
      Array.from({ length: count }, () => {
        const own = new pg.Pool({ ...connection, max: 1 }); // one connection each: three "processes"
        pools.push(own);
        return postgresStores(own, { schema: s }).runs;
      }),
  };
});

const eventStores: RunStore[] = [];
const eventsSetup = async (): Promise<RunEventsSetup> => {
  const s = schema();
  const runs = postgresStores(pool, { schema: s, maxEventsPerRun: 50 }).runs;
  eventStores.push(runs);
  return {
    runs,
    maxEventsPerRun: 50,
    peers: async (count) =>
      Array.from({ length: count }, () => {
        const own = new pg.Pool({ ...connection, max: 1 });
        pools.push(own);
        const peer = postgresStores(own, { schema: s }).runs;
        eventStores.push(peer);
        return peer;
      }),
  };
};
runEventsContract('postgres', eventsSetup);
watchAcrossRunnersContract('postgres', eventsSetup);
cancelAcrossRunnersContract('postgres', eventsSetup);

takeOverContract('postgres', async () => postgresStores(pool, { schema: schema(), pollMs: 5 }).idempotency);

/** Stores on a pool of their own (a schema of their own) that count the statements sent. */
async function countedStores(max: number) {
  const counted = new pg.Pool({ ...connection, max });
  pools.push(counted);
  let statements = 0;
  const query = counted.query.bind(counted);
  counted.query = ((...args: Parameters<typeof query>) => {
    statements++;
    return query(...args);
  }) as typeof counted.query;
  const stores = postgresStores(counted, { schema: schema(), sweepIntervalMs: Infinity });
  await stores.migrate();
  return { stores, statements: () => statements };
}

describe('postgres run store', () => {
  it('takes one statement per operation once its tables exist: journal with its idempotency result included', async () => {
    const { stores, statements } = await countedStores(1);
    const { runs, idempotency } = stores;
    const rec = record('A', Date.now() + 60_000);
    const count = async (op: () => Promise<unknown>): Promise<number> => {
      const before = statements();
      await op();
      return statements() - before;
    };
    expect(await count(() => runs.create(rec, Date.now()))).toBe(1);
    expect(await count(() => runs.journal(rec.runId, 'A', [entry('s1', 1)], { key: `${rec.runId}-k`, value: 1 }))).toBe(
      1,
    );
    expect(await count(() => runs.journal(rec.runId, 'A', [entry('s2', 2)]))).toBe(1);
    expect(await count(() => runs.renew('A', [rec.runId], Date.now() + 90_000))).toBe(1);
    expect(await count(() => runs.get(rec.runId))).toBe(1);
    expect(await count(() => runs.finish(rec.runId, 'A', 'completed', {}, 60_000))).toBe(1);
    expect(await count(() => runs.claimExpired('B', Date.now(), Date.now() + 1000, 10))).toBe(1); // nothing to claim
    expect(await idempotency.begin(`${rec.runId}-k`)).toEqual({ status: 'done', at: expect.any(Number), value: 1 });
  });

  it('upgrades tables of schema version 1 in place: a run recorded before keeps working, new runs are bound and filtered', async () => {
    const s = schema();
    const old = postgresStores(pool, { schema: s });
    await old.migrate();
    const before = record('A', Date.now() - 1000, { contextHash: undefined });
    await old.runs.create(before, Date.now() - 2000);
    // Back to version 1: the columns it did not have, and its version number.
    await pool.query(
      `ALTER TABLE "${s}".runs DROP COLUMN chain, DROP COLUMN fingerprint, DROP COLUMN context_hash; UPDATE "${s}".meta SET value = '1' WHERE key = 'version'`,
    );
    const stores = postgresStores(pool, { schema: s });
    const rec = record('A', Date.now() + 60_000);
    expect(await stores.runs.create(rec, Date.now())).toEqual({ status: 'created' }); // migrates first
    expect((await pool.query(`SELECT value FROM "${s}".meta WHERE key = 'version'`)).rows[0].value).toBe(
      String(SCHEMA_VERSION),
    );
    expect(await stores.runs.create({ ...rec, contextHash: 'other' }, Date.now())).toEqual({ status: 'mismatch' });
    // The run recorded by version 1 has no binding: its caller's retry still finds it, a filtered claim still recovers it.
    expect(
      (await stores.runs.claimExpired('B', Date.now(), Date.now() + 60_000, 10, { chains: [] })).map((r) => r.runId),
    ).toEqual([before.runId]);
  });

  it('upgrades tables of schema version 6 in place: a user’s runs recorded before are listed by context, through an index', async () => {
    const s = schema();
    const old = postgresStores(pool, { schema: s });
    await old.migrate();
    const before = record('A', Date.now() + 60_000, { startedAt: 1_000, contextHash: 'ctx-old' });
    await old.runs.create(before, Date.now());
    await pool.query(
      `DROP INDEX "${s}".runs_context_started; UPDATE "${s}".meta SET value = '6' WHERE key = 'version'`,
    );
    const stores = postgresStores(pool, { schema: s });
    await stores.migrate();
    expect((await pool.query(`SELECT value FROM "${s}".meta WHERE key = 'version'`)).rows[0].value).toBe(
      String(SCHEMA_VERSION),
    );
    const mine = {
      statuses: ['running'] as const,
      since: -Infinity,
      until: Infinity,
      limit: 10,
      contexts: [{ hash: 'ctx-old', except: [] }],
    };
    expect((await stores.runs.listRuns!(mine)).runs.map((r) => r.runId)).toEqual([before.runId]);
    expect(
      await planOf(
        `SELECT run_id FROM "${s}".runs WHERE context_hash = 'ctx-old' ORDER BY started_at DESC, run_id DESC LIMIT 50`,
      ),
    ).toMatch(/runs_context_started/);
  });

  it('upgrades tables of schema version 2 in place: runs recorded before are listed by their start time, through an index', async () => {
    const s = schema();
    const old = postgresStores(pool, { schema: s });
    await old.migrate();
    const before = record('A', Date.now() + 60_000, { startedAt: 1_000 });
    await old.runs.create(before, Date.now());
    await old.runs.finish(before.runId, 'A', 'completed', { status: 'completed' }, 60_000);
    // Back to version 2: no start/end columns, no listing indexes.
    await pool.query(
      `DROP INDEX "${s}".runs_status_started; DROP INDEX "${s}".runs_chain_started; ALTER TABLE "${s}".runs DROP COLUMN started_at, DROP COLUMN ended_at; UPDATE "${s}".meta SET value = '2' WHERE key = 'version'`,
    );
    const stores = postgresStores(pool, { schema: s });
    const rec = record('A', Date.now() + 60_000, { startedAt: 2_000 });
    expect(await stores.runs.create(rec, Date.now())).toEqual({ status: 'created' }); // migrates first
    expect((await pool.query(`SELECT value FROM "${s}".meta WHERE key = 'version'`)).rows[0].value).toBe(
      String(SCHEMA_VERSION),
    );
    const all = { statuses: ['running', 'completed'] as const, since: -Infinity, until: Infinity, limit: 10 };
    expect((await stores.runs.listRuns!(all)).runs.map((r) => [r.runId, r.startedAt])).toEqual([
      [rec.runId, 2_000],
      [before.runId, 1_000],
    ]);
    expect(
      await planOf(
        `SELECT run_id FROM "${s}".runs WHERE status = 'completed' ORDER BY started_at DESC, run_id DESC LIMIT 50`,
      ),
    ).toMatch(/runs_status_started/);
  });
});

decideAcrossRunnersContract('postgres', async () => {
  const s = schema();
  return {
    stores: async (count) =>
      Array.from({ length: count }, () => {
        const own = new pg.Pool({ ...connection, max: 2 }); // a pool each: three "processes"
        pools.push(own);
        const { runs, checkpoints } = postgresStores(own, { schema: s });
        eventStores.push(runs);
        return { runs, checkpoints };
      }),
  };
});

describe('postgres run store: a run ends and appends its last events in one statement', () => {
  const ev = (type: string) => JSON.stringify({ at: Date.now(), type, data: {} });
  const setup = async () => {
    const { stores, statements } = await countedStores(2);
    eventStores.push(stores.runs);
    return { runs: stores.runs, statements };
  };

  it('one statement: the end recorded, the events after the earlier ones, run:end last, kept for the retention', async () => {
    const { runs, statements } = await setup();
    const rec = record('A', Date.now() + 60_000);
    await runs.create(rec, Date.now());
    await runs.events!.append(rec.runId, [ev('run:start'), ev('step:start')]);
    const before = statements();
    const ended = await runs.finishWithEvents!(rec.runId, 'A', 'completed', { ok: 1 }, 60_000, [entry('s1', 1)], {
      events: [ev('step:end'), ev('run:end')],
      keepMs: 60_000,
      watched: false,
    });
    expect(ended).toBe(true);
    expect(statements() - before).toBe(1);
    expect((await runs.get(rec.runId))?.status).toBe('completed');
    expect((await runs.get(rec.runId))?.journal.map((e) => e.step)).toEqual(['s1']);
    const events = await runs.events!.read(rec.runId, 0, 10);
    expect(events.map((e) => [e.seq, e.type])).toEqual([
      [1, 'run:start'],
      [2, 'step:start'],
      [3, 'step:end'],
      [4, 'run:end'],
    ]);
  });

  it("measures an append's events once, not once per event row (a json parameter is read again by each call)", async () => {
    // One connection, so the statement the append prepared is this session's to explain under a generic plan:
    // per-row, the length of 10,000 events of 1 KB made the end statement ~50× slower.
    const own = new pg.Pool({ ...connection, max: 1 });
    pools.push(own);
    const runs = postgresStores(own, { schema: schema() }).runs;
    eventStores.push(runs);
    await runs.events!.append(`plan-${process.pid}`, [ev('run:start')]);
    const { rows } = await own.query<{ name: string }>(
      `SELECT name FROM pg_prepared_statements WHERE statement LIKE '%INSERT INTO%run_events (run_id, seq, event)%'`,
    );
    expect(rows).toHaveLength(1);
    const client = await own.connect();
    try {
      await client.query('SET plan_cache_mode = force_generic_plan');
      const plan = await client.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN (VERBOSE) EXECUTE ${rows[0]!.name}('r', '[]', NULL, 0, 10, 'c', false)`,
      );
      // The insert's per-row output: `c.base + <the element's place>`.
      const perRow = plan.rows.map((r) => r['QUERY PLAN']).filter((line) => line.includes('.base +'));
      expect(perRow.length).toBeGreaterThan(0);
      for (const line of perRow) expect(line).not.toContain('json_array_length');
    } finally {
      await client.query('RESET plan_cache_mode').catch(() => undefined);
      client.release();
    }
  });

  it('not the owner: nothing recorded, no event appended', async () => {
    const { runs } = await setup();
    const rec = record('A', Date.now() + 60_000);
    await runs.create(rec, Date.now());
    await runs.events!.append(rec.runId, [ev('run:start')]);
    expect(
      await runs.finishWithEvents!(rec.runId, 'B', 'completed', {}, 60_000, [], {
        events: [ev('run:end')],
        keepMs: 60_000,
        watched: false,
      }),
    ).toBe(false);
    expect((await runs.get(rec.runId))?.status).toBe('running');
    expect((await runs.events!.read(rec.runId, 0, 10)).map((e) => e.type)).toEqual(['run:start']);
  });

  it('a log past its retention (a run parked longer than its events are kept) starts afresh with the end', async () => {
    const { runs } = await setup();
    const rec = record('A', Date.now() + 60_000);
    await runs.create(rec, Date.now());
    await runs.events!.append(rec.runId, [ev('run:start')], 1); // kept 1 ms
    await new Promise((r) => setTimeout(r, 20));
    expect(
      await runs.finishWithEvents!(rec.runId, 'A', 'failed', {}, 60_000, [], {
        events: [ev('run:end')],
        keepMs: 60_000,
        watched: false,
      }),
    ).toBe(true);
    expect((await runs.events!.read(rec.runId, 0, 10)).map((e) => [e.seq, e.type])).toEqual([[1, 'run:end']]);
  });

  it('wakes a reader waiting for the events of a watched run', async () => {
    const { runs } = await setup();
    const rec = record('A', Date.now() + 60_000);
    await runs.create(rec, Date.now());
    await runs.events!.append(rec.runId, [ev('run:start')]);
    const t = Date.now();
    const woken = runs.events!.wait(rec.runId, 1, 20_000);
    await new Promise((r) => setTimeout(r, 100)); // the reader is listening
    await runs.finishWithEvents!(rec.runId, 'A', 'completed', {}, 60_000, [], {
      events: [ev('run:end')],
      keepMs: 60_000,
      watched: true,
    });
    await woken;
    expect(Date.now() - t).toBeLessThan(15_000); // woken by the NOTIFY, not by the timeout
  });
});
