// Bench: the heap of a process whose watcher reads nothing while a run emits 100,000 progress events
// (memory run store, default 10,000 events kept per run); then the event round trips of durable runs
// nobody watches, on Redis and PostgreSQL. Run: npm run bench:runs (with bench/list-runs.ts), or npx tsx --expose-gc bench/watch.ts
import { z } from 'zod';
import { createRunner, defineChain, defineTool, functionInvoker, memoryRunStore, ref } from '../src/index.js';
import Redis from 'ioredis';
import pg from 'pg';
import { postgresStores } from '../src/postgres/index.js';
import { redisStores } from '../src/redis/index.js';
import type { RunStore } from '../src/stores/run-store.js';

const EVENTS = 100_000;
const emit = defineTool({
  name: 'emit',
  description: 'e',
  input: z.object({ n: z.number() }),
  output: z.object({ n: z.number() }),
  effect: 'read',
});
const chain = defineChain({
  name: 'chatty',
  input: z.object({ n: z.number() }),
  timeoutMs: 120_000,
  steps: [{ id: 'emit', tool: emit, input: { n: ref('input', 'n') } }],
});
const runner = createRunner({
  invoker: functionInvoker([emit], {
    emit: async ({ n }, call) => {
      for (let i = 1; i <= n; i++) {
        call.progress({ done: i, of: n, note: 'x'.repeat(64) });
        if (i % 1000 === 0) await new Promise((r) => setImmediate(r));
      }
      return { n };
    },
  }),
  chains: [chain],
  stores: { runs: memoryRunStore() },
});
const gc = (globalThis as { gc?: () => void }).gc;
const heap = (): number => {
  gc?.();
  return process.memoryUsage().heapUsed / 2 ** 20;
};

const before = heap();
const { events, result } = runner.stream(chain, { n: EVENTS });
const reader = events[Symbol.asyncIterator]();
await reader.next(); // reads the first event, then nothing
let peak = 0;
const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed / 2 ** 20)), 5);
await result;
clearInterval(sampler);
const after = heap();
const cut = await (async () => {
  try {
    for (;;) if ((await reader.next()).done) return 'no';
  } catch (error) {
    return (error as Error).name;
  }
})();
console.log('| watcher reading nothing, memory store | events | heap before | heap peak | heap after | reader |');
console.log('| --- | --- | --- | --- | --- | --- |');
console.log(
  `| ${EVENTS.toLocaleString('en')} progress events of ~120 B | ${EVENTS} | ${before.toFixed(1)} MiB | ${peak.toFixed(1)} MiB | ${after.toFixed(1)} MiB | cut off: ${cut} |`,
);
await runner.close();

// With a run store, a chain nobody watches adds at most one store round trip per run for its events
// (all of them in one append after the end; none of its own on PostgreSQL, where they ride on the end's statement).
// Counted on Redis and PostgreSQL over RUNS runs of a three-step chain.

const RUNS = 200;
const step = defineTool({
  name: 'step',
  description: 's',
  input: z.object({ n: z.number() }),
  output: z.object({ n: z.number() }),
  effect: 'read',
});
const three = defineChain({
  name: 'three',
  input: z.object({ n: z.number() }),
  steps: [
    { id: 'a', tool: step, input: { n: ref('input', 'n') } },
    { id: 'b', tool: step, input: { n: ref('a', 'n') } },
    { id: 'c', tool: step, input: { n: ref('b', 'n') } },
  ],
});

/** Event-log calls (each one a round trip; the announce subscription is opened once per runner, not per run). */
async function eventTrips(runs: RunStore): Promise<number> {
  const log = runs.events!;
  let trips = 0;
  const counted: RunStore = {
    ...runs,
    events: new Proxy(log, {
      get(target, key, receiver) {
        const v = Reflect.get(target, key, receiver) as unknown;
        if (typeof v !== 'function' || key === 'onAnnounce' || key === 'close') return v;
        return (...args: unknown[]) => {
          trips++;
          return (v as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    }),
  };
  const r = createRunner({
    invoker: functionInvoker([step], { step: async ({ n }) => ({ n }) }),
    chains: [three],
    stores: { runs: counted },
  });
  for (let i = 0; i < RUNS; i++)
    if ((await r.run(three, { n: i })).status !== 'completed') throw new Error('run failed');
  await r.close();
  return trips / RUNS;
}

const trips: string[] = [];
const prefix = `bench-watch-${process.pid}`;
const redis = new Redis({ host: '127.0.0.1', port: 6379 });
try {
  trips.push(`| redis | ${RUNS} | ${(await eventTrips(redisStores(redis, { prefix }).runs)).toFixed(2)} |`);
} finally {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length > 0) await redis.unlink(...keys);
  redis.disconnect();
}
const schema = `bench_watch_${process.pid}`;
const pool = new pg.Pool({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test', max: 4 });
try {
  trips.push(`| postgres | ${RUNS} | ${(await eventTrips(postgresStores(pool, { schema }).runs)).toFixed(2)} |`);
} finally {
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
}
console.log('\n| events of a durable run nobody watches | runs | event round trips per run (target ≤ 1) |');
console.log('| --- | --- | --- |');
console.log(trips.join('\n'));
