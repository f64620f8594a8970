// Runners sharing chainkit/postgres checkpoints and idempotency, as replicas do (each on a pool of
// its own): a token resumes once, a run id's write takes effect once, a duplicate waits no longer than it may.
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineTool, findAndDelete, taskTools } from 'chainkit';
import { createMockInvoker } from 'chainkit/testing';
import { postgresStores, type PostgresStoresOptions } from '../../src/postgres/index.js';
import { idempotencyStoreKey } from '../../src/run/call-context.js';
import { addOne, TASK, workerInvoker } from '../fixtures/redis-worker.js';
import { expectedAfterUndo, retriedAfterUndo, undoneMarkContract } from '../helpers/undone-retry.js';

// Real PostgreSQL on 127.0.0.1:5432 (db test, user postgres); the schema is dropped afterwards.
const schema = `ck_runner_${process.pid}_${Date.now() % 1_000_000}`;
const connection = { host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test' };
const pools: (pg.Pool & { statements: () => number })[] = [];
afterAll(async () => {
  await pools[0]?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  for (const p of pools) await p.end();
});
/** A replica's pool (one connection), counting the statements it sends. */
function replicaPool(): pg.Pool & { statements: () => number } {
  const p = new pg.Pool({ ...connection, max: 1 });
  let count = 0;
  const query = p.query.bind(p);
  p.query = ((...args: Parameters<typeof query>) => {
    count++;
    return query(...args);
  }) as typeof p.query;
  const counted = Object.assign(p, { statements: () => count });
  pools.push(counted);
  return counted;
}
const secret = 'a-secret-shared-by-all-replicas';
/** A replica: its own pool and runner; checkpoints and idempotency on Postgres. */
function replica(options: PostgresStoresOptions = {}, invoker = workerInvoker()) {
  const pool = replicaPool();
  const stores = postgresStores(pool, { schema, pollMs: 10, ...options });
  const runner = createRunner({
    invoker,
    tools: [...taskTools, pay, drop],
    chains: [findAndDelete, addOne],
    secret,
    stores: { checkpoints: stores.checkpoints, idempotency: stores.idempotency },
  });
  return { pool, invoker, runner, stores };
}
/** Where the store keeps `key` of a `pay` call without a context: scoped per tool and caller. */
const payKey = (key: string) => idempotencyStoreKey('pay', {}, key);
const pay = defineTool({
  name: 'pay',
  description: 'pay',
  input: z.object({}),
  output: z.object({ ok: z.boolean() }),
  effect: 'write',
  timeoutMs: 5000,
});
const drop = defineTool({
  name: 'drop',
  description: 'drop',
  input: z.object({}),
  output: z.object({ ok: z.boolean() }),
  effect: 'destructive',
  timeoutMs: 40,
});
const context = { userId: TASK.user_id };
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('chainkit/postgres under runners', () => {
  it('a token issued by A, resumed at once by A, B and C, deletes exactly once', async () => {
    const [a, b, c] = [replica(), replica(), replica()];
    const gate = await a.runner.run(findAndDelete, { match: 'groceries' }, { context });
    if (gate.status !== 'awaiting_confirmation') throw new Error(gate.status);
    const results = await Promise.all(
      [a, b, c].map((r) => r.runner.resume(gate.resumeToken, { approved: true }, { context })),
    );
    const outcomes = results.map((r) => (r.status === 'failed' ? r.error.code : r.status));
    expect(outcomes.filter((s) => s === 'completed')).toHaveLength(1);
    expect(outcomes.filter((s) => s === 'already_used')).toHaveLength(2);
    expect([a, b, c].flatMap((r) => r.invoker.callsTo('delete_task'))).toHaveLength(1);
    await Promise.all([a, b, c].map((r) => r.runner.close()));
  });

  it('keeps an undone mark in place of the result, and only over one', async () => {
    await undoneMarkContract(postgresStores(replicaPool(), { schema }).idempotency, `mark-${Date.now()}`);
  });

  it('a write undone after a failed run is done again when the run is retried on another replica', async () => {
    const runId = `undo-${Date.now()}`;
    const got = await retriedAfterUndo(() => postgresStores(replicaPool(), { schema }).idempotency, runId);
    expect(got).toEqual(expectedAfterUndo(runId));
  });

  it('the same run id on two replicas adds once; both get its result', async () => {
    const [b, c] = [replica(), replica()];
    const runId = `req-${Date.now()}`;
    const [inB, inC] = await Promise.all(
      [b, c].map((r) => r.runner.run(addOne, { title: 'Pay rent' }, { context, runId })),
    );
    expect([inB!.status, inC!.status]).toEqual(['completed', 'completed']);
    expect(inB!.status === 'completed' && inB!.output).toEqual(inC!.status === 'completed' && inC!.output);
    expect([b, c].flatMap((r) => r.invoker.callsTo('add_task'))).toHaveLength(1);
    expect([inB!, inC!].filter((r) => r.trace.steps[0]!.status === 'cached')).toHaveLength(1);
    await Promise.all([b, c].map((r) => r.runner.close()));
  });

  it('a duplicate waiting for a call in flight elsewhere ends at its deadline, and stops polling', async () => {
    const elsewhere = postgresStores(replicaPool(), { schema }).idempotency;
    await elsewhere.begin(payKey('pg-k1')); // in flight in "another process"
    const r = replica(
      { pendingWaitMs: 3000 },
      createMockInvoker([...taskTools, pay, drop], { pay: { ok: { ok: true } } }),
    );
    await r.stores.migrate(); // connected, tables found: the 60 ms below are the wait's alone
    const result = await r.runner.invoke('pay', {}, { idempotencyKey: 'pg-k1', timeoutMs: 60 });
    expect(result.status === 'failed' && result.error).toMatchObject({
      category: 'timeout',
      code: 'deadline_exceeded',
    });
    expect(r.invoker.calls).toHaveLength(0);
    await pause(30);
    const sent = r.pool.statements();
    await pause(60);
    expect(r.pool.statements()).toBe(sent); // nothing polls on behalf of a call that is over
    await r.runner.close();
  });

  it('a duplicate that outlives pendingWaitMs fails with conflict; one that sees the result gets it, cached', async () => {
    const elsewhere = postgresStores(replicaPool(), { schema }).idempotency;
    await elsewhere.begin(payKey('pg-k2'));
    const r = replica(
      { pendingWaitMs: 40 },
      createMockInvoker([...taskTools, pay, drop], { pay: { ok: { ok: false } } }),
    );
    const waited = await r.runner.invoke('pay', {}, { idempotencyKey: 'pg-k2', timeoutMs: 10_000 });
    expect(waited.status === 'failed' && waited.error.category).toBe('conflict');
    await elsewhere.begin(payKey('pg-k3'));
    const pending = r.runner.invoke('pay', {}, { idempotencyKey: 'pg-k3', timeoutMs: 10_000 });
    await pause(20);
    await elsewhere.complete(payKey('pg-k3'), { ok: true });
    const got = await pending;
    expect(got.status === 'completed' && got.output).toEqual({ ok: true });
    expect(got.trace.steps[0]!.status).toBe('cached');
    expect(r.invoker.calls).toHaveLength(0);
    await r.runner.close();
  });

  it('holds the claim of a call in flight until its deadline, past pendingTtlMs: a duplicate on another replica waits for it', async () => {
    const invoker = createMockInvoker([...taskTools, pay, drop], {
      pay: [async () => (await pause(400), { ok: true }), { ok: { ok: true } }],
    });
    const [a, b] = [replica({ pendingTtlMs: 100 }, invoker), replica({ pendingTtlMs: 100 }, invoker)];
    const first = a.runner.invoke('pay', {}, { idempotencyKey: 'pg-k6', timeoutMs: 3000 });
    await pause(250); // the call is in flight, past the store's pendingTtlMs
    const duplicate = b.runner.invoke('pay', {}, { idempotencyKey: 'pg-k6', timeoutMs: 3000 });
    const results = await Promise.all([first, duplicate]);
    expect(results.map((r) => r.status)).toEqual(['completed', 'completed']);
    expect(invoker.callsTo('pay')).toHaveLength(1);
    await Promise.all([a.runner.close(), b.runner.close()]);
  });

  it('keeps the key of a write whose outcome is unknown: a duplicate on another replica gets that failure, the tool runs once', async () => {
    const invoker = createMockInvoker([...taskTools, pay, drop], {
      drop: [() => new Promise(() => {}), { ok: { ok: true } }],
    }); // hangs, ignoring its signal
    const [a, b] = [replica({}, invoker), replica({}, invoker)];
    const first = a.runner.invoke('drop', {}, { idempotencyKey: 'pg-k5', timeoutMs: 2000 });
    await pause(20);
    const duplicate = b.runner.invoke('drop', {}, { idempotencyKey: 'pg-k5', timeoutMs: 2000 });
    const results = [
      await first,
      await duplicate,
      await b.runner.invoke('drop', {}, { idempotencyKey: 'pg-k5', timeoutMs: 2000 }),
    ];
    for (const r of results)
      expect(r.status === 'failed' && r.error).toMatchObject({ category: 'timeout', retryable: false });
    expect(results[2]!.status === 'failed' && results[2]!.error.message).toMatch(/outcome is unknown/);
    expect(invoker.calls).toHaveLength(1);
    await Promise.all([a.runner.close(), b.runner.close()]);
  });
});
