// Bench: runner.listRuns over 100,000 recorded runs on PostgreSQL and Redis: the median time of a
// status filter (a page of 50; target under 50 ms) and whether PostgreSQL's plan uses an index.
// Needs Redis on 127.0.0.1:6379 and PostgreSQL on 127.0.0.1:5432 (db test). Run: npx tsx bench/list-runs.ts
import Redis from 'ioredis';
import pg from 'pg';
import { postgresStores } from '../src/postgres/index.js';
import { redisStores } from '../src/redis/index.js';
import { listQuery } from '../src/stores/run-list.js';
import type { RunStore } from '../src/stores/run-store.js';
import type { RunStatus } from '../src/stores/run-listing.js';

const RUNS = Number(process.env.LIST_RUNS ?? 100_000);
const HOUR = 3_600_000;
const statusOf = (i: number): RunStatus =>
  i % 20 === 0 ? 'awaiting_confirmation' : i % 20 === 1 ? 'running' : i % 5 === 0 ? 'failed' : 'completed';

async function timeFilters(runs: RunStore): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const status of ['awaiting_confirmation', 'completed'] as const) {
    const times: number[] = [];
    for (let i = 0; i < 21; i++) {
      const t = performance.now();
      const page = await runs.listRuns!(listQuery({ status }));
      times.push(performance.now() - t);
      if (page.runs.length !== 50) throw new Error(`expected a full page of ${status}, got ${page.runs.length}`);
    }
    out[status] = times.sort((a, b) => a - b)[10]!;
  }
  return out;
}

/** Records runs through the store itself: create, one journal entry, then finish (or left running). */
async function record(runs: RunStore, tag: string): Promise<void> {
  const t0 = Date.now() - RUNS;
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < RUNS; i = next++) {
      const runId = `${tag}-${i}`;
      const status = statusOf(i);
      await runs.create(
        {
          v: 1,
          runId,
          traceId: runId,
          chain: i % 2 ? 'refunds' : 'contacts',
          fingerprint: 'fp',
          input: { i },
          context: {},
          startedAt: t0 + i,
          deadlineAt: Date.now() + HOUR,
          status: 'running',
          owner: 'bench',
          leaseUntil: Date.now() + HOUR,
        },
        Date.now(),
      );
      if (status === 'running') continue;
      const result =
        status === 'awaiting_confirmation'
          ? { status, confirmation: { step: 'refund', tool: 'refund', prompt: `Refund order ${i}?`, expiresAt: '' } }
          : status === 'failed'
            ? { status, error: { category: 'timeout', code: 'tool_timeout' } }
            : { status };
      await runs.finish(runId, 'bench', status, result, HOUR);
    }
  };
  await Promise.all(Array.from({ length: 64 }, worker));
}

const rows: string[] = [];
const prefix = `bench-list-${process.pid}`;
const redis = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true });
try {
  const stores = redisStores(redis, { prefix });
  const t = performance.now();
  await record(stores.runs, 'r');
  const recordS = (performance.now() - t) / 1000;
  const times = await timeFilters(stores.runs);
  rows.push(
    `redis      ${RUNS} runs recorded in ${recordS.toFixed(1)} s; status filter (page of 50): awaiting ${times.awaiting_confirmation!.toFixed(2)} ms, completed ${times.completed!.toFixed(2)} ms (target < 50 ms)`,
  );
} finally {
  let cursor = '0';
  do {
    const [nextCursor, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = nextCursor;
    if (keys.length > 0) await redis.unlink(...keys);
  } while (cursor !== '0');
  redis.disconnect();
}

const schema = `bench_list_${process.pid}`;
const pool = new pg.Pool({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test', max: 16 });
try {
  // The listing statement exactly as the store sends it, for its plan below.
  let listed: { text: string; values: unknown[] } | undefined;
  const query = pool.query.bind(pool) as (q: unknown) => Promise<unknown>;
  (pool as unknown as { query: (q: unknown) => Promise<unknown> }).query = (q) => {
    const c = q as { text?: string; values?: unknown[] };
    if (typeof c.text === 'string' && c.text.includes('CROSS JOIN LATERAL') && c.values)
      listed = { text: c.text, values: c.values };
    return query(q);
  };
  const stores = postgresStores(pool, { schema, sweepIntervalMs: Infinity });
  await stores.migrate();
  const t = performance.now();
  await record(stores.runs, 'p');
  const recordS = (performance.now() - t) / 1000;
  await pool.query(`ANALYZE "${schema}".runs`);
  const times = await timeFilters(stores.runs);
  // The plan of the store's own listing statement (src/postgres/runs.ts, listRuns), as it last ran: a status filter, first page.
  if (!listed) throw new Error('the listing statement was not seen');
  // EXPLAIN takes no bound parameters: the statement is prepared, then explained with its values as literals.
  const literal = (v: unknown): string =>
    v === null ? 'NULL' : `'${String(Array.isArray(v) ? `{${v.join(',')}}` : v).replace(/'/g, "''")}'`;
  const client = await pool.connect();
  let plan: string;
  try {
    await client.query(`PREPARE bench_list AS ${listed.text}`);
    plan = (await client.query(`EXPLAIN EXECUTE bench_list(${listed.values.map(literal).join(', ')})`)).rows
      .map((r: Record<string, string>) => r['QUERY PLAN'])
      .join(' | ');
    await client.query('DEALLOCATE bench_list');
  } finally {
    client.release();
  }
  const index = /Index (Only )?Scan[^|]*runs_status_started|Bitmap Index Scan on runs_status_started/.exec(plan)?.[0];
  rows.push(
    `postgres   ${RUNS} runs recorded in ${recordS.toFixed(1)} s; status filter (page of 50): awaiting ${times.awaiting_confirmation!.toFixed(2)} ms, completed ${times.completed!.toFixed(2)} ms (target < 50 ms); plan uses an index: ${index ? `yes (${index})` : `NO: ${plan}`}`,
  );
} finally {
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
}
console.log(rows.join('\n'));
