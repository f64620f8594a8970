// `runner.rerun` on Redis and PostgreSQL: two instances re-run the same failed run at once → one new
// run, the steps before the failure not called again, the failed step called once.
import Redis from 'ioredis';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, functionInvoker, ref, type Runner } from '../../src/index.js';
import type { RunStore } from '../../src/stores/index.js';
import { postgresStores } from '../../src/postgres/index.js';
import { redisStores } from '../../src/redis/index.js';

const read = defineTool({
  name: 'read',
  description: 'r',
  input: z.object({ n: z.number() }),
  output: z.object({ n: z.number() }),
  effect: 'read',
});
const write = defineTool({
  name: 'write',
  description: 'w',
  input: z.object({ n: z.number() }),
  output: z.object({ id: z.string() }),
  effect: 'write',
});
const check = defineTool({
  name: 'check',
  description: 'c',
  input: z.object({ id: z.string() }),
  output: z.object({ ok: z.boolean() }),
  effect: 'read',
});
const chain = defineChain({
  name: 'rerun_stores',
  input: z.object({ n: z.number() }),
  steps: [
    { id: 'a', tool: read, input: { n: ref('input', 'n') } },
    { id: 'b', tool: write, input: { n: ref('a', 'n') } },
    { id: 'c', tool: check, input: { id: ref('b', 'id') } },
  ],
});

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});
const ns = `rerun_${process.pid}_${Date.now()}`;
const setups: Record<string, () => Promise<{ runs: RunStore }>> = {
  redis: async () => {
    const conn = new Redis({ host: '127.0.0.1', port: 6379 });
    cleanups.push(async () => {
      const keys = await conn.keys(`${ns}*`);
      if (keys.length) await conn.del(...keys);
      conn.disconnect();
    });
    return redisStores(conn, { prefix: ns }) as { runs: RunStore };
  },
  postgres: async () => {
    const pool = new pg.Pool({ host: '127.0.0.1', user: 'postgres', database: 'test', max: 4 });
    const stores = postgresStores(pool, { schema: ns });
    await stores.migrate();
    cleanups.push(async () => {
      await pool.query(`DROP SCHEMA IF EXISTS "${ns}" CASCADE`);
      await pool.end();
    });
    return stores as unknown as { runs: RunStore };
  },
};

describe.each(Object.keys(setups))('runner.rerun on %s', (name) => {
  it('two instances re-run one failed run: one new run, nothing before the failure called again', async () => {
    const stores = await setups[name]!();
    const calls: string[] = [];
    let fail = true;
    const make = (): Runner => {
      const invoker = functionInvoker([read, write, check], {
        read: async ({ n }) => (calls.push('read'), { n }),
        write: async ({ n }) => (calls.push('write'), { id: `w${n}` }),
        check: async () => {
          calls.push('check');
          if (fail) throw Object.assign(new Error('refused'), { status: 400 });
          return { ok: true };
        },
      });
      const runner = createRunner({ invoker, tools: [read, write, check], chains: [chain], stores });
      cleanups.unshift(() => runner.close());
      return runner;
    };
    const one = make();
    const two = make();
    const runId = `${name}-r1`;
    expect((await one.run(chain, { n: 1 }, { runId })).status).toBe('failed');
    fail = false;
    const [x, y] = await Promise.all([one.rerun(runId), two.rerun(runId)]);
    if (typeof x === 'string' || typeof y === 'string') throw new Error(`${String(x)} ${String(y)}`);
    expect(x.runId).toBe(`${runId}~rerun1`);
    expect(y.runId).toBe(`${runId}~rerun1`);
    const results = await Promise.all([x.result, y.result]);
    // One ran it; the other found it in flight (run_in_progress) or ended (its recorded result).
    expect(results.map((r) => r.status)).toContain('completed');
    for (const r of results)
      if (r.status !== 'completed') expect(r.status === 'failed' && r.error.code).toBe('run_in_progress');
    expect((await one.getRun(`${runId}~rerun1`))?.status).toBe('completed');
    expect(calls).toEqual(['read', 'write', 'check', 'check']);
  });
});
