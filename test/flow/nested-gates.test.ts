// §12 "A confirmation gate inside an iteration parks the run as one gate": a gated step inside a
// sub-chain, a forEach item, a branch or a loop iteration parks the whole run, named by its own id;
// the resume runs nothing that finished before it again, with or without a run store.
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  chain,
  createRunner,
  defineChain,
  defineTool,
  functionInvoker,
  memoryCheckpointStore,
  memoryRunStore,
  ref,
  runChain,
  type RunResult,
  type Runner,
} from 'chainkit';
import { save, unsave } from './nested-tools.js';

const read = defineTool({
  name: 'read',
  description: 'Read a thing',
  input: z.object({ id: z.string() }),
  output: z.object({ id: z.string(), label: z.string() }),
  effect: 'read',
});
const drop = defineTool({
  name: 'drop',
  description: 'Delete a thing',
  input: z.object({ id: z.string() }),
  output: z.object({ id: z.string() }),
  effect: 'destructive',
});
const list = defineTool({
  name: 'list',
  description: 'List things',
  input: z.object({ n: z.number() }),
  output: z.object({ items: z.array(z.object({ id: z.string() })) }),
  effect: 'read',
});

const dropOne = chain('drop_one', { input: z.object({ id: z.string() }) })
  .tool('read', read, (ref) => ({ id: ref('input', 'id') }))
  .tool('drop', drop, (ref) => ({ id: ref('read', 'id') }), {
    confirm: { prompt: (s) => `Delete ${s.results.read.label}?` },
  })
  .output((s) => s.results.drop.id);

const dropAll = chain('drop_all', { input: z.object({ n: z.number() }) })
  .tool('find', list, (ref) => ({ n: ref('input', 'n') }))
  .forEach('each', (ref) => ({
    over: ref('find', 'items'),
    chain: dropOne,
    input: (item) => ({ id: item('id') }),
    concurrency: 2,
  }))
  .output((s) => s.results.each);

function tools() {
  const calls: string[] = [];
  const invoker = functionInvoker([read, drop, list], {
    read: ({ id }) => (calls.push(`read:${id}`), { id, label: `thing ${id}` }),
    drop: ({ id }) => (calls.push(`drop:${id}`), { id }),
    list: ({ n }) => (calls.push('list'), { items: Array.from({ length: n }, (_, i) => ({ id: `t${i}` })) }),
  });
  return { calls, invoker };
}

const open: Runner[] = [];
afterEach(async () => {
  for (const r of open.splice(0)) await r.close();
});
function runnerWith(
  options: Omit<Parameters<typeof createRunner>[0], 'invoker'>,
  invoker: ReturnType<typeof tools>['invoker'],
) {
  const runner = createRunner({ invoker, chains: [dropAll], ...options });
  open.push(runner);
  return runner;
}

describe('a gate inside a sub-chain parks the run as one gate', () => {
  it('a sub-chain step: parked under its own id and tool; the resume does not run the sub-chain steps before it again', async () => {
    const { calls, invoker } = tools();
    const outer = chain('outer', { input: z.object({ id: z.string() }) })
      .chain('clean', dropOne, (ref) => ({ id: ref('input', 'id') }))
      .output((s) => ({ dropped: s.results.clean }));
    const runner = runnerWith({ chains: [outer] }, invoker);
    const parked = await runner.run(outer, { id: 'a' });
    expect(parked.status).toBe('awaiting_confirmation');
    if (parked.status !== 'awaiting_confirmation') return;
    expect(parked.confirmation).toMatchObject({ step: 'clean/drop', tool: 'drop', prompt: 'Delete thing a?' });
    expect(calls).toEqual(['read:a']);
    const done = await runner.resume(parked.resumeToken, { approved: true });
    expect(done.status === 'completed' && done.output).toEqual({ dropped: 'a' });
    expect(calls).toEqual(['read:a', 'drop:a']);
    expect(done.trace.steps.map((s) => [s.id, s.status])).toEqual([['clean', 'success']]);
    expect(done.trace.steps[0]!.children!.map((s) => [s.id, s.status])).toEqual([
      ['clean/read', 'success'],
      ['clean/drop', 'success'],
    ]);
  });

  it('forEach items: one gate at a time, each approved once; no item read or deleted twice (concurrency 2)', async () => {
    const { calls, invoker } = tools();
    const runner = runnerWith({}, invoker);
    let r: RunResult = await runner.run(dropAll, { n: 4 });
    const asked: string[] = [];
    while (r.status === 'awaiting_confirmation') {
      asked.push(r.confirmation.step);
      r = await runner.resume(r.resumeToken, { approved: true });
    }
    expect(r.status === 'completed' && r.output).toEqual(['t0', 't1', 't2', 't3']);
    expect(asked.sort()).toEqual(['each/0/drop', 'each/1/drop', 'each/2/drop', 'each/3/drop']);
    expect(calls.filter((c) => c === 'list')).toHaveLength(1);
    expect(calls.filter((c) => c.startsWith('read:')).sort()).toEqual(['read:t0', 'read:t1', 'read:t2', 'read:t3']);
    expect(calls.filter((c) => c.startsWith('drop:')).sort()).toEqual(['drop:t0', 'drop:t1', 'drop:t2', 'drop:t3']);
    if (r.status !== 'completed') return;
    const each = r.trace.steps.find((s) => s.id === 'each')!;
    expect(each.children!.map((c) => c.id)).toEqual(['each/0', 'each/1', 'each/2', 'each/3']);
  });

  it('declined at an item: the run ends declined at that item; items approved before stay done', async () => {
    const { calls, invoker } = tools();
    const runner = runnerWith({}, invoker);
    const first = await runner.run(dropAll, { n: 3 });
    if (first.status !== 'awaiting_confirmation') throw new Error(first.status);
    const second = await runner.resume(first.resumeToken, { approved: true });
    if (second.status !== 'awaiting_confirmation') throw new Error(second.status);
    const declined = await runner.resume(second.resumeToken, { approved: false });
    expect(declined).toMatchObject({ status: 'declined', step: second.confirmation.step });
    const approved = first.confirmation.step.split('/')[1]; // each/<index>/drop
    expect(calls.filter((c) => c.startsWith('drop:'))).toEqual([`drop:t${approved}`]);
  });

  it('an item that fails while another waits at a gate fails the step (onItemError: fail)', async () => {
    const calls: string[] = [];
    const invoker = functionInvoker([read, drop, list], {
      read: ({ id }) => {
        calls.push(`read:${id}`);
        if (id === 't1') throw Object.assign(new Error('no such thing'), { status: 404 });
        return { id, label: id };
      },
      drop: ({ id }) => (calls.push(`drop:${id}`), { id }),
      list: ({ n }) => ({ items: Array.from({ length: n }, (_, i) => ({ id: `t${i}` })) }),
    });
    const runner = runnerWith({}, invoker);
    const r = await runner.run(dropAll, { n: 3 });
    expect(r.status === 'failed' && r.error).toMatchObject({ step: 'each/1/read' });
    expect(calls.filter((c) => c.startsWith('drop:'))).toEqual([]);
  });

  it('a branch case and a loop iteration park the same way', async () => {
    const { calls, invoker } = tools();
    const outer = chain('pick', { input: z.object({ how: z.enum(['drop', 'keep']), id: z.string() }) })
      .branch('act', (ref) => ({
        on: ref('input', 'how'),
        cases: {
          drop: dropOne,
          keep: chain('keep', { input: z.object({ id: z.string() }) })
            .compute('k', () => 'kept')
            .build(),
        },
      }))
      .loop('again', {
        chain: dropOne,
        input: (ref) => ({ id: ref('input', 'id') }),
        until: (_out, n) => n >= 2,
        max: 3,
      })
      .build();
    const runner = runnerWith({ chains: [outer] }, invoker);
    let r: RunResult = await runner.run(outer, { how: 'drop', id: 'x' });
    const asked: string[] = [];
    while (r.status === 'awaiting_confirmation') {
      asked.push(r.confirmation.step);
      r = await runner.resume(r.resumeToken, { approved: true });
    }
    expect(r.status).toBe('completed');
    // The branch and the loop run side by side: the gates come in either order, each once.
    expect(asked.sort()).toEqual(['act/drop', 'again/1/drop', 'again/2/drop']);
    expect(calls.sort()).toEqual(['drop:x', 'drop:x', 'drop:x', 'read:x', 'read:x', 'read:x']);
  });

  it('runChain parks it with a secret and shared checkpoints, and refuses it without (as a top-level gate)', async () => {
    const { invoker } = tools();
    await expect(runChain(dropAll, { n: 1 }, { invoker })).rejects.toThrow(/has a confirmation gate/);
    const checkpoints = memoryCheckpointStore();
    const secret = 's'.repeat(32);
    const parked = await runChain(dropAll, { n: 1 }, { invoker, secret, stores: { checkpoints } });
    expect(parked.status === 'awaiting_confirmation' && parked.confirmation.step).toBe('each/0/drop');
    const runner = runnerWith({ secret, stores: { checkpoints } }, invoker);
    if (parked.status !== 'awaiting_confirmation') return;
    const done = await runner.resume(parked.resumeToken, { approved: true });
    expect(done.status === 'completed' && done.output).toEqual(['t0']);
  });

  it('durable (run store): decided by run id, the decider on the gated step; the run record says where it waits', async () => {
    const { calls, invoker } = tools();
    const runner = runnerWith({ stores: { runs: memoryRunStore() } }, invoker);
    const parked = await runner.run(dropAll, { n: 2 }, { runId: 'nested-gate-1' });
    if (parked.status !== 'awaiting_confirmation') throw new Error(parked.status);
    const at = parked.confirmation.step;
    expect(at).toMatch(/^each\/[01]\/drop$/);
    expect((await runner.getRun('nested-gate-1'))?.status).toBe('awaiting_confirmation');
    const next = await runner.decide('nested-gate-1', { approved: true, by: 'ops:ada' });
    if (typeof next === 'string' || next.status !== 'awaiting_confirmation') throw new Error(String(next));
    const done = await runner.decide('nested-gate-1', { approved: true, by: 'ops:bob' });
    if (typeof done === 'string' || done.status !== 'completed') throw new Error(String(done));
    expect(done.output).toEqual(['t0', 't1']);
    const items = done.trace.steps.find((s) => s.id === 'each')!.children!;
    const gated = items.flatMap((i) => i.children ?? []).filter((s) => s.id.endsWith('/drop'));
    expect(gated.map((s) => [s.id, s.decidedBy]).sort()).toEqual(
      [
        [at, 'ops:ada'],
        [next.confirmation.step, 'ops:bob'],
      ].sort(),
    );
    expect(calls.filter((c) => c.startsWith('drop:')).sort()).toEqual(['drop:t0', 'drop:t1']);
    expect(calls.filter((c) => c.startsWith('read:')).sort()).toEqual(['read:t0', 'read:t1']);
  });
});

describe('items finished in an earlier segment are undone when the run fails later', () => {
  const saveOne = chain('save_one', { input: z.object({ id: z.string() }) })
    .tool('save', save, (ref) => ({ id: ref('input', 'id') }), {
      compensate: { tool: unsave, input: { id: ref('save', 'id') } },
    })
    .compute('ask', () => true, { confirm: { prompt: 'Go on?' }, when: (s) => s.input.id === 't1' })
    .output((s) => s.results.save.id);
  const saveAll = chain('save_all', { input: z.object({ ids: z.array(z.string()) }) })
    .forEach('each', (ref) => ({ over: ref('input', 'ids'), chain: saveOne, input: (item) => ({ id: item() }) }))
    .build();

  it.each(['checkpoint', 'run store'] as const)(
    'after a resume (%s): the failure undoes items 0 and 1 too',
    async (how) => {
      const calls: string[] = [];
      const invoker = functionInvoker([save, unsave], {
        save: ({ id }) => {
          calls.push(`save:${id}`);
          if (id === 't2') throw Object.assign(new Error('refused'), { status: 422 });
          return { id };
        },
        unsave: ({ id }) => (calls.push(`unsave:${id}`), { ok: true }),
      });
      const runner = createRunner({
        invoker,
        chains: [saveAll],
        ...(how === 'run store' && { stores: { runs: memoryRunStore() } }),
      });
      open.push(runner);
      const parked = await runner.run(saveAll, { ids: ['t0', 't1', 't2'] });
      if (parked.status !== 'awaiting_confirmation') throw new Error(JSON.stringify(parked));
      expect(parked.confirmation.step).toBe('each/1/ask');
      const r = await runner.resume(parked.resumeToken, { approved: true });
      expect(r.status === 'failed' && r.compensated).toEqual(['each/1/save', 'each/0/save']);
      expect(calls).toEqual(['save:t0', 'save:t1', 'save:t2', 'unsave:t1', 'unsave:t0']);
    },
  );

  it('a forEach finished before a top-level gate is undone when a step after the resume fails', async () => {
    const calls: string[] = [];
    const boom = defineTool({
      name: 'boom',
      description: 'Fails',
      input: z.object({}),
      output: z.object({}),
      effect: 'destructive',
    });
    const invoker = functionInvoker([save, unsave, boom], {
      save: ({ id }) => (calls.push(`save:${id}`), { id }),
      unsave: ({ id }) => (calls.push(`unsave:${id}`), { ok: true }),
      boom: () => {
        calls.push('boom');
        throw Object.assign(new Error('no'), { status: 422 });
      },
    });
    const plain = chain('save_plain', { input: z.object({ id: z.string() }) })
      .tool('save', save, (ref) => ({ id: ref('input', 'id') }), {
        compensate: { tool: unsave, input: { id: ref('save', 'id') } },
      })
      .build();
    const then = chain('save_then_boom', { input: z.object({ ids: z.array(z.string()) }) })
      .forEach('each', (ref) => ({ over: ref('input', 'ids'), chain: plain, input: (item) => ({ id: item() }) }))
      .tool('boom', boom, () => ({}), { confirm: { prompt: 'Sure?' } })
      .build();
    const runner = createRunner({ invoker, chains: [then] });
    open.push(runner);
    const parked = await runner.run(then, { ids: ['a', 'b'] });
    if (parked.status !== 'awaiting_confirmation') throw new Error(parked.status);
    const r = await runner.resume(parked.resumeToken, { approved: true });
    expect(r.status === 'failed' && r.compensated).toEqual(['each/1/save', 'each/0/save']);
    expect(calls).toEqual(['save:a', 'save:b', 'boom', 'unsave:b', 'unsave:a']);
  });

  it('loop iterations finished before a gate inside an iteration are undone when a later one fails', async () => {
    const calls: string[] = [];
    let n = 0;
    const invoker = functionInvoker([save, unsave], {
      save: ({ id }) => {
        calls.push(`save:${id}`);
        if (++n === 3) throw Object.assign(new Error('refused'), { status: 422 });
        return { id };
      },
      unsave: ({ id }) => (calls.push(`unsave:${id}`), { ok: true }),
    });
    const again = chain('save_again', { input: z.object({ id: z.string() }) })
      .loop('round', { chain: saveOne, input: (ref) => ({ id: ref('input', 'id') }), until: () => false, max: 3 })
      .build();
    const runner = createRunner({ invoker, chains: [again] });
    open.push(runner);
    // saveOne asks only for t1: iteration 1 saves and stops at its gate.
    const parked = await runner.run(again, { id: 't1' });
    if (parked.status !== 'awaiting_confirmation') throw new Error(parked.status);
    expect(parked.confirmation.step).toBe('round/1/ask');
    const second = await runner.resume(parked.resumeToken, { approved: true });
    if (second.status !== 'awaiting_confirmation') throw new Error(second.status);
    expect(second.confirmation.step).toBe('round/2/ask');
    const r = await runner.resume(second.resumeToken, { approved: true });
    expect(r.status === 'failed' && r.compensated).toEqual(['round/2/save', 'round/1/save']);
    expect(calls).toEqual(['save:t1', 'save:t1', 'save:t1', 'unsave:t1', 'unsave:t1']);
  });
});

describe('confirm on a select, compute, sleep or waitFor step', () => {
  it('asks before the step runs (it was ignored): parks, or is answered in-process', async () => {
    const { invoker } = tools();
    let computed = 0;
    const c = chain('asks_compute', { input: z.object({ n: z.number() }) })
      .compute('double', (s) => (computed++, s.input.n * 2), { confirm: { prompt: (s) => `Double ${s.input.n}?` } })
      .build();
    const runner = createRunner({ invoker, chains: [c] });
    open.push(runner);
    const parked = await runner.run(c, { n: 4 });
    expect(parked.status === 'awaiting_confirmation' && parked.confirmation).toMatchObject({
      step: 'double',
      prompt: 'Double 4?',
    });
    expect(computed).toBe(0);
    if (parked.status !== 'awaiting_confirmation') return;
    expect(await runner.resume(parked.resumeToken, { approved: true })).toMatchObject({
      status: 'completed',
      output: 8,
    });
    const declined = await runner.run(c, { n: 1 }, { confirm: () => false });
    expect(declined).toMatchObject({ status: 'declined', step: 'double' });
    expect(computed).toBe(1);
  });
});

describe('a decline inside a sub-chain, answered in-process or through a resume', () => {
  it("ends the run declined at the innermost step either way, also under onItemError 'collect'", async () => {
    const del = defineTool({
      name: 'del_n',
      description: 'Delete',
      effect: 'destructive',
      input: z.object({ n: z.number() }),
      output: z.object({ n: z.number() }),
    });
    const calls: string[] = [];
    const invoker = functionInvoker({ del_n: async ({ n }: { n: number }) => (calls.push(`del${n}`), { n }) });
    const item = defineChain({
      name: 'del_item',
      input: z.object({ n: z.number() }),
      steps: [{ id: 'drop', tool: del, input: { n: ref('input', 'n') }, confirm: { prompt: 'Delete it?' } }],
    });
    const top = defineChain({
      name: 'del_all',
      input: z.object({ xs: z.array(z.number()) }),
      steps: [
        {
          id: 'each',
          forEach: { over: ref('input', 'xs'), chain: item, input: { n: ref('item') }, onItemError: 'collect' },
        },
      ],
    });
    const runner = createRunner({ invoker, tools: [del], chains: [top] });
    try {
      let r = await runner.run(top, { xs: [1, 2, 3] });
      while (r.status === 'awaiting_confirmation')
        r = await runner.resume(r.resumeToken, { approved: r.confirmation.step !== 'each/1/drop' });
      expect([r.status, r.status === 'declined' && r.step, calls]).toEqual(['declined', 'each/1/drop', ['del1']]);
      calls.length = 0;
      const inProcess = await runner.run(top, { xs: [1, 2, 3] }, { confirm: async (c) => c.step !== 'each/1/drop' });
      // It was collected as an error, the run completed and deleted item 3; and named the step `each`.
      expect([inProcess.status, inProcess.status === 'declined' && inProcess.step, calls]).toEqual([
        'declined',
        'each/1/drop',
        ['del1'],
      ]);
    } finally {
      await runner.close();
    }
  });
});
