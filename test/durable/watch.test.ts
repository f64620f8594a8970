// Watching and cancelling across processes, on Redis and on PostgreSQL: a worker process (A) runs
// the runs; this process holds two more runners (B and C) on connections of their own.
import { fork } from 'node:child_process';
import { bundledWorker } from '../fixtures/bundled.js';
import Redis from 'ioredis';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createRunner, type RunEvent, type Runner } from '../../src/index.js';
import { postgresStores } from '../../src/postgres/index.js';
import { redisStores } from '../../src/redis/index.js';
import { job, type WatchJob } from '../fixtures/watch-worker.js';

const script = bundledWorker('watch-worker'); // bundled by test/global-setup.ts: starts 3× faster than under tsx
type Msg = {
  type: string;
  runId?: string;
  at?: number;
  id?: string;
  results?: { runId: string; status: string; code?: string }[];
};

function worker(task: WatchJob) {
  const messages: Msg[] = [];
  const child = fork(script, [JSON.stringify(task)], {
    execArgv: [],
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  child.on('message', (m: Msg) => messages.push(m));
  const waitFor = async (match: (m: Msg) => boolean, timeoutMs = 30_000): Promise<Msg> => {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const found = messages.find(match);
      if (found) return found;
      if (child.exitCode !== null || Date.now() > until)
        throw new Error(`no such message; got ${JSON.stringify(messages)}; stderr:\n${stderr}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  return { messages, waitFor, kill: () => child.kill('SIGKILL') };
}

const collect = async (events: AsyncIterable<RunEvent>): Promise<RunEvent[]> => {
  const out: RunEvent[] = [];
  for await (const e of events) out.push(e);
  return out;
};

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

const setups = {
  redis: async (ns: string) => {
    const conns = [new Redis({ host: '127.0.0.1', port: 6379 }), new Redis({ host: '127.0.0.1', port: 6379 })];
    cleanups.push(async () => {
      const keys = await conns[0]!.keys(`${ns}*`);
      if (keys.length) await conns[0]!.del(...keys);
      for (const c of conns) c.disconnect();
    });
    return conns.map((c) => redisStores(c, { prefix: ns }));
  },
  postgres: async (ns: string) => {
    const pools = [
      new pg.Pool({ host: '127.0.0.1', user: 'postgres', database: 'test', max: 3 }),
      new pg.Pool({ host: '127.0.0.1', user: 'postgres', database: 'test', max: 3 }),
    ];
    const stores = pools.map((p) => postgresStores(p, { schema: ns }));
    await stores[0]!.migrate();
    cleanups.push(async () => {
      await pools[0]!.query(`DROP SCHEMA IF EXISTS "${ns}" CASCADE`);
      for (const p of pools) await p.end();
    });
    return stores;
  },
};

for (const store of ['redis', 'postgres'] as const) {
  describe(`watching and cancelling across processes (${store})`, () => {
    const runners: Runner[] = [];
    afterAll(async () => {
      for (const r of runners) await r.close();
    });
    const observers = async (ns: string): Promise<[Runner, Runner]> => {
      const [sb, sc] = await setups[store](ns);
      // Observers that run no tool: an invoker that declares no tools (`functionInvoker([], {})` would serve none, and createRunner refuse `job`).
      const b = createRunner({ invoker: () => Promise.reject(new Error('observer')), chains: [job], stores: sb! });
      const c = createRunner({ invoker: () => Promise.reject(new Error('observer')), chains: [job], stores: sc! });
      runners.push(b, c);
      return [b, c];
    };

    it("a run started on A is watched and cancelled from B: A's tool signal aborts within 1 s (measured), compensation runs, nothing later starts", async () => {
      const ns = `ck_watch_${store}_${process.pid}_${Date.now() % 100_000}_1`;
      const [b] = await observers(ns);
      const runId = `${ns}-hang`;
      const a = worker({ store, ns, runIds: [runId], progress: 2 });
      try {
        await a.waitFor((m) => m.type === 'ready'); // watching a run not yet started for long is `not_found`
        const watching = collect(b.watch(runId));
        await a.waitFor((m) => m.type === 'working');
        const asked = Date.now();
        expect(await b.cancel(runId, { reason: 'from B' })).toBe('cancelled');
        const aborted = await a.waitFor((m) => m.type === 'aborted');
        expect(aborted.at! - asked).toBeLessThan(1_000);
        const done = await a.waitFor((m) => m.type === 'done');
        expect(done.results).toEqual([{ runId, status: 'failed', code: 'run_cancelled' }]);
        expect(a.messages.some((m) => m.type === 'released')).toBe(true);
        expect(a.messages.some((m) => m.type === 'after')).toBe(false);
        const seen = await watching;
        expect(seen.filter((e) => e.type === 'step:progress')).toHaveLength(2);
        expect(seen.at(-1)).toMatchObject({
          type: 'run:end',
          data: { status: 'failed', error: { code: 'run_cancelled' } },
        });
        expect(seen.map((e) => e.seq)).toEqual(seen.map((_, i) => i + 1));
      } finally {
        a.kill();
      }
    });

    it('a watcher that stops after event n on B and watches again on C with after: n gets every later event exactly once (100 runs)', async () => {
      const ns = `ck_watch_${store}_${process.pid}_${Date.now() % 100_000}_2`;
      const [b, c] = await observers(ns);
      const runIds = Array.from({ length: 100 }, (_, i) => `${ns}-${i}`);
      const a = worker({ store, ns, runIds, progress: 3 });
      try {
        await a.waitFor((m) => m.type === 'ready'); // watching a run not yet started for long is `not_found`
        await Promise.all(
          runIds.map(async (runId, i) => {
            const cut = 1 + (i % 8);
            const first: RunEvent[] = [];
            for await (const e of b.watch(runId)) {
              first.push(e);
              if (e.seq === cut) break;
            }
            const rest = await collect(c.watch(runId, { after: cut }));
            const all = [...first, ...rest];
            expect(all.map((e) => e.seq)).toEqual(all.map((_, k) => k + 1));
            expect(all.at(-1)!.type).toBe('run:end');
            expect(all.filter((e) => e.type === 'step:progress')).toHaveLength(3);
          }),
        );
        const done = await a.waitFor((m) => m.type === 'done', 60_000);
        expect(done.results!.every((r) => r.status === 'completed')).toBe(true);
      } finally {
        a.kill();
      }
    });
  });
}
