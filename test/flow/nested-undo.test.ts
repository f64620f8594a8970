// undo of sub-chain units finished before a nested gate, on cancel and on collected failures.
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  chain,
  createRunner,
  defineTool,
  functionInvoker,
  memoryCheckpointStore,
  memoryRunStore,
  ref,
  type Runner,
} from 'chainkit';
import { save, unsave } from './nested-tools.js';

const fail = defineTool({
  name: 'fail',
  description: 'Fails for some',
  input: z.object({ id: z.string() }),
  output: z.object({ id: z.string() }),
  idempotent: true,
});

const open: Runner[] = [];
afterEach(async () => {
  for (const r of open.splice(0)) await r.close();
});

function tools(failFor: string[] = []) {
  const calls: string[] = [];
  const invoker = functionInvoker([save, unsave, fail], {
    save: ({ id }) => (calls.push(`save:${id}`), { id }),
    unsave: ({ id }) => (calls.push(`unsave:${id}`), { ok: true }),
    fail: ({ id }) => {
      calls.push(`fail:${id}`);
      if (failFor.includes(id)) throw Object.assign(new Error('refused'), { status: 422 });
      return { id };
    },
  });
  return { calls, invoker };
}

// save (compensated), then a gate for t1 only, then `fail` (which fails for chosen ids)
const saveOne = chain('r_save_one', { input: z.object({ id: z.string() }) })
  .tool('save', save, (ref) => ({ id: ref('input', 'id') }), {
    compensate: { tool: unsave, input: { id: ref('save', 'id') } },
  })
  .compute('ask', () => true, { confirm: { prompt: 'Go on?' }, when: (s) => s.input.id === 't1' })
  // `when` reads the scope: the check waits for every earlier step (the gate included)
  .tool('check', fail, (ref) => ({ id: ref('save', 'id') }), { when: () => true })
  .output((s) => s.results.save.id);

describe('cancel of a run parked at a gate inside a forEach item', () => {
  it('undoes the items finished before the gate and the parked item’s finished save, each once', async () => {
    const { calls, invoker } = tools();
    const all = chain('r_cancel_all', { input: z.object({ ids: z.array(z.string()) }) })
      .forEach('each', (ref) => ({ over: ref('input', 'ids'), chain: saveOne, input: (item) => ({ id: item() }) }))
      .build();
    const runner = createRunner({ invoker, chains: [all], stores: { runs: memoryRunStore() } });
    open.push(runner);
    const parked = await runner.run(all, { ids: ['t0', 't1', 't2'] }, { runId: 'r-cancel-1' });
    if (parked.status !== 'awaiting_confirmation') throw new Error(JSON.stringify(parked));
    expect(parked.confirmation.step).toBe('each/1/ask');
    expect(calls).toEqual(['save:t0', 'fail:t0', 'save:t1']);
    expect(await runner.cancel('r-cancel-1')).toBe('cancelled');
    const rec = await runner.getRun('r-cancel-1');
    expect(rec?.status).toBe('failed');
    // t0 finished (saved), t1 saved before its gate: both must be undone once.
    expect(calls.filter((c) => c.startsWith('unsave:')).sort()).toEqual(['unsave:t0', 'unsave:t1']);
  });

  it('same at a gate inside a `chain` step (sub-chain): the save before the gate is undone on cancel', async () => {
    const { calls, invoker } = tools();
    const outer = chain('r_cancel_sub', { input: z.object({ id: z.string() }) })
      .chain('one', saveOne, (ref) => ({ id: ref('input', 'id') }))
      .build();
    const runner = createRunner({ invoker, chains: [outer], stores: { runs: memoryRunStore() } });
    open.push(runner);
    const parked = await runner.run(outer, { id: 't1' }, { runId: 'r-cancel-2' });
    if (parked.status !== 'awaiting_confirmation') throw new Error(JSON.stringify(parked));
    expect(parked.confirmation.step).toBe('one/ask');
    expect(await runner.cancel('r-cancel-2')).toBe('cancelled');
    expect(calls.filter((c) => c.startsWith('unsave:'))).toEqual(['unsave:t1']);
  });
});

describe('a collected item failure, then a gate, then a failure after the resume', () => {
  it('the failed item’s save was undone when it failed: it is not undone a second time', async () => {
    const { calls, invoker } = tools(['t0']);
    const all = chain('r_collect_all', { input: z.object({ ids: z.array(z.string()) }) })
      .forEach('each', (ref) => ({
        over: ref('input', 'ids'),
        chain: saveOne,
        input: (item) => ({ id: item() }),
        onItemError: 'collect',
      }))
      .tool('last', fail, () => ({ id: 'boom' }), { when: () => true })
      .build();
    const runner = createRunner({ invoker, chains: [all] });
    open.push(runner);
    const parked = await runner.run(all, { ids: ['t0', 't1'] });
    if (parked.status !== 'awaiting_confirmation') throw new Error(JSON.stringify(parked));
    // t0 failed at check: its own save was compensated as the item failed.
    expect(calls).toEqual(['save:t0', 'fail:t0', 'unsave:t0', 'save:t1']);
    const { calls: _c } = { calls };
    // make the last step fail
    calls.length = 0;
    const r = await runner.resume(parked.resumeToken, { approved: true });
    expect(r.status).toBe('completed');
  });

  it('… and when the run fails later, t0 is not undone twice', async () => {
    const { calls, invoker } = tools(['t0', 'boom']);
    const all = chain('r_collect_all2', { input: z.object({ ids: z.array(z.string()) }) })
      .forEach('each', (ref) => ({
        over: ref('input', 'ids'),
        chain: saveOne,
        input: (item) => ({ id: item() }),
        onItemError: 'collect',
      }))
      .tool('last', fail, () => ({ id: 'boom' }), { when: () => true })
      .build();
    for (const store of [undefined, memoryRunStore()]) {
      calls.length = 0;
      const runner = createRunner({ invoker, chains: [all], ...(store && { stores: { runs: store } }) });
      open.push(runner);
      const parked = await runner.run(all, { ids: ['t0', 't1'] });
      if (parked.status !== 'awaiting_confirmation') throw new Error(JSON.stringify(parked));
      expect(calls).toEqual(['save:t0', 'fail:t0', 'unsave:t0', 'save:t1']);
      const r = await runner.resume(parked.resumeToken, { approved: true });
      expect(r.status).toBe('failed');
      expect(calls.filter((c) => c === 'unsave:t0')).toHaveLength(1);
      expect(calls.filter((c) => c === 'unsave:t1')).toHaveLength(1);
    }
  });
});

describe('a collected failed item is not undone again by another instance', () => {
  it('resumed on a second runner (shared checkpoints, its own idempotency store): unsave:t0 is called once', async () => {
    const { calls, invoker } = tools(['t0', 'boom']);
    const all = chain('r_collect_two', { input: z.object({ ids: z.array(z.string()) }) })
      .forEach('each', (ref) => ({
        over: ref('input', 'ids'),
        chain: saveOne,
        input: (item) => ({ id: item() }),
        onItemError: 'collect',
      }))
      .tool('last', fail, () => ({ id: 'boom' }), { when: () => true })
      .build();
    const checkpoints = memoryCheckpointStore();
    const secret = 's'.repeat(32);
    const a = createRunner({ invoker, chains: [all], secret, stores: { checkpoints } });
    const b = createRunner({ invoker, chains: [all], secret, stores: { checkpoints } });
    open.push(a, b);
    const parked = await a.run(all, { ids: ['t0', 't1'] });
    if (parked.status !== 'awaiting_confirmation') throw new Error(JSON.stringify(parked));
    expect(calls).toEqual(['save:t0', 'fail:t0', 'unsave:t0', 'save:t1']);
    const r = await b.resume(parked.resumeToken, { approved: true });
    expect(r.status).toBe('failed');
    // t0's save was undone when t0 failed (in the first segment); only t1's is left to undo.
    expect(calls.filter((c) => c === 'unsave:t0')).toHaveLength(1);
    expect(r.status === 'failed' && r.compensated).toEqual(['each/1/save']);
  });
});

describe('a failure outranks a gate inside an item', () => {
  it('the item parked at its gate had saved: its save is undone when another item fails the step', async () => {
    const { calls, invoker } = tools(['t0']);
    const slowFail = defineTool({
      name: 'slow_fail',
      description: 'Fails after a while',
      input: z.object({ id: z.string() }),
      output: z.object({ id: z.string() }),
      idempotent: true,
    });
    const inv = functionInvoker([save, unsave, fail, slowFail], {
      save: ({ id }) => (calls.push(`save:${id}`), { id }),
      unsave: ({ id }) => (calls.push(`unsave:${id}`), { ok: true }),
      fail: ({ id }) => (calls.push(`fail:${id}`), { id }),
      slow_fail: async ({ id }) => {
        await new Promise((r) => setTimeout(r, 30));
        calls.push(`slow_fail:${id}`);
        if (id === 't0') throw Object.assign(new Error('refused'), { status: 422 });
        return { id };
      },
    });
    void invoker;
    // t0: fails slowly; t1: saves then parks at its gate.
    const one = chain('r_outrank_one', { input: z.object({ id: z.string() }) })
      .tool('first', slowFail, (ref) => ({ id: ref('input', 'id') }), { when: (s) => s.input.id === 't0' })
      .tool('save', save, (ref) => ({ id: ref('input', 'id') }), {
        compensate: { tool: unsave, input: { id: ref('save', 'id') } },
        when: (s) => s.input.id === 't1',
      })
      .compute('ask', () => true, { confirm: { prompt: 'Go on?' }, when: (s) => s.input.id === 't1' })
      .build();
    const all = chain('r_outrank_all', { input: z.object({ ids: z.array(z.string()) }) })
      .forEach('each', (ref) => ({
        over: ref('input', 'ids'),
        chain: one,
        input: (item) => ({ id: item() }),
        concurrency: 2,
      }))
      .build();
    for (const store of [undefined, memoryRunStore()]) {
      calls.length = 0;
      const runner = createRunner({ invoker: inv, chains: [all], ...(store && { stores: { runs: store } }) });
      open.push(runner);
      const r = await runner.run(all, { ids: ['t0', 't1'] });
      expect(r.status === 'failed' && r.error.step).toBe('each/0/first');
      expect(calls).toContain('save:t1');
      expect(calls.filter((c) => c.startsWith('unsave:'))).toEqual(['unsave:t1']);
    }
  });
});

describe('cancel of a run parked at a gate two levels down', () => {
  it('forEach inside forEach: every save before the gate is undone once (finished and unfinished items)', async () => {
    const { calls, invoker } = tools();
    const inner = chain('r_deep_inner', { input: z.object({ ids: z.array(z.string()) }) })
      .forEach('inner', (ref) => ({ over: ref('input', 'ids'), chain: saveOne, input: (item) => ({ id: item() }) }))
      .build();
    const outer = chain('r_deep_outer', { input: z.object({ groups: z.array(z.array(z.string())) }) })
      .forEach('each', (ref) => ({ over: ref('input', 'groups'), chain: inner, input: (item) => ({ ids: item() }) }))
      .build();
    for (const store of [undefined, memoryRunStore()]) {
      calls.length = 0;
      const runner = createRunner({ invoker, chains: [outer], stores: { runs: store ?? memoryRunStore() } });
      open.push(runner);
      const runId = `r-deep-${store ? 'a' : 'b'}`;
      const parked = await runner.run(outer, { groups: [['a'], ['t0', 't1', 't2']] }, { runId });
      if (parked.status !== 'awaiting_confirmation') throw new Error(JSON.stringify(parked));
      expect(parked.confirmation.step).toBe('each/1/inner/1/ask');
      expect(calls).toEqual(['save:a', 'fail:a', 'save:t0', 'fail:t0', 'save:t1']);
      expect(await runner.cancel(runId)).toBe('cancelled');
      expect(calls.filter((c) => c.startsWith('unsave:')).sort()).toEqual(['unsave:a', 'unsave:t0', 'unsave:t1']);
    }
  });

  it('a loop iteration waiting, cancelled: the iterations before and the waiting one’s save are undone', async () => {
    const calls: string[] = [];
    let t = 1_700_000_000_000;
    const invoker = functionInvoker([save, unsave], {
      save: ({ id }) => (calls.push(`save:${id}`), { id }),
      unsave: ({ id }) => (calls.push(`unsave:${id}`), { ok: true }),
    });
    const iter = chain('r_loop_iter', { input: z.object({ id: z.string() }) })
      .tool('save', save, (ref) => ({ id: ref('input', 'id') }), {
        compensate: { tool: unsave, input: { id: ref('save', 'id') } },
      })
      .sleep('nap', 5_000)
      .build();
    const looped = chain('r_loop', { input: z.object({ id: z.string() }), timeoutMs: 60_000 })
      .loop('round', { chain: iter, input: (ref) => ({ id: ref('input', 'id') }), until: () => false, max: 3 })
      .build();
    const now = () => t;
    const runner = createRunner({ invoker, chains: [looped], stores: { runs: memoryRunStore({ now }) }, now });
    open.push(runner);
    const parked = await runner.run(looped, { id: 'x' }, { runId: 'r-loop-1' });
    expect(parked).toMatchObject({ status: 'waiting', waiting: { step: 'round/1/nap' } });
    t += 5_001;
    const [second] = await runner.recover();
    expect(second).toMatchObject({ status: 'waiting', waiting: { step: 'round/2/nap' } });
    expect(await runner.cancel('r-loop-1')).toBe('cancelled');
    expect(calls).toEqual(['save:x', 'save:x', 'unsave:x', 'unsave:x']);
  });
});
