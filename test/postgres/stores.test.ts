// chainkit/postgres checkpoints and idempotency on a real PostgreSQL, its migration when processes
// start together, and its failures when the server cannot be reached.
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { postgresStores, type PostgresStoresOptions } from '../../src/postgres/index.js';
import { CheckpointEncodeError } from '../../src/stores/serialize.js';
import type { Checkpoint, IdempotencyClaim } from '../../src/stores/types.js';

// Real PostgreSQL on 127.0.0.1:5432 (db test, user postgres); every schema made here is dropped afterwards.
const base = `ck_stores_${process.pid}_${Date.now() % 1_000_000}`;
const connection = { host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test' };
const pool = new pg.Pool({ ...connection, max: 4 });
const pools: pg.Pool[] = [];
const schemas: string[] = [];
afterAll(async () => {
  for (const p of pools) await p.end();
  for (const s of schemas) await pool.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  await pool.end();
});
let n = 0;
const schema = (): string => {
  const s = `${base}_${++n}`;
  schemas.push(s);
  return s;
};
/** A pool of its own ("another process"), ended afterwards; `statements` counts what it sends. */
function ownPool(config: pg.PoolConfig = {}): pg.Pool & { statements: () => number } {
  const p = new pg.Pool({ ...connection, max: 1, ...config });
  pools.push(p);
  let count = 0;
  const query = p.query.bind(p);
  p.query = ((...args: Parameters<typeof query>) => {
    count++;
    return query(...args);
  }) as typeof p.query;
  return Object.assign(p, { statements: () => count });
}
const make = (options: PostgresStoresOptions = {}, on: pg.Pool = pool) =>
  postgresStores(on, { schema: schema(), pollMs: 5, ...options });
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

function checkpoint(id: string, over: Partial<Checkpoint> = {}): Checkpoint {
  const now = Date.now();
  return {
    v: 1,
    id,
    runId: `run-${id}`,
    traceId: 't',
    chain: 'c',
    fingerprint: 'f',
    input: {},
    contextHash: 'ctx-a',
    results: {},
    done: [],
    gate: 'g',
    startedAt: now,
    createdAt: now,
    expiresAt: now + 60_000,
    trace: [],
    ...over,
  };
}
const statusOf = (r: { status: string }) => r.status;

describe('postgres checkpoints', () => {
  it('keeps what the codec keeps, refuses what it cannot keep on save, and takes at most once', async () => {
    const { checkpoints: store } = make();
    const results = {
      get: { at: new Date(5), big: 2n ** 70n, none: undefined, list: [NaN, -0], looksTagged: { $ck: 'date', v: 0 } },
    };
    await store.save(checkpoint('rich', { results, input: { n: 7n } }));
    for (const r of [await store.peek('rich'), await store.take('rich')]) {
      if (r.status !== 'taken') throw new Error(r.status);
      expect(r.checkpoint.results).toEqual(results);
      expect(r.checkpoint.input).toEqual({ n: 7n });
    }
    expect(statusOf(await store.take('rich'))).toBe('used');
    expect(statusOf(await store.peek('rich'))).toBe('used');
    expect(statusOf(await store.take('never'))).toBe('missing');
    await expect(store.save(checkpoint('bad', { results: { get: { cb: () => 1 } } }))).rejects.toBeInstanceOf(
      CheckpointEncodeError,
    );
    expect(statusOf(await store.peek('bad'))).toBe('missing');
    // Saving again under a used id clears its tombstone.
    await store.save(checkpoint('rich'));
    expect(statusOf(await store.take('rich'))).toBe('taken');
  });

  it('one checkpoint taken at once by 3 processes: one gets it, the others get used', async () => {
    const s = schema();
    const mine = postgresStores(pool, { schema: s });
    await mine.checkpoints.save(checkpoint('race'));
    const takers = [0, 1, 2].map(() => postgresStores(ownPool(), { schema: s }).checkpoints);
    for (let round = 0; round < 10; round++) {
      const id = `race-${round}`;
      await mine.checkpoints.save(checkpoint(id));
      const got = await Promise.all(takers.map((t) => t.take(id).then(statusOf)));
      expect(got.sort()).toEqual(['taken', 'used', 'used']);
    }
  });

  it('an expired checkpoint is missing, and takes leave no tombstone for it', async () => {
    const { checkpoints: store } = make();
    const t = Date.now();
    await store.save(checkpoint('old', { createdAt: t - 100, expiresAt: t - 1 }));
    expect(statusOf(await store.peek('old'))).toBe('missing');
    expect(statusOf(await store.take('old'))).toBe('missing');
    expect(statusOf(await store.take('old'))).toBe('missing');
  });

  it('bounds the pending checkpoints of one context; another context keeps its own', async () => {
    const { checkpoints: store } = make({ maxPendingPerContext: 5 });
    await store.save(checkpoint('a-1', { contextHash: 'ctx-a' }));
    const t = Date.now();
    for (let i = 0; i < 12; i++)
      await store.save(checkpoint(`b-${i}`, { contextHash: 'ctx-b', createdAt: t + i, expiresAt: t + 60_000 + i }));
    expect(statusOf(await store.peek('a-1'))).toBe('taken');
    const b = await Promise.all(Array.from({ length: 12 }, (_, i) => store.peek(`b-${i}`).then(statusOf)));
    expect(b).toEqual([...Array<string>(7).fill('missing'), ...Array<string>(5).fill('taken')]); // its own oldest went first
  });

  it('a taken checkpoint frees its slot', async () => {
    const { checkpoints: store } = make({ maxPendingPerContext: 3 });
    const t = Date.now();
    for (let i = 0; i < 3; i++)
      await store.save(checkpoint(`t-${i}`, { contextHash: 'ctx-t', createdAt: t + i, expiresAt: t + 60_000 + i }));
    expect(statusOf(await store.take('t-1'))).toBe('taken');
    await store.save(checkpoint('t-3', { contextHash: 'ctx-t', createdAt: t + 3, expiresAt: t + 60_003 }));
    expect(await Promise.all(['t-0', 't-1', 't-2', 't-3'].map((id) => store.peek(id).then(statusOf)))).toEqual([
      'taken',
      'used',
      'taken',
      'taken',
    ]);
  });
});

/** Stops a pending claim's waiting; returns its status. */
function stop(claim: IdempotencyClaim): string {
  if (claim.status === 'pending') {
    claim.cancel?.();
    claim.settled.catch(() => undefined);
  }
  return claim.status;
}

describe('postgres idempotency', () => {
  it('claims a key once among 3 processes; the others wait and get the result kept', async () => {
    const s = schema();
    const stores = [0, 1, 2].map(() => postgresStores(ownPool(), { schema: s, pollMs: 5 }).idempotency);
    await postgresStores(pool, { schema: s }).migrate();
    const claims = await Promise.all(stores.map((st) => st.begin('pay-1')));
    const winner = claims.findIndex((c) => c.status === 'new');
    expect(claims.map((c) => c.status).sort()).toEqual(['new', 'pending', 'pending']);
    await stores[winner]!.complete('pay-1', { paid: 10, at: '2024-01-01' });
    for (const c of claims)
      if (c.status === 'pending') await expect(c.settled).resolves.toEqual({ paid: 10, at: '2024-01-01' });
    expect(await stores[0]!.begin('pay-1')).toEqual({
      status: 'done',
      at: expect.any(Number),
      value: { paid: 10, at: '2024-01-01' },
    });
  });

  it('releases a key after a failure (waiters get a conflict), and keeps undefined and null results apart', async () => {
    const { idempotency: store } = make();
    expect(await store.begin('k')).toEqual({ status: 'new' });
    const waiter = await store.begin('k');
    await store.fail('k', new Error('400 bad request'));
    await expect(waiter.status === 'pending' && waiter.settled).rejects.toMatchObject({
      status: 409,
      message: /failed elsewhere/,
    });
    expect(await store.begin('k')).toEqual({ status: 'new' }); // released: runs again
    await store.complete('k', undefined);
    expect(await store.begin('k')).toEqual({ status: 'done', at: expect.any(Number), value: undefined });
    await store.begin('n');
    await store.complete('n', null);
    expect(await store.begin('n')).toEqual({ status: 'done', at: expect.any(Number), value: null });
  });

  it('an unknown outcome kept after a stall never replaces a late answer already kept', async () => {
    const { idempotency: store } = make();
    expect(await store.begin('late')).toEqual({ status: 'new' });
    const unknown = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    await store.fail('late', unknown, true);
    await store.completeLate!('late', { paid: 3 });
    // A second write of the unknown failure, stalled in the pool until now, lands after the late answer.
    await store.fail('late', unknown, true);
    expect(await store.begin('late')).toEqual({ status: 'done', at: expect.any(Number), value: { paid: 3 } });
  });

  it('a duplicate waits at most pendingWaitMs, then fails with conflict', async () => {
    const { idempotency: store } = make({ pendingWaitMs: 40 });
    await store.begin('slow');
    const t0 = Date.now();
    const waiter = await store.begin('slow');
    await expect(waiter.status === 'pending' && waiter.settled).rejects.toMatchObject({
      status: 409,
      message: /still in flight/,
    });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(35);
    expect(Date.now() - t0).toBeLessThan(1000);
  });

  it('cancel stops the polling at once: no statement after it', async () => {
    const own = ownPool();
    const { idempotency: store } = make({ pendingWaitMs: 10_000, sweepIntervalMs: Infinity }, own);
    await store.begin('held');
    const waiter = await store.begin('held');
    await pause(40);
    expect(stop(waiter)).toBe('pending');
    const sent = own.statements();
    expect(sent).toBeGreaterThan(3); // it was polling
    await pause(60);
    expect(own.statements()).toBe(sent);
  });

  it('keeps the key of a write whose outcome is unknown for pendingTtlMs, answering its failure without running', async () => {
    const { idempotency: store } = make({ pendingTtlMs: 80 });
    await store.begin('drop');
    const waiter = await store.begin('drop');
    await store.fail('drop', new Error('socket hang up'), true);
    await expect(waiter.status === 'pending' && waiter.settled).rejects.toMatchObject({
      info: { code: 'outcome_unknown', outcomeUnknown: true },
    });
    const dup = await store.begin('drop');
    await expect(dup.status === 'pending' && dup.settled).rejects.toMatchObject({
      message: expect.stringMatching(
        /^socket hang up A call with the same idempotency key is still waiting for its answer/,
      ),
      info: { outcomeUnknown: true },
    });
    await pause(120);
    expect(await store.begin('drop')).toEqual({ status: 'new' }); // the marker lapsed
  });

  it("a dead process's pending marker lapses after pendingTtlMs; a kept result after its TTL", async () => {
    const { idempotency: store } = make({ pendingTtlMs: 50 });
    await store.begin('orphan');
    expect(stop(await store.begin('orphan'))).toBe('pending');
    await pause(80);
    expect(await store.begin('orphan')).toEqual({ status: 'new' });
    await store.complete('orphan', 1, 40);
    expect(await store.begin('orphan')).toEqual({ status: 'done', at: expect.any(Number), value: 1 });
    await pause(70);
    expect(await store.begin('orphan')).toEqual({ status: 'new' });
  });
});

describe('postgres stores: migration, sweeping, failures', () => {
  it('two processes migrating the same new schema at once both succeed, and tables are created once', async () => {
    const s = schema();
    const [a, b] = [postgresStores(ownPool(), { schema: s }), postgresStores(ownPool(), { schema: s })];
    await Promise.all([a.migrate(), b.migrate(), a.migrate()]);
    const tables = await pool.query<{ table_name: string }>(
      'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name',
      [s],
    );
    expect(tables.rows.map((r) => r.table_name)).toEqual([
      'checkpoints',
      'checkpoints_used',
      'idempotency',
      'meta',
      'run_journal',
      'runs',
    ]);
    // A process that finds the tables at its version runs no DDL: two reads, then straight to work.
    const later = ownPool();
    const c = postgresStores(later, { schema: s, sweepIntervalMs: Infinity });
    await c.checkpoints.save(checkpoint('after'));
    expect(later.statements()).toBe(3);
    expect(statusOf(await b.checkpoints.take('after'))).toBe('taken');
  });

  it('creates its tables on first use, without migrate()', async () => {
    const { idempotency } = make();
    expect(await idempotency.begin('first')).toEqual({ status: 'new' });
  });

  it('works without prepared statements (for poolers that do not keep them)', async () => {
    const own = ownPool();
    const names: unknown[] = [];
    const query = own.query.bind(own);
    own.query = ((...args: Parameters<typeof query>) => {
      names.push((args[0] as { name?: unknown }).name);
      return query(...args);
    }) as typeof own.query;
    const { checkpoints, idempotency } = make({ preparedStatements: false }, own);
    await checkpoints.save(checkpoint('plain'));
    expect(statusOf(await checkpoints.take('plain'))).toBe('taken');
    expect(await idempotency.begin('plain')).toEqual({ status: 'new' });
    expect(names.length).toBeGreaterThan(3);
    expect(names.every((name) => name === undefined)).toBe(true);
  });

  it('deletes expired rows in the background of a write; close() waits for it', async () => {
    const s = schema();
    const stores = postgresStores(pool, { schema: s, sweepIntervalMs: Infinity });
    const t = Date.now();
    await stores.idempotency.begin('gone');
    await stores.idempotency.complete('gone', 1, 1);
    await stores.checkpoints.save(checkpoint('gone', { createdAt: t - 10, expiresAt: t + 1 }));
    await stores.idempotency.begin('stays');
    await pause(10);
    const sweeping = postgresStores(pool, { schema: s }); // its first write sweeps
    await sweeping.idempotency.begin('trigger');
    await sweeping.close();
    const left = await pool.query<{ key: string }>(`SELECT key FROM "${s}".idempotency ORDER BY key`);
    expect(left.rows.map((r) => r.key)).toEqual(['stays', 'trigger']);
    expect((await pool.query(`SELECT 1 FROM "${s}".checkpoints`)).rowCount).toBe(0);
  });

  it('fails fast with store_unavailable when the server cannot be reached, and tries again on the next call', async () => {
    const dead = ownPool({ port: 1, connectionTimeoutMillis: 300 });
    const stores = postgresStores(dead, { schema: schema() });
    const t0 = Date.now();
    for (const call of [
      () => stores.runs.get('r'),
      () => stores.idempotency.begin('k'),
      () => stores.checkpoints.take('c'),
      () => stores.migrate(),
    ]) {
      await expect(call()).rejects.toMatchObject({ info: { category: 'unavailable', code: 'store_unavailable' } });
    }
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(dead.statements()).toBeGreaterThanOrEqual(4); // each call tried the server again
  });

  it('refuses a schema that is not a plain identifier, and bad options, when made', () => {
    for (const bad of ['x"; DROP TABLE users; --', '1abc', '', 'a'.repeat(64), 'with space']) {
      expect(() => postgresStores(pool, { schema: bad })).toThrow(/schema/);
    }
    expect(() => postgresStores(pool, { pendingTtlMs: 1.5 })).toThrow(/pendingTtlMs/);
    expect(() => postgresStores(pool, { pollMs: 2 ** 31 })).toThrow(/pollMs/);
    expect(() => postgresStores(pool, { maxPendingPerContext: 0 })).toThrow(/maxPendingPerContext/);
    expect(() => postgresStores(pool, { sweepIntervalMs: 0 })).toThrow(/sweepIntervalMs/);
    expect(() => postgresStores({} as pg.Pool)).toThrow(/Pool/);
  });
});
