// `npm run bench`: chainkit's overhead as ratios against hand-written baselines measured in the same run.
// Baseline = zod parse of input and output around direct function calls, the select step as a
// filter, with retries and timeouts in three forms, named on each row: p-retry/p-timeout (the
// devDependencies), the current p-retry 9 / p-timeout 8 (current-retry.ts), and a hand-written
// retry loop and timeout race. chainkit runs the same find-and-update with tracing and events on
// (listeners attached).
import { execFile } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pRetry from 'p-retry';
import pTimeout from 'p-timeout';
import Redis from 'ioredis';
import { buildMetadata } from '../src/guidance/metadata.js';
import { redisStores } from '../src/redis/index.js';
import { currentRetryKit, installedVersion, plainKit, type RetryKit } from './current-retry.js';
import { durableBench, journalBench } from './durable.js';
import {
  MetricsCollector,
  TimingModel,
  createRunner,
  functionInvoker,
  listTasks,
  updateTask,
  type Runner,
  type RunResult,
} from '../src/index.js';
import { chain, idempotentChain, list, parse, slow, TASKS, update, USER } from './fixture.js';

const execFileAsync = promisify(execFile);

type Impl = {
  list_tasks: (i: { user_id: string }) => unknown;
  update_task: (i: { task_id: string; title?: string }) => unknown;
};
const instant: Impl = {
  list_tasks: () => ({ tasks: TASKS }),
  update_task: (i) => ({ task: { ...TASKS[3]!, title: i.title ?? '' } }),
};
/** The p-retry and p-timeout a baseline uses: the project's devDependencies, or the current majors (current-retry.ts). */
const devKit: RetryKit = {
  pRetry,
  pTimeout,
  versions: `p-retry ${installedVersion('p-retry')}, p-timeout ${installedVersion('p-timeout')}`,
};

/** The hand-written baseline: one find-and-update. */
async function baseline(
  impl: Impl,
  match: string,
  title: string,
  minTimeout = 100,
  kit: RetryKit = devKit,
): Promise<unknown> {
  const call = <T>(fn: () => T, ms: number) =>
    kit.pRetry(() => kit.pTimeout(Promise.resolve(fn()), { milliseconds: ms }), { retries: 3, minTimeout });
  const listIn = parse(listTasks.input, { user_id: USER, status: 'all' });
  const list = parse(listTasks.output, await call(() => impl.list_tasks(listIn), 3000));
  const needle = match.toLowerCase();
  const found = list.tasks.filter((t) => t.title.toLowerCase().includes(needle));
  if (found.length !== 1) throw new Error('expected one match');
  const updIn = parse(updateTask.input, { user_id: USER, task_id: found[0]!.task_id, title });
  return parse(updateTask.output, await call(() => impl.update_task(updIn), 3000));
}

function chainkit(impl: Impl, retry?: Parameters<typeof createRunner>[0]['retry']): Runner {
  const runner = createRunner({ invoker: functionInvoker(impl), tools: [list, update], ...(retry && { retry }) });
  let steps = 0;
  runner.events.on('step:end', () => {
    steps++;
  }); // events on: listeners attached, payloads built
  runner.events.on('chain:end', () => {
    steps++;
  });
  return runner;
}

const context = { context: { userId: USER } };

let failed = 0;
const check = (r: unknown): void => {
  if ((r as RunResult).status !== undefined && (r as RunResult).status !== 'completed') failed++;
};

async function sequential(n: number, fn: () => Promise<unknown>): Promise<number> {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) check(await fn());
  return Number(process.hrtime.bigint() - t0) / 1000 / n; // µs per chain
}

async function concurrent(
  n: number,
  fn: () => Promise<unknown>,
): Promise<{ wallMs: number; heapMb: number; results: unknown[] }> {
  globalThis.gc?.();
  globalThis.gc?.();
  const heap0 = process.memoryUsage().heapUsed;
  const t0 = performance.now();
  const all = Array.from({ length: n }, fn);
  await sleep(1); // every chain is now in flight, waiting on its first tool
  globalThis.gc?.(); // count what the in-flight chains retain, not garbage awaiting collection
  const heapMb = (process.memoryUsage().heapUsed - heap0) / 1024 / 1024;
  const results = await Promise.all(all);
  return { wallMs: performance.now() - t0, heapMb, results };
}

/**
 * The same load without a forced GC on the way: the highest `heapUsed` seen, sampled every 1 ms (and
 * once when every chain has been started), above the heap at the start. It counts what the chains
 * retain plus the garbage they make that the collector has not reclaimed yet.
 */
async function peak(n: number, fn: () => Promise<unknown>): Promise<{ peakMb: number; results: unknown[] }> {
  globalThis.gc?.();
  globalThis.gc?.();
  const heap0 = process.memoryUsage().heapUsed;
  let top = heap0;
  const sample = (): void => {
    const used = process.memoryUsage().heapUsed;
    if (used > top) top = used;
  };
  const sampler = setInterval(sample, 1);
  const all = Array.from({ length: n }, fn);
  sample();
  const results = await Promise.all(all);
  clearInterval(sampler);
  sample();
  if (process.env.BENCH_PEAK_DEBUG)
    console.error(`heap0 ${(heap0 / 1048576).toFixed(1)} MB, top ${(top / 1048576).toFixed(1)} MB`);
  return { peakMb: (top - heap0) / 1024 / 1024, results };
}

/**
 * The peak of one implementation in a fresh process of its own: how high the heap goes depends on
 * when V8 collects, which depends on what ran before in the process (the other side's garbage and
 * the heap limits it left behind); a fresh process gives both sides the same start.
 */
async function peakInChild(which: 'baseline' | 'current' | 'plain' | 'chainkit', n: number): Promise<number> {
  const { stdout } = await execFileAsync(process.execPath, ['--expose-gc', process.argv[1]!], {
    env: { ...process.env, BENCH_PEAK_CHILD: which, BENCH_CONC: String(n) },
  });
  const { peakMb, bad } = JSON.parse(stdout.trim().split('\n').pop()!) as { peakMb: number; bad: number };
  if (bad > 0) peakFailures += bad;
  return peakMb;
}
let peakFailures = 0;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (x: number, d = 1): string => x.toFixed(d);
const rows: string[][] = [];
const row = (workload: string, metric: string, base: number, ours: number, d = 1): void => {
  rows.push([workload, metric, fmt(base, d), fmt(ours, d), `${fmt(ours / base, 2)}×`]);
};

const SEQ = Number(process.env.BENCH_SEQ ?? 20_000);
// A child process measuring one peak (see `peakInChild`): it prints the figure and exits.
const PEAK_CHILD = process.env.BENCH_PEAK_CHILD;
if (PEAK_CHILD) {
  const n = Number(process.env.BENCH_CONC ?? 10_000);
  const own = PEAK_CHILD === 'chainkit' ? chainkit(slow) : undefined;
  const current = PEAK_CHILD === 'current' ? await currentRetryKit() : PEAK_CHILD === 'plain' ? plainKit : devKit;
  if (typeof current === 'string') throw new Error(current);
  const one = own
    ? () => own.run(chain, { match: 'dentist', title: 'x' }, context)
    : () => baseline(slow, 'dentist', 'x', 100, current);
  await concurrent(1000, one); // warm-up, as in the parent
  const { peakMb, results } = await peak(n, one);
  const bad = (results as RunResult[]).filter((r) => r?.status !== undefined && r.status !== 'completed').length;
  await own?.close();
  console.log(JSON.stringify({ peakMb, bad }));
  process.exit(0);
}
const CONC = Number(process.env.BENCH_CONC ?? 10_000);
// BENCH_ONLY=seq,failure,load,redis,guidance,durable runs only the parts named (all by default);
// `peak` runs only the load's peak-heap rows, `journal` only the durable table's issue-19 blocks.
const only = new Set(
  (process.env.BENCH_ONLY ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);
const part = (name: string): boolean => only.size === 0 || only.has(name);
const notes: string[] = [];
const fast = chainkit(instant);
const runners: Runner[] = [fast];
let seqUs: number | undefined;

if (part('seq') || part('guidance')) {
  // Warm up both paths so the JIT has seen them.
  await sequential(3000, () => baseline(instant, 'dentist', 'Dentist 3pm'));
  await sequential(3000, () => fast.run(chain, { match: 'dentist', title: 'Dentist 3pm' }, context));
  await sequential(3000, () => baseline(instant, 'dentist', 'Dentist 3pm', 100, plainKit));
  const seqBase: number[] = [];
  const seqPlain: number[] = [];
  const seqOurs: number[] = [];
  for (let round = 0; round < 3; round++) {
    // interleaved rounds: machine noise hits both alike
    seqBase.push(await sequential(SEQ, () => baseline(instant, 'dentist', 'Dentist 3pm')));
    seqPlain.push(await sequential(SEQ, () => baseline(instant, 'dentist', 'Dentist 3pm', 100, plainKit)));
    seqOurs.push(await sequential(SEQ, () => fast.run(chain, { match: 'dentist', title: 'Dentist 3pm' }, context)));
  }
  seqUs = median(seqOurs);
  row(`${SEQ.toLocaleString('en')} sequential find-and-update, 0 ms tools`, 'µs / chain', median(seqBase), seqUs);
  row(
    `${SEQ.toLocaleString('en')} sequential find-and-update, 0 ms tools (baseline: ${plainKit.versions})`,
    'µs / chain',
    median(seqPlain),
    seqUs,
  );
}

if (part('failure')) {
  // Failure path: every tool's first attempt fails with 503, the retry succeeds; zero backoff on all sides.
  // Two baselines: on the project's p-retry/p-timeout, and on the current majors (Node >= 22 by their engines).
  const current = await currentRetryKit();
  const kits = typeof current === 'string' ? [devKit, plainKit] : [devKit, current, plainKit];
  if (typeof current === 'string') notes.push(current);
  const flakyImpl = (): Impl => {
    let n = 0;
    const fail = (): never => {
      throw Object.assign(new Error('Service Unavailable'), { status: 503 });
    };
    return {
      list_tasks: (i) => (n++ % 2 === 0 ? fail() : instant.list_tasks(i)),
      update_task: (i) => (n++ % 2 === 0 ? fail() : instant.update_task(i)),
    };
  };
  const flakyBase = flakyImpl();
  const flaky = chainkit(flakyImpl(), { unavailable: { retries: 2, minDelayMs: 0, factor: 2, maxDelayMs: 0 } });
  runners.push(flaky);
  const FAIL_N = Math.round(SEQ / 4);
  for (const kit of kits) await sequential(1000, () => baseline(flakyBase, 'dentist', 'x', 0, kit));
  await sequential(1000, () => flaky.run(chain, { match: 'dentist', title: 'x' }, context));
  const failBase: number[][] = kits.map(() => []);
  const failOurs: number[] = [];
  for (let round = 0; round < 3; round++) {
    for (const [k, kit] of kits.entries())
      failBase[k]!.push(await sequential(FAIL_N, () => baseline(flakyBase, 'dentist', 'x', 0, kit)));
    failOurs.push(await sequential(FAIL_N, () => flaky.run(chain, { match: 'dentist', title: 'x' }, context)));
  }
  for (const [k, kit] of kits.entries())
    row(
      `${FAIL_N.toLocaleString('en')} sequential, first attempt 503, 0 ms backoff (baseline: ${kit.versions})`,
      'µs / chain',
      median(failBase[k]!),
      median(failOurs),
    );
}

const failures: { status: string; error?: { code: string } }[] = [];
if (part('load') || only.has('peak')) {
  const slowRunner = chainkit(slow);
  runners.push(slowRunner);
  if (part('load')) {
    await concurrent(1000, () => baseline(slow, 'dentist', 'x'));
    await concurrent(1000, () => slowRunner.run(chain, { match: 'dentist', title: 'x' }, context));
  }
  const wall: [number[], number[]] = [[], []];
  const heap: [number[], number[]] = [[], []];
  const peaks: [number[], number[], number[]] = [[], [], []];
  for (let round = 0; round < 3 && part('load'); round++) {
    const base = await concurrent(CONC, () => baseline(slow, 'dentist', 'x'));
    const ours = await concurrent(CONC, () => slowRunner.run(chain, { match: 'dentist', title: 'x' }, context));
    wall[0].push(base.wallMs);
    wall[1].push(ours.wallMs);
    heap[0].push(base.heapMb);
    heap[1].push(ours.heapMb);
    failures.push(...(ours.results as typeof failures).filter((r) => r.status !== 'completed'));
  }
  for (let round = 0; round < 3; round++) {
    peaks[0].push(await peakInChild('baseline', CONC));
    peaks[2].push(await peakInChild('plain', CONC));
    peaks[1].push(await peakInChild('chainkit', CONC));
  }
  const load = `${CONC.toLocaleString('en')} concurrent find-and-update, 5 ms tools`;
  if (part('load')) {
    row(load, 'wall ms', median(wall[0]), median(wall[1]), 0);
    row(load, 'heap MB retained in flight', median(heap[0]), median(heap[1]));
  }
  row(load, 'peak heap MB (1 ms samples)', median(peaks[0]), median(peaks[1]));
  row(`${load} (baseline: ${plainKit.versions})`, 'peak heap MB (1 ms samples)', median(peaks[2]), median(peaks[1]));
}

if (part('redis')) {
  // Redis-backed stores against memory stores, same chain (each chain: one idempotency claim + result,
  // breaker checks per call, a batched learning append).
  const REDIS_N = Math.round(SEQ / 10);
  const redis = new Redis({
    host: '127.0.0.1',
    port: 6379,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  redis.on('error', () => {});
  try {
    await redis.connect();
    const prefix = `chainkit-bench:${process.pid}`;
    // The stores a run uses, without `.runs` (durable runs have their own table below).
    const { runs: _durable, ...shared } = redisStores(redis, { prefix });
    const onRedis = createRunner({ invoker: functionInvoker(instant), tools: [list, update], stores: shared });
    onRedis.events.on('step:end', () => {});
    await sequential(200, () => onRedis.run(chain, { match: 'dentist', title: 'x' }, context));
    await sequential(200, () => fast.run(chain, { match: 'dentist', title: 'x' }, context));
    const mem: number[] = [];
    const red: number[] = [];
    for (let round = 0; round < 3; round++) {
      mem.push(await sequential(REDIS_N, () => fast.run(chain, { match: 'dentist', title: 'x' }, context)));
      red.push(await sequential(REDIS_N, () => onRedis.run(chain, { match: 'dentist', title: 'x' }, context)));
    }
    rows.push([
      `${REDIS_N.toLocaleString('en')} sequential find-and-update, Redis stores`,
      'µs / chain vs memory stores',
      fmt(median(mem)),
      fmt(median(red)),
      `${fmt(median(red) / median(mem), 2)}×`,
    ]);
    await onRedis.close();
    const keys = [...(await redis.keys(`${prefix}*`)), ...(await redis.keys(`b_${prefix}*`))];
    if (keys.length) await redis.del(...keys);
  } catch (error) {
    notes.push(
      `Redis workload skipped: no Redis on 127.0.0.1:6379 (${error instanceof Error ? error.message : String(error)})`,
    );
  } finally {
    redis.disconnect();
  }
}

if (part('guidance')) {
  // Guidance: summaries are computed on query; metadata is built for every result.
  const metrics = new MetricsCollector();
  const toolsUsed = ['list_tasks', 'update_task', 'complete_task', 'add_task', 'delete_task'];
  for (let i = 0; i < 10_000; i++) {
    metrics.recordTransition({
      fromTool: toolsUsed[i % 5]!,
      toTool: toolsUsed[(i * 7 + 1) % 5]!,
      sessionId: `s${i % 400}`,
      success: i % 9 !== 0,
      timestamp: i,
      gapMs: 5,
    } as never);
  }
  let t0 = performance.now();
  for (let i = 0; i < 10; i++) metrics.chainSummary();
  const summaryMs = (performance.now() - t0) / 10;
  const tools = new Map([
    [list.name, list],
    [update.name, update],
  ]);
  const timing = new TimingModel(tools);
  for (let i = 0; i < 500; i++) timing.record(toolsUsed[i % 2]!, 5 + (i % 7));
  const sources = { tools, chains: new Map([[chain.name, chain]]), metrics, timing };
  const META_N = 100_000;
  t0 = performance.now();
  for (let i = 0; i < META_N; i++)
    buildMetadata(sources, {
      chain,
      lastTool: 'update_task',
      actualDurationMs: 1,
      sessionTools: toolsUsed,
      advice: [],
    });
  const metaUs = ((performance.now() - t0) * 1000) / META_N;
  notes.unshift(
    `\nguidance: chainSummary over 10,000 transitions ${summaryMs.toFixed(1)} ms; metadata per result ${metaUs.toFixed(2)} µs (${((metaUs / seqUs!) * 100).toFixed(0)} % of a sequential chain)`,
  );
}

if (rows.length > 0) {
  const header = ['workload', 'metric', 'baseline', 'chainkit', 'ratio'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]): string =>
    `| ${cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((w, i) => (i < 2 ? `-${'-'.repeat(w)}-` : `-${'-'.repeat(w)}:`)).join('|')}|`);
  for (const r of rows) console.log(line(r));
}
for (const n of notes) console.log(n);
if (part('seq') || part('failure') || part('redis'))
  console.log(`chainkit runs that did not complete in the sequential workloads: ${failed}`);
if (peakFailures)
  failures.push(
    ...Array.from({ length: peakFailures }, () => ({ status: 'failed', error: { code: 'in a peak run' } })),
  );
if (part('load') || only.has('peak'))
  console.log(
    `chainkit failures under the ${CONC.toLocaleString('en')}-chain load: ${failures.length}${failures.length ? ` (${[...new Set(failures.map((f) => f.error?.code))].join(', ')})` : ' (no false timeouts)'}`,
  );
console.log(
  `node ${process.version}, ${process.env.CI ? 'CI' : 'local'}, ${new Date().toISOString().slice(0, 10)}; baselines on ${devKit.versions} unless named; tracing: summary traces always built, events: listeners on step:end and chain:end`,
);

for (const r of runners) await r.close();
if (failures.length || failed) process.exitCode = 1;

// Second table: durable runs on PostgreSQL and Redis against a hand-written pg journal and DBOS (bench/durable.ts).
if (
  part('durable') &&
  (await durableBench({ chain, idempotentChain, tools: [list, update], impl: instant, userId: USER }))
)
  process.exitCode = 1;
else if (
  only.has('journal') &&
  (await journalBench({ chain, idempotentChain, tools: [list, update], impl: instant, userId: USER }))
)
  process.exitCode = 1;
