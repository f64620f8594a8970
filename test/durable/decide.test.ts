// Deciding a parked gate from several processes, on Redis and on PostgreSQL: three worker processes
// make 50 concurrent `decide` and `resume` calls on one gate; exactly one of them calls the tool.
import { fork } from 'node:child_process';
import { bundledWorker } from '../fixtures/bundled.js';
import Redis from 'ioredis';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createRunner, functionInvoker } from '../../src/index.js';
import { postgresStores } from '../../src/postgres/index.js';
import { redisStores } from '../../src/redis/index.js';
import { gated, pay, reserve, SECRET, type DecideJob } from '../fixtures/decide-worker.js';

const script = bundledWorker('decide-worker'); // bundled by test/global-setup.ts: starts 3× faster than under tsx
type Msg = { type: string; answers?: string[]; paid?: number };

function worker(task: DecideJob) {
  const messages: Msg[] = [];
  const child = fork(script, [JSON.stringify(task)], {
    execArgv: [],
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  child.on('message', (m: Msg) => messages.push(m));
  const waitFor = async (type: string, timeoutMs = 30_000): Promise<Msg> => {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const found = messages.find((m) => m.type === type);
      if (found) return found;
      if (child.exitCode !== null || Date.now() > until)
        throw new Error(`no ${type} message; got ${JSON.stringify(messages)}; stderr:\n${stderr}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  return { waitFor, go: () => child.send({ type: 'go' }), kill: () => child.kill('SIGKILL') };
}

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

const setups = {
  redis: async (ns: string) => {
    const conn = new Redis({ host: '127.0.0.1', port: 6379 });
    cleanups.push(async () => {
      const keys = await conn.keys(`${ns}*`);
      if (keys.length) await conn.del(...keys);
      conn.disconnect();
    });
    return redisStores(conn, { prefix: ns });
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
  describe(`deciding a parked gate across processes (${store})`, () => {
    it('50 concurrent decide/resume calls on one gate from 3 processes make exactly one tool call', async () => {
      const ns = `ck_decide_${process.pid}_${Date.now() % 1_000_000}`;
      const stores = await setups[store](ns);
      let paidHere = 0;
      const a = createRunner({
        invoker: functionInvoker([reserve, pay], {
          reserve: async ({ n }) => ({ id: `r${n}` }),
          pay: async () => (paidHere++, { paid: true }),
        }),
        chains: [gated],
        secret: SECRET,
        stores,
      });
      cleanups.push(() => a.close());
      const runId = `${ns}-run`;
      const parked = await a.run(gated, { n: 1 }, { runId, context: { userId: 'u-1' } });
      expect(parked.status).toBe('awaiting_confirmation');
      const token = parked.status === 'awaiting_confirmation' ? parked.resumeToken : '';
      const split = [17, 17, 16];
      const workers = split.map((calls, k) => worker({ store, ns, runId, token, calls, offset: k }));
      cleanups.push(async () => workers.forEach((w) => w.kill()));
      await Promise.all(workers.map((w) => w.waitFor('ready')));
      for (const w of workers) w.go();
      const done = await Promise.all(workers.map((w) => w.waitFor('done')));
      const answers = done.flatMap((m) => m.answers!);
      expect(answers).toHaveLength(50);
      expect(done.reduce((n, m) => n + m.paid!, paidHere)).toBe(1);
      expect(answers.filter((x) => x === 'completed')).toHaveLength(1);
      // The others: a decide or resume that lost the take, or a decide that found the run no longer parked.
      expect(
        answers.filter((x) => x !== 'completed').every((x) => x === 'failed:already_used' || x === 'not_parked'),
      ).toBe(true);
      expect((await a.getRun(runId))?.status).toBe('completed');
    }, 60_000);
  });
}
