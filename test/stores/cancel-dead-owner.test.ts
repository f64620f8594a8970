// Cancelling a run whose owner process died (SIGKILL), on Redis and on PostgreSQL: the runner that
// cancels takes the run over once the dead owner's lease expires, undoes its completed steps and
// ends it run_cancelled; no later step ever starts (docs/guides/watching-runs.md, cancel).
import { fork } from 'node:child_process';
import { bundledWorker } from '../fixtures/bundled.js';
import Redis from 'ioredis';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createRunner, functionInvoker, type Runner } from '../../src/index.js';
import { postgresStores } from '../../src/postgres/index.js';
import { redisStores } from '../../src/redis/index.js';
import { after, job, release, reserve, work, type WatchJob } from '../fixtures/watch-worker.js';

const script = bundledWorker('watch-worker'); // bundled by test/global-setup.ts: starts 3× faster than under tsx
type Msg = { type: string; runId?: string };

function worker(task: WatchJob) {
  const messages: Msg[] = [];
  const child = fork(script, [JSON.stringify(task)], {
    execArgv: [],
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  child.on('message', (m: Msg) => messages.push(m));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
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
  return {
    messages,
    waitFor,
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

const setups = {
  redis: async (ns: string) => {
    const redis = new Redis({ host: '127.0.0.1', port: 6379 });
    cleanups.push(async () => {
      const keys = await redis.keys(`${ns}*`);
      if (keys.length) await redis.del(...keys);
      redis.disconnect();
    });
    return redisStores(redis, { prefix: ns });
  },
  postgres: async (ns: string) => {
    const pool = new pg.Pool({ host: '127.0.0.1', user: 'postgres', database: 'test', max: 3 });
    const stores = postgresStores(pool, { schema: ns });
    await stores.migrate();
    cleanups.push(async () => {
      await pool.query(`DROP SCHEMA IF EXISTS "${ns}" CASCADE`);
      await pool.end();
    });
    return stores;
  },
};

for (const store of ['redis', 'postgres'] as const) {
  describe(`cancel of a run whose owner died (${store})`, () => {
    const runners: Runner[] = [];
    afterAll(async () => {
      for (const r of runners) await r.close();
    });

    it('the owner is killed mid-step; cancel from another process takes the run over when its lease expires, compensates, ends run_cancelled', async () => {
      const ns = `ck_dead_${store}_${process.pid}_${Date.now() % 100_000}`;
      const stores = await setups[store](ns);
      const calls: string[] = [];
      const b = createRunner({
        invoker: functionInvoker([reserve, release, work, after], {
          reserve: async ({ n }) => (calls.push('reserve'), { id: `r${n}` }),
          release: async ({ id }) => (calls.push(`release:${id}`), { ok: true }),
          work: async () => (calls.push('work'), { n: 1 }),
          after: async ({ n }) => (calls.push('after'), { n }),
        }),
        chains: [job],
        stores,
        leaseMs: 1_000,
      });
      runners.push(b);
      const runId = `${ns}-hang`;
      const a = worker({ store, ns, runIds: [runId], progress: 1, leaseMs: 1_000 });
      try {
        await a.waitFor((m) => m.type === 'working');
        await a.kill(); // the owner dies holding a lease of up to a second
        expect((await b.getRun(runId))?.status).toBe('running');
        // Asked while the dead owner's lease may still hold: nobody answers; once it expires, B takes the run over.
        expect(await b.cancel(runId, { reason: 'owner gone' })).toBe('cancelled');
        const info = await b.getRun(runId);
        expect(info?.status).toBe('failed');
        expect(info?.result?.status === 'failed' && info.result.error).toMatchObject({
          category: 'cancelled',
          code: 'run_cancelled',
        });
        expect(info?.result?.status === 'failed' && info.result.compensated).toEqual(['reserve']);
        expect(calls).toEqual(['release:r0']); // undone once, by B; the step after never started anywhere
        expect(a.messages.some((m) => m.type === 'after')).toBe(false);
        expect(await b.recover()).toEqual([]); // nothing left for recovery to continue
        expect((await b.listRuns({ status: ['running', 'retrying'] })).runs).toEqual([]);
      } finally {
        await a.kill();
      }
    });
  });
}
