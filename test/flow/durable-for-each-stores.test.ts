// §12 durability on real Redis and PostgreSQL: a run dies with item 37 of 100 in flight; two runners
// recover at once — one wins — items 0–36 are not called again and every write takes effect once.
import Redis from 'ioredis';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { chain, createRunner, defineTool, functionInvoker, ref, type Runner } from 'chainkit';
import { redisStores } from 'chainkit/redis';
import { postgresStores } from 'chainkit/postgres';

const list = defineTool({
  name: 'list',
  description: 'List ids',
  input: z.object({ n: z.number() }),
  output: z.object({ items: z.array(z.object({ id: z.string() })) }),
  effect: 'read',
});
const mark = defineTool({
  name: 'mark',
  description: 'Mark',
  input: z.object({ id: z.string() }),
  output: z.object({ id: z.string() }),
  idempotent: true,
});
const markOne = chain('mark_one', { input: z.object({ id: z.string() }) })
  .tool('mark', mark, (ref) => ({ id: ref('input', 'id') }))
  .output((s) => s.results.mark.id);
const all = chain('mark_all_stores', { input: z.object({ n: z.number() }), timeoutMs: 60_000 })
  .tool('find', list, (ref) => ({ n: ref('input', 'n') }))
  .forEach('done', (ref) => ({ over: ref('find', 'items'), chain: markOne, input: (item) => ({ id: item('id') }) }))
  .output((s) => s.results.done.length);

const zap = defineTool({
  name: 'zap',
  description: 'Delete for good',
  input: z.object({ id: z.string() }),
  output: z.object({ id: z.string() }),
  effect: 'destructive',
  idempotent: true,
});
const zapOne = chain('zap_one', { input: z.object({ id: z.string() }) })
  .tool('zap', zap, (ref) => ({ id: ref('input', 'id') }), { confirm: { prompt: 'Zap it?' } })
  .output((s) => s.results.zap.id);
const zapAll = chain('zap_all_stores', { input: z.object({ n: z.number() }), timeoutMs: 60_000 })
  .tool('find', list, (ref) => ({ n: ref('input', 'n') }))
  .forEach('done', (ref) => ({ over: ref('find', 'items'), chain: zapOne, input: (item) => ({ id: item('id') }) }))
  .output((s) => s.results.done);

const unmark = defineTool({
  name: 'unmark',
  description: 'Unmark',
  input: z.object({ id: z.string() }),
  output: z.object({ ok: z.boolean() }),
  idempotent: true,
});
const markUndoable = chain('mark_undoable', { input: z.object({ id: z.string() }) })
  .tool('mark', mark, (ref) => ({ id: ref('input', 'id') }), {
    compensate: { tool: unmark, input: { id: ref('mark', 'id') } },
  })
  .output((s) => s.results.mark.id);
const markOrUndo = chain('mark_or_undo_stores', { input: z.object({ n: z.number() }), timeoutMs: 60_000 })
  .tool('find', list, (ref) => ({ n: ref('input', 'n') }))
  .forEach('done', (ref) => ({
    over: ref('find', 'items'),
    chain: markUndoable,
    input: (item) => ({ id: item('id') }),
  }))
  .output((s) => s.results.done);

const prefix = `chainkit-test-flow:${process.pid}:${Date.now()}`;
const schema = `ck_flow_${process.pid}_${Date.now() % 1_000_000}`;
const redisClients: Redis[] = [];
const pools: pg.Pool[] = [];
const runners: Runner[] = [];
afterAll(async () => {
  for (const r of runners) await r.close();
  if (redisClients[0]) {
    const keys = await redisClients[0].keys(`${prefix}*`);
    if (keys.length) await redisClients[0].del(...keys);
  }
  for (const c of redisClients) c.disconnect();
  await pools[0]?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  for (const p of pools) await p.end();
});

type Stores = ReturnType<typeof redisStores> | ReturnType<typeof postgresStores>;
const backends: [string, () => Stores][] = [
  [
    'redis',
    () => {
      const client = new Redis({ host: '127.0.0.1', port: 6379, maxRetriesPerRequest: 1 });
      redisClients.push(client);
      return redisStores(client, { prefix, pollMs: 5 });
    },
  ],
  [
    'postgres',
    () => {
      const pool = new pg.Pool({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test', max: 2 });
      pools.push(pool);
      return postgresStores(pool, { schema, pollMs: 10 });
    },
  ],
];

describe.each(backends)('durable forEach on %s', (name, open) => {
  it('recovered by two runners at once: items 0–36 not called again, every write once', async () => {
    let t = Date.now();
    const now = () => t;
    const effects = new Map<string, number>();
    const make = (hang: boolean) => {
      const stores = open();
      const invoker = functionInvoker([list, mark], {
        list: ({ n }) => ({ items: Array.from({ length: n }, (_, i) => ({ id: `t${i}` })) }),
        mark: ({ id }, call) => {
          if (hang && id === 't37') return new Promise<never>(() => {});
          effects.set(call.idempotencyKey!, (effects.get(call.idempotencyKey!) ?? 0) + 1);
          return { id };
        },
      });
      const runner = createRunner({ invoker, chains: [all], stores: stores as never, now, leaseMs: 1_000 });
      runners.push(runner);
      return runner;
    };
    const runId = `fe-${name}-${Date.now()}`;
    const dead = make(true);
    void dead.run(all, { n: 100 }, { runId });
    for (let i = 0; i < 400 && effects.size < 37; i++) await new Promise((r) => setTimeout(r, 10));
    expect(effects.size).toBe(37);
    for (let i = 0; i < 100 && !(await dead.getRun(runId))?.steps.includes('done/36'); i++)
      await new Promise((r) => setTimeout(r, 10));
    await dead.close();
    t += 10_000; // the owner's lease expired
    const [a, b] = [make(false), make(false)];
    const results = (await Promise.all([a.recover(), b.recover()])).flat();
    expect(results.map((r) => r.status)).toEqual(['completed']);
    expect(results[0]!.status === 'completed' && results[0]!.output).toBe(100);
    expect(effects.size).toBe(100);
    expect([...effects.values()].every((n) => n === 1)).toBe(true);
  });

  it('a gate inside an item parks the run; another instance approves it; a crash after the approval is recovered without asking again', async () => {
    let t = Date.now();
    const now = () => t;
    const effects = new Map<string, number>();
    const make = (hang: boolean) => {
      const stores = open();
      const invoker = functionInvoker([list, zap], {
        list: ({ n }) => ({ items: Array.from({ length: n }, (_, i) => ({ id: `t${i}` })) }),
        zap: ({ id }) => {
          if (hang) return new Promise<never>(() => {});
          effects.set(id, (effects.get(id) ?? 0) + 1);
          return { id };
        },
      });
      const runner = createRunner({
        invoker,
        chains: [zapAll],
        stores: stores as never,
        now,
        leaseMs: 1_000,
        secret: 'k'.repeat(32),
      });
      runners.push(runner);
      return runner;
    };
    const runId = `gate-${name}-${Date.now()}`;
    const parked = await make(false).run(zapAll, { n: 2 }, { runId });
    expect(parked.status === 'awaiting_confirmation' && parked.confirmation.step).toBe('done/0/zap');
    // Another instance approves; it dies while the approved write is in flight.
    const dying = make(true);
    void dying.decide(runId, { approved: true, by: 'ops:ada' });
    for (let i = 0; i < 200 && (await dying.getRun(runId))?.status !== 'running'; i++)
      await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 50));
    await dying.close();
    t += 10_000; // its lease expired
    const heir = make(false);
    const [next] = await heir.recover();
    expect(next?.status === 'awaiting_confirmation' && next.confirmation.step).toBe('done/1/zap');
    const done = await heir.decide(runId, { approved: true, by: 'ops:bob' });
    expect(typeof done !== 'string' && done.status === 'completed' && done.output).toEqual(['t0', 't1']);
    expect([...effects.entries()].sort()).toEqual([
      ['t0', 1],
      ['t1', 1],
    ]);
  });

  it('recovered mid-forEach, then an item fails: the items finished before the crash are undone too, each once', async () => {
    let t = Date.now();
    const now = () => t;
    const effects: string[] = [];
    const make = (hang: boolean) => {
      const invoker = functionInvoker([list, mark, unmark], {
        list: ({ n }) => ({ items: Array.from({ length: n }, (_, i) => ({ id: `t${i}` })) }),
        mark: ({ id }) => {
          if (hang && id === 't2') return new Promise<never>(() => {});
          if (id === 't3') throw Object.assign(new Error('refused'), { status: 422 });
          effects.push(`mark:${id}`);
          return { id };
        },
        unmark: ({ id }) => (effects.push(`unmark:${id}`), { ok: true }),
      });
      const runner = createRunner({ invoker, chains: [markOrUndo], stores: open() as never, now, leaseMs: 1_000 });
      runners.push(runner);
      return runner;
    };
    const runId = `undo-${name}-${Date.now()}`;
    const dead = make(true);
    void dead.run(markOrUndo, { n: 5 }, { runId });
    for (let i = 0; i < 200 && !(await dead.getRun(runId))?.steps.includes('done/1'); i++)
      await new Promise((r) => setTimeout(r, 10));
    await dead.close();
    t += 10_000;
    const [result] = await make(false).recover();
    expect(result?.status === 'failed' && result.compensated).toEqual(['done/2/mark', 'done/1/mark', 'done/0/mark']);
    expect(effects).toEqual(['mark:t0', 'mark:t1', 'mark:t2', 'unmark:t2', 'unmark:t1', 'unmark:t0']);
  });
});
