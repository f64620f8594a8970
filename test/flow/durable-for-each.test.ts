// §12 durability: each forEach item (and each sub-chain step) is journaled; a run recovered mid-forEach
// runs only the items that had not finished, each write once, under keys that carry the item index.
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { chain, createRunner, defineTool, functionInvoker, memoryRunStore, type Runner } from 'chainkit';
import type { RunStore } from 'chainkit/stores';

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
const note = defineTool({
  name: 'note',
  description: 'Note',
  input: z.object({ id: z.string() }),
  output: z.object({ ok: z.boolean() }),
  effect: 'read',
});
const markOne = chain('mark_one', { input: z.object({ id: z.string() }) })
  .tool('mark', mark, (ref) => ({ id: ref('input', 'id') }))
  .tool('note', note, (ref) => ({ id: ref('mark', 'id') }))
  .output((s) => s.results.mark.id);
const all = chain('mark_all', { input: z.object({ n: z.number() }), timeoutMs: 60_000 })
  .tool('find', list, (ref) => ({ n: ref('input', 'n') }))
  .forEach('done', (ref) => ({ over: ref('find', 'items'), chain: markOne, input: (item) => ({ id: item('id') }) }))
  .output((s) => s.results.done.length);

const runners: Runner[] = [];
afterEach(async () => {
  for (const r of runners.splice(0)) await r.close();
});

function make(store: RunStore, now: () => number, hangAt?: string) {
  const writes: string[] = [];
  const notes: string[] = [];
  const invoker = functionInvoker([list, mark, note], {
    list: ({ n }) => ({ items: Array.from({ length: n }, (_, i) => ({ id: `t${i}` })) }),
    mark: ({ id }, call) => {
      writes.push(call.idempotencyKey!);
      return id === hangAt ? new Promise<never>(() => {}) : { id };
    },
    note: ({ id }) => (notes.push(id), { ok: true }),
  });
  const runner = createRunner({ invoker, chains: [all], stores: { runs: store }, now, leaseMs: 1_000 });
  runners.push(runner);
  return { runner, writes, notes };
}

describe('durable forEach (memory run store)', () => {
  it('a run recovered mid-forEach runs only the unfinished items; the item in flight runs again under the same key', async () => {
    let t = 1_000_000;
    const now = () => t;
    const store = memoryRunStore({ now });
    const dead = make(store, now, 't37');
    void dead.runner.run(all, { n: 100 }, { runId: 'fe' });
    for (let i = 0; i < 200 && dead.writes.length < 38; i++) await new Promise((r) => setTimeout(r, 5));
    expect(dead.writes).toHaveLength(38); // items 0–36 done, 37 in flight
    const info = await dead.runner.getRun('fe');
    expect(info?.steps).toContain('done/36');
    expect(info?.steps).toContain('done/36/mark');
    t += 5_000; // the owner is gone: its lease expired
    const heir = make(store, now);
    const [result] = await heir.runner.recover();
    expect(result?.status === 'completed' && result.output).toBe(100);
    // Items 0–36 were not called again; 37 ran again with the same key; every write once.
    expect(heir.writes[0]).toBe('fe:done/37/mark');
    expect(heir.writes).toHaveLength(63);
    expect(new Set([...dead.writes, ...heir.writes]).size).toBe(100);
    expect(heir.notes[0]).toBe('t37');
    const done = result!.trace.steps.find((s) => s.id === 'done')!;
    expect(done.children).toHaveLength(100);
  });

  it('watch delivers item:end and the nested step events of a forEach', async () => {
    const { runner } = make(memoryRunStore(), Date.now);
    await runner.run(all, { n: 2 }, { runId: 'watched' });
    const seen: string[] = [];
    for await (const e of runner.watch('watched'))
      if (e.type !== 'run:start' && e.type !== 'run:end')
        seen.push(`${e.type} ${e.step}${e.type === 'item:end' ? ` #${e.data.index} ${e.data.status}` : ''}`);
    expect(seen).toEqual(
      expect.arrayContaining([
        'step:end done/0/mark',
        'item:end done #0 success',
        'item:end done #1 success',
        'step:end done',
      ]),
    );
    expect(seen.indexOf('item:end done #1 success')).toBeLessThan(seen.indexOf('step:end done'));
  });

  it('a sub-step journaled before the crash is not called again inside an unfinished item', async () => {
    let t = 1_000_000;
    const now = () => t;
    const store = memoryRunStore({ now });
    const writes: string[] = [];
    let hang = true;
    const invoker = functionInvoker([list, mark, note], {
      list: ({ n }) => ({ items: Array.from({ length: n }, (_, i) => ({ id: `t${i}` })) }),
      mark: ({ id }, call) => (writes.push(call.idempotencyKey!), { id }),
      note: ({ id }) => (id === 't1' && hang ? new Promise<never>(() => {}) : { ok: true }),
    });
    const dead = createRunner({ invoker, chains: [all], stores: { runs: store }, now, leaseMs: 1_000 });
    runners.push(dead);
    void dead.run(all, { n: 3 }, { runId: 'sub' });
    for (let i = 0; i < 200 && !(await dead.getRun('sub'))?.steps.includes('done/1/mark'); i++)
      await new Promise((r) => setTimeout(r, 5));
    hang = false;
    t += 5_000;
    const heir = createRunner({ invoker, chains: [all], stores: { runs: store }, now, leaseMs: 1_000 });
    runners.push(heir);
    const [result] = await heir.recover();
    expect(result?.status === 'completed' && result.output).toBe(3);
    expect(writes).toEqual(['sub:done/0/mark', 'sub:done/1/mark', 'sub:done/2/mark']); // done/1/mark journaled: not again
  });
});
