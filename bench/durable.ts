// `npm run bench`, second table: the cost of durable runs (API.md §10) on the find-and-update chain
// of run.ts with instant tools, against a hand-written pg journal measured in the same run, and DBOS
// Transact on the same local PostgreSQL. Store round trips are counted, not estimated: pg through a
// counting `Client` class in each pool (every `client.query` is one round trip, `pool.query`
// included), Redis by wrapping `sendCommand` (a pipeline or MULTI block is one round trip).
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pRetry from 'p-retry';
import pTimeout from 'p-timeout';
import pg from 'pg';
import Redis from 'ioredis';
import { DBOS } from '@dbos-inc/dbos-sdk';
import { parseSchema, type Schema } from '../src/define/schema.js';
import { postgresStores } from '../src/postgres/index.js';
import { redisStores } from '../src/redis/index.js';
import {
  createRunner,
  functionInvoker,
  listTasks,
  updateTask,
  type Chain,
  type Runner,
  type RunnerOptions,
  type Tool,
} from '../src/index.js';
import type { RunStore } from '../src/stores/run-store.js';

type Impl = {
  list_tasks: (i: { user_id: string }) => unknown;
  update_task: (i: { task_id: string; title?: string }) => unknown;
};
/** What run.ts hands over: its chain, the rate-limit-free tool copies, the instant implementations. */
/**
 * `chain` updates with a plain write (`update_task` does not declare `idempotent`): a durable run
 * journals its start before calling it (one round trip, API.md §10). `idempotentChain` is the same
 * chain with the update declared `idempotent: true`, as the baselines treat it (they call it again
 * blindly after a crash): its rows show what the plain write's start record costs.
 */
export interface DurableBenchInput {
  chain: Chain;
  idempotentChain: Chain;
  tools: Tool[];
  impl: Impl;
  userId: string;
}

const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const SEQ = Number(process.env.BENCH_DURABLE_SEQ ?? 100);
const CONC = Number(process.env.BENCH_DURABLE_CONC ?? 256);
const IN_FLIGHT = 32;
const WARM = 30;
const COUNT_N = 20; // chains of the counting pass
const IDLE_MS = 1000; // DBOS polls its queues and schedules in the background: its idle rate is measured and subtracted
const STEPS = 3; // find, target (select), update
const TOOL_STEPS = 2; // find and update: what chainkit journals

const parse = <T>(schema: Schema<T, any>, value: unknown): T => {
  const r = parseSchema(schema, value);
  if (!r.success) throw new Error(r.error.issues[0]?.message ?? 'invalid');
  return r.data;
};

interface Counter {
  rt: number;
  cmds: number;
}
/** A pool whose every query is counted: pg's Pool runs `pool.query` on a client of this class too. */
function countingPool(counter: Counter): pg.Pool {
  class Counted extends pg.Client {}
  const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  (Counted.prototype as { query: unknown }).query = function (this: pg.Client, ...args: unknown[]) {
    counter.rt++;
    counter.cmds++;
    return query.apply(this, args);
  };
  const pool = new pg.Pool({ connectionString: PG_URL, max: 10, Client: Counted });
  pool.on('error', () => {});
  return pool;
}

/** Counts Redis commands, and round trips: a pipeline (MULTI included) writes all its commands at once. */
function countRedis(redis: Redis, counter: Counter): void {
  const send = redis.sendCommand.bind(redis);
  const seen = new WeakSet<object>();
  redis.sendCommand = ((command: Parameters<Redis['sendCommand']>[0], stream?: { isPipeline?: boolean }) => {
    counter.cmds++;
    if (!stream?.isPipeline) counter.rt++;
    else if (!seen.has(stream)) {
      seen.add(stream);
      counter.rt++;
    }
    return send(command, stream as never);
  }) as Redis['sendCommand'];
}

interface Row {
  name: string;
  run: () => Promise<unknown>;
  counter?: Counter;
  background?: boolean;
  chains: number;
  failed: number;
  seq: number[];
  conc: number[];
  rtPerChain?: number;
  cmdsPerChain?: number;
  recorded?: string;
  notDurable?: boolean;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ok = (row: Row, r: unknown): void => {
  row.chains++;
  const status = (r as { status?: string } | undefined)?.status;
  if (status !== undefined && status !== 'completed') {
    if (row.failed++ === 0) console.error(`${row.name}: ${JSON.stringify((r as { error?: unknown }).error)}`);
  }
};
async function sequential(row: Row, n: number): Promise<number> {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) ok(row, await row.run());
  return Number(process.hrtime.bigint() - t0) / 1000 / n;
}
/** `n` chains, `IN_FLIGHT` at a time: µs of wall time per chain (throughput). */
async function concurrent(row: Row, n: number): Promise<number> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next++ < n) ok(row, await row.run());
  };
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return Number(process.hrtime.bigint() - t0) / 1000 / n;
}

/** Runs the durable rows and prints their table. Skips (and says so) what PostgreSQL or Redis cannot run. */
export async function durableBench({
  chain,
  idempotentChain,
  tools,
  impl,
  userId,
}: DurableBenchInput): Promise<number> {
  const tag = `chainkit_bench_${process.pid}`;
  const schemas = { hand: `${tag}_hand`, plain: `${tag}_plain`, chainkit: `${tag}_ck`, dbos: `${tag}_dbos` };
  const prefix = `chainkit-bench-durable:${process.pid}`;
  const input = { match: 'dentist', title: 'Dentist 3pm' };
  const options = { context: { userId } };
  const notes: string[] = [];
  const rows: Row[] = [];
  const runners: Runner[] = [];
  const row = (name: string, run: () => Promise<unknown>, counter?: Counter, background = false): Row => {
    const r: Row = { name, run, chains: 0, failed: 0, seq: [], conc: [], background, ...(counter && { counter }) };
    rows.push(r);
    return r;
  };
  const runner = (stores?: RunnerOptions['stores']): Runner => {
    const r = createRunner({ invoker: functionInvoker(impl), tools, ...(stores && { stores }) });
    r.events.on('step:end', () => {}); // as in run.ts: listeners attached, payloads built
    runners.push(r);
    return r;
  };
  const runOn = (r: Runner) => () => r.run(chain, input, options);
  const runIdempotentOn = (r: Runner) => () => r.run(idempotentChain, input, options);
  /** "N of M runs; check run: completed, 3 steps journaled": a run with a known id, read back through `RunStore.get`. */
  const recorded = async (row: Row, r: Runner, runs: RunStore, count: number, twin?: Row): Promise<void> => {
    const runId = `bench-verify-${randomUUID()}`;
    await r.run(chain, input, { ...options, runId });
    const rec = await runs.get(runId);
    // Tool steps are journaled; the select is recomputed from them on recovery.
    const steps = rec?.journal.filter((e) => e.started === undefined).length ?? 0; // a plain write's start mark is not a step
    // The twin row (update declared idempotent) records its runs in the same store.
    const expected = row.chains + (twin?.chains ?? 0);
    row.notDurable = rec?.status !== 'completed' || steps !== TOOL_STEPS || count < expected;
    row.recorded = `${count} of ${expected} runs${twin ? ' (with its idempotent-update twin)' : ''}; check run: ${rec ? `${rec.status}, ${steps} steps journaled` : 'NOT RECORDED'}`;
  };

  const pgCount: Counter = { rt: 0, cmds: 0 };
  const dbosCount: Counter = { rt: 0, cmds: 0 };
  const redisCount: Counter = { rt: 0, cmds: 0 };
  const pool = countingPool(pgCount);
  const dbosPool = countingPool(dbosCount);
  const redis = new Redis({
    host: '127.0.0.1',
    port: 6379,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  redis.on('error', () => {});
  let pgUp = false;
  let dbosUp = false;
  let redisUp = false;
  const durable: { row: Row; twin?: Row; runner: Runner; runs: RunStore; count: () => Promise<number> }[] = [];
  let pgStores: ReturnType<typeof postgresStores> | undefined;
  let onPgRunner: Runner | undefined;
  let blocks: Block[] = [];
  try {
    try {
      await pool.query(`CREATE SCHEMA ${schemas.hand}; CREATE TABLE ${schemas.hand}.runs (run_id uuid PRIMARY KEY, chain text NOT NULL, input jsonb NOT NULL, status text NOT NULL, result jsonb, started_at timestamptz NOT NULL DEFAULT now(), ended_at timestamptz);
        CREATE TABLE ${schemas.hand}.steps (run_id uuid NOT NULL, step text NOT NULL, output jsonb NOT NULL, PRIMARY KEY (run_id, step));`);
      pgUp = true;
    } catch (error) {
      notes.push(
        `PostgreSQL rows skipped: nothing usable at ${PG_URL} (${error instanceof Error ? error.message : String(error)})`,
      );
    }

    row('chainkit, memory stores (no run store)', runOn(runner()));

    if (pgUp) {
      const h = schemas.hand;
      const call = <T>(fn: () => T) =>
        pRetry(() => pTimeout(Promise.resolve(fn()), { milliseconds: 3000 }), { retries: 3, minTimeout: 100 });
      // The baseline: run.ts's hand-written chain plus a journal (run row, one row per step output, final update).
      const handWritten = async (): Promise<unknown> => {
        const runId = randomUUID();
        await pool.query(`INSERT INTO ${h}.runs (run_id, chain, input, status) VALUES ($1, $2, $3, 'running')`, [
          runId,
          chain.name,
          input,
        ]);
        const listIn = parse(listTasks.input, { user_id: userId, status: 'all' });
        const list = parse(listTasks.output, await call(() => impl.list_tasks(listIn)));
        await pool.query(`INSERT INTO ${h}.steps (run_id, step, output) VALUES ($1, 'find', $2)`, [runId, list]);
        const needle = input.match.toLowerCase();
        const found = list.tasks.filter((t) => t.title.toLowerCase().includes(needle));
        if (found.length !== 1) throw new Error('expected one match');
        const updIn = parse(updateTask.input, { user_id: userId, task_id: found[0]!.task_id, title: input.title });
        const updated = parse(updateTask.output, await call(() => impl.update_task(updIn)));
        await pool.query(`INSERT INTO ${h}.steps (run_id, step, output) VALUES ($1, 'update', $2)`, [runId, updated]);
        await pool.query(`UPDATE ${h}.runs SET status = 'completed', result = $2, ended_at = now() WHERE run_id = $1`, [
          runId,
          updated,
        ]);
        return updated;
      };
      row('hand-written pg journal (baseline)', handWritten, pgCount);

      try {
        // DBOS Transact: its system tables in a schema of ours, on a pool of ours (so its queries are counted).
        DBOS.setConfig({
          name: 'chainkit-bench',
          systemDatabaseUrl: PG_URL,
          systemDatabasePool: dbosPool,
          systemDatabaseSchemaName: schemas.dbos,
          logLevel: 'error',
        });
        const workflow = DBOS.registerWorkflow(
          async (match: string, title: string) => {
            const listIn = parse(listTasks.input, { user_id: userId, status: 'all' });
            const list = await DBOS.runStep(async () => parse(listTasks.output, await impl.list_tasks(listIn)), {
              name: 'list_tasks',
            });
            const found = list.tasks.filter((t) => t.title.toLowerCase().includes(match.toLowerCase()));
            if (found.length !== 1) throw new Error('expected one match');
            const updIn = parse(updateTask.input, { user_id: userId, task_id: found[0]!.task_id, title });
            return DBOS.runStep(async () => parse(updateTask.output, await impl.update_task(updIn)), {
              name: 'update_task',
            });
          },
          { name: 'find_and_update' },
        );
        await DBOS.launch();
        dbosUp = true;
        row(
          'DBOS Transact 5 (registerWorkflow + 2 runStep)',
          () => workflow(input.match, input.title),
          dbosCount,
          true,
        );
      } catch (error) {
        notes.push(`DBOS row skipped: ${error instanceof Error ? error.message : String(error)}`);
      }

      pgStores = postgresStores(pool, { schema: schemas.chainkit });
      await pgStores.migrate();
      const onPg = runner(pgStores);
      onPgRunner = onPg;
      const pgRuns = `${schemas.chainkit}.runs`;
      const pgRow = row('chainkit, postgresStores (durable)', runOn(onPg), pgCount);
      const pgTwin = row(
        'chainkit, postgresStores (durable), update declared idempotent',
        runIdempotentOn(onPg),
        pgCount,
      );
      durable.push({
        row: pgRow,
        twin: pgTwin,
        runner: onPg,
        runs: pgStores.runs,
        count: async () => Number((await pool.query(`SELECT count(*) AS n FROM ${pgRuns}`)).rows[0].n),
      });
      row(
        'chainkit, postgresStores without .runs',
        runOn(runner({ checkpoints: pgStores.checkpoints, idempotency: pgStores.idempotency })),
        pgCount,
      );
    }

    try {
      await redis.connect();
      redisUp = true;
      countRedis(redis, redisCount);
      const rStores = redisStores(redis, { prefix });
      const { runs, ...withoutRuns } = rStores;
      const onRedis = runner(rStores);
      const redisRow = row('chainkit, redisStores (durable)', runOn(onRedis), redisCount);
      const redisTwin = row(
        'chainkit, redisStores (durable), update declared idempotent',
        runIdempotentOn(onRedis),
        redisCount,
      );
      durable.push({
        row: redisRow,
        twin: redisTwin,
        runner: onRedis,
        runs,
        count: async () => (await scanKeys(redis, `${prefix}:run:*`)).length,
      });
      row('chainkit, redisStores without .runs', runOn(runner(withoutRuns)), redisCount);
    } catch (error) {
      notes.push(
        `Redis rows skipped: no Redis on 127.0.0.1:6379 (${error instanceof Error ? error.message : String(error)})`,
      );
    }

    for (const r of rows) await sequential(r, WARM); // warm-up (and tables, scripts, pools)
    for (const r of rows) {
      // the counting pass, on its own
      if (!r.counter) continue;
      await sleep(20); // let background writes of the previous row (learning batches) settle
      let idlePerMs = 0;
      if (r.background) {
        const idle = r.counter.rt;
        await sleep(IDLE_MS);
        idlePerMs = (r.counter.rt - idle) / IDLE_MS;
      }
      const before = { ...r.counter };
      const t0 = performance.now();
      await sequential(r, COUNT_N);
      const idle = idlePerMs * (performance.now() - t0);
      r.rtPerChain = (r.counter.rt - before.rt - idle) / COUNT_N;
      r.cmdsPerChain = (r.counter.cmds - before.cmds - idle) / COUNT_N;
    }
    for (let round = 0; round < 3; round++) {
      // interleaved rounds: machine noise hits all rows alike
      for (const r of rows) r.seq.push(await sequential(r, SEQ));
      for (const r of rows) r.conc.push(await concurrent(r, CONC));
    }

    // Honesty check: did each durable row record its runs, with their journals?
    for (const d of durable) await recorded(d.row, d.runner, d.runs, await d.count(), d.twin);
    const hand = rows.find((r) => r.name.startsWith('hand-written'));
    if (hand)
      hand.recorded = `${(await pool.query(`SELECT count(*) AS n FROM ${schemas.hand}.runs WHERE status = 'completed'`)).rows[0].n} of ${hand.chains} runs`;
    const dbos = rows.find((r) => r.name.startsWith('DBOS'));
    if (dbos)
      dbos.recorded = `${(await pool.query(`SELECT count(*) AS n FROM ${schemas.dbos}.workflow_status WHERE status = 'SUCCESS'`)).rows[0].n} of ${dbos.chains} runs`;

    // The blocks below measure Node's CPU: DBOS's background polling would count in it.
    if (dbosUp) {
      dbosUp = false;
      await DBOS.shutdown();
    }
    if (pgUp && onPgRunner)
      blocks = await plainJournalBlocks(pool, pgCount, schemas.plain, runOn(onPgRunner), runIdempotentOn(onPgRunner), {
        chain,
        impl,
        userId,
        input,
      });
  } finally {
    for (const r of runners) await r.close();
    if (dbosUp) await DBOS.shutdown();
    await pgStores?.close();
    if (pgUp)
      await pool
        .query(
          `DROP SCHEMA IF EXISTS ${schemas.hand} CASCADE; DROP SCHEMA IF EXISTS ${schemas.plain} CASCADE; DROP SCHEMA IF EXISTS ${schemas.chainkit} CASCADE; DROP SCHEMA IF EXISTS ${schemas.dbos} CASCADE`,
        )
        .catch((e: unknown) => notes.push(`dropping the bench schemas failed: ${String(e)}`));
    await Promise.all([pool.end(), dbosPool.end()]);
    if (redisUp) {
      const keys = await scanKeys(redis, `${prefix}*`);
      for (let i = 0; i < keys.length; i += 500) await redis.del(...keys.slice(i, i + 500));
    }
    redis.disconnect();
  }
  print(rows, notes);
  printBlocks(blocks);
  return rows.reduce((n, r) => n + r.failed, 0) + blocks.reduce((n, b) => n + b.failed, 0);
}

/**
 * Only the issue-19 blocks (`BENCH_ONLY=journal`): the four-statement journal and chainkit on
 * `postgresStores`, in a schema of their own, without the interleaved rows, DBOS or Redis.
 */
export async function journalBench({
  chain,
  idempotentChain,
  tools,
  impl,
  userId,
}: DurableBenchInput): Promise<number> {
  const tag = `chainkit_bench_${process.pid}`;
  const counter: Counter = { rt: 0, cmds: 0 };
  const pool = countingPool(counter);
  const stores = postgresStores(pool, { schema: `${tag}_ck` });
  const runner = createRunner({ invoker: functionInvoker(impl), tools, stores });
  runner.events.on('step:end', () => {}); // as in run.ts: listeners attached, payloads built
  const input = { match: 'dentist', title: 'Dentist 3pm' };
  let blocks: Block[] = [];
  try {
    await stores.migrate();
    blocks = await plainJournalBlocks(
      pool,
      counter,
      `${tag}_plain`,
      () => runner.run(chain, input, { context: { userId } }),
      () => runner.run(idempotentChain, input, { context: { userId } }),
      { chain, impl, userId, input },
    );
  } finally {
    await runner.close();
    await stores.close();
    await pool
      .query(`DROP SCHEMA IF EXISTS ${tag}_plain CASCADE; DROP SCHEMA IF EXISTS ${tag}_ck CASCADE`)
      .catch(() => {});
    await pool.end();
  }
  printBlocks(blocks);
  return blocks.reduce((n, b) => n + b.failed, 0);
}

const BLOCK_CHAINS = Number(process.env.BENCH_DURABLE_BLOCK ?? 500);
const BLOCK_REPS = 5;

/** One implementation's block: `BLOCK_REPS` repetitions of `BLOCK_CHAINS` sequential chains, nothing else running between. */
interface Block {
  name: string;
  wallUs: number[];
  cpuUs: number[];
  statements: number;
  failed: number;
}

/**
 * The journal as issue 19 describes it, next to chainkit on PostgreSQL: four plain statements per
 * chain (INSERT the run, INSERT each tool step's output, UPDATE the run at the end), text primary
 * keys, zod in and out, the tools called directly (no p-retry or p-timeout per call). Each
 * implementation runs its repetitions in a block of its own, not interleaved with other rows; CPU
 * is the Node process's (`process.cpuUsage`, user + system) per chain.
 */
async function plainJournalBlocks(
  pool: pg.Pool,
  counter: Counter,
  schema: string,
  runCk: () => Promise<unknown>,
  runCkIdempotent: () => Promise<unknown>,
  { chain, impl, userId, input }: { chain: Chain; impl: Impl; userId: string; input: { match: string; title: string } },
): Promise<Block[]> {
  await pool.query(`CREATE SCHEMA ${schema}; CREATE TABLE ${schema}.runs (run_id text PRIMARY KEY, chain text NOT NULL, input jsonb NOT NULL, status text NOT NULL, result jsonb, started_at timestamptz NOT NULL DEFAULT now(), ended_at timestamptz);
    CREATE TABLE ${schema}.steps (run_id text NOT NULL, step text NOT NULL, output jsonb NOT NULL, PRIMARY KEY (run_id, step));`);
  const journal = async (): Promise<unknown> => {
    const runId = randomUUID();
    await pool.query(`INSERT INTO ${schema}.runs (run_id, chain, input, status) VALUES ($1, $2, $3, 'running')`, [
      runId,
      chain.name,
      input,
    ]);
    const list = parse(
      listTasks.output,
      await impl.list_tasks(parse(listTasks.input, { user_id: userId, status: 'all' })),
    );
    await pool.query(`INSERT INTO ${schema}.steps (run_id, step, output) VALUES ($1, 'find', $2)`, [runId, list]);
    const needle = input.match.toLowerCase();
    const found = list.tasks.filter((t) => t.title.toLowerCase().includes(needle));
    if (found.length !== 1) throw new Error('expected one match');
    const updated = parse(
      updateTask.output,
      await impl.update_task(
        parse(updateTask.input, { user_id: userId, task_id: found[0]!.task_id, title: input.title }),
      ),
    );
    await pool.query(`INSERT INTO ${schema}.steps (run_id, step, output) VALUES ($1, 'update', $2)`, [runId, updated]);
    await pool.query(
      `UPDATE ${schema}.runs SET status = 'completed', result = $2, ended_at = now() WHERE run_id = $1`,
      [runId, updated],
    );
    return updated;
  };
  const statements = async (run: () => Promise<unknown>): Promise<number> => {
    await sleep(20); // background writes of earlier chains (learning batches) settle first
    const before = counter.rt;
    for (let i = 0; i < COUNT_N; i++) await run();
    return (counter.rt - before) / COUNT_N;
  };
  const blocks: Block[] = [];
  for (const [name, run] of [
    ['journal of four plain statements (issue 19)', journal],
    ['chainkit, postgresStores (durable)', runCk],
    ['chainkit, postgresStores (durable), update declared idempotent', runCkIdempotent],
  ] as const) {
    const block: Block = { name, wallUs: [], cpuUs: [], statements: Number.NaN, failed: 0 };
    for (let i = 0; i < WARM; i++) await run();
    for (let rep = 0; rep < BLOCK_REPS; rep++) {
      const cpu0 = process.cpuUsage();
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < BLOCK_CHAINS; i++) {
        const r = await run();
        if (
          (r as { status?: string } | undefined)?.status !== undefined &&
          (r as { status: string }).status !== 'completed'
        )
          block.failed++;
      }
      const wall = Number(process.hrtime.bigint() - t0) / 1000;
      const cpu = process.cpuUsage(cpu0);
      block.wallUs.push(wall / BLOCK_CHAINS);
      block.cpuUs.push((cpu.user + cpu.system) / BLOCK_CHAINS);
    }
    block.statements = await statements(run);
    blocks.push(block);
  }
  return blocks;
}

function printBlocks(blocks: Block[]): void {
  if (blocks.length === 0) return;
  const base = blocks[0]!;
  const range = (xs: number[]): string => `${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)}`;
  console.log(`
Durable runs, the issue-19 shape: ${BLOCK_CHAINS} sequential chains × ${BLOCK_REPS} repetitions per implementation, one implementation at a time (median; range)`);
  const header = [
    'implementation',
    'µs / chain',
    'vs journal',
    'Node CPU µs / chain',
    'vs journal',
    'statements / chain',
  ];
  const table = blocks.map((b) => [
    b.name,
    `${median(b.wallUs).toFixed(0)} (${range(b.wallUs)})`,
    `${(median(b.wallUs) / median(base.wallUs)).toFixed(2)}×`,
    `${median(b.cpuUs).toFixed(0)} (${range(b.cpuUs)})`,
    `${(median(b.cpuUs) / median(base.cpuUs)).toFixed(2)}×`,
    Number.isNaN(b.statements) ? 'n/a' : b.statements.toFixed(1),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((r) => r[i]!.length)));
  const line = (cells: string[]): string =>
    `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((w, i) => (i === 0 ? `-${'-'.repeat(w)}-` : `-${'-'.repeat(w)}:`)).join('|')}|`);
  for (const r of table) console.log(line(r));
  for (const b of blocks) if (b.failed) console.log(`${b.name}: ${b.failed} chains did not complete`);
}

async function scanKeys(redis: Redis, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys;
}

function print(rows: Row[], notes: string[]): void {
  const base = rows.find((r) => r.name.startsWith('hand-written'));
  const ratio = (x: number, b: number | undefined): string => (b ? `${(x / b).toFixed(x / b < 0.1 ? 3 : 2)}×` : 'n/a');
  const header = [
    'durable runs: find-and-update, 0 ms tools',
    'µs / chain',
    'vs hand-written',
    `µs / chain, ${IN_FLIGHT} in flight`,
    'vs hand-written',
    'round trips / chain',
    `per step (÷ ${STEPS})`,
  ];
  const table = rows.map((r) => {
    const seq = median(r.seq);
    const conc = median(r.conc);
    const rt =
      r.rtPerChain === undefined
        ? 'n/a'
        : `${r.rtPerChain.toFixed(1)}${r.cmdsPerChain !== r.rtPerChain ? ` (${r.cmdsPerChain!.toFixed(1)} cmds)` : ''}`;
    return [
      r.name,
      seq.toFixed(0),
      ratio(seq, base && median(base.seq)),
      conc.toFixed(0),
      ratio(conc, base && median(base.conc)),
      rt,
      r.rtPerChain === undefined ? 'n/a' : (r.rtPerChain / STEPS).toFixed(2),
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((r) => r[i]!.length)));
  const line = (cells: string[]): string =>
    `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  console.log('\nDurable runs');
  console.log(line(header));
  console.log(`|${widths.map((w, i) => (i === 0 ? `-${'-'.repeat(w)}-` : `-${'-'.repeat(w)}:`)).join('|')}|`);
  for (const r of table) console.log(line(r));
  for (const r of rows) if (r.recorded) console.log(`recorded by ${r.name}: ${r.recorded}`);
  for (const r of rows)
    if (r.notDurable)
      console.log(`WARNING: ${r.name} did not record its runs: its figures are not those of durable runs`);
  for (const r of rows) if (r.failed) console.log(`${r.name}: ${r.failed} of ${r.chains} chains did not complete`);
  console.log(
    `${SEQ} sequential chains and ${CONC} with ${IN_FLIGHT} in flight per row and round, median of 3 rounds; round trips counted over ${COUNT_N} sequential chains (pg: statements on the row's pool, BEGIN/COMMIT included, DBOS on its own pool less its idle background polling; Redis: a pipeline or MULTI counts once, commands in parentheses)`,
  );
  for (const n of notes) console.log(n);
}
