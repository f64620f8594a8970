// races, deep nesting, branches and signals around gates and waits inside sub-chains.
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  chain,
  createRunner,
  defineTool,
  functionInvoker,
  memoryRunStore,
  type RunResult,
  type Runner,
} from 'chainkit';

const drop = defineTool({
  name: 'drop',
  description: 'Delete a thing',
  input: z.object({ id: z.string() }),
  output: z.object({ id: z.string() }),
  effect: 'destructive',
});
const open: Runner[] = [];
afterEach(async () => {
  for (const r of open.splice(0)) await r.close();
});

function dropper() {
  const calls: string[] = [];
  const keys: string[] = [];
  const invoker = functionInvoker([drop], {
    drop: ({ id }, call) => (calls.push(`drop:${id}`), keys.push(String(call.idempotencyKey)), { id }),
  });
  return { calls, keys, invoker };
}
const dropOne = chain('rm_drop_one', { input: z.object({ id: z.string() }) })
  .tool('drop', drop, (ref) => ({ id: ref('input', 'id') }), { confirm: { prompt: (s) => `Delete ${s.input.id}?` } })
  .output((s) => s.results.drop.id);

describe('misc around nested gates', () => {
  it('resume and decide racing on the same nested gate: one wins, the write happens once', async () => {
    const { calls, invoker } = dropper();
    const all = chain('rm_race', { input: z.object({ ids: z.array(z.string()) }) })
      .forEach('each', (ref) => ({ over: ref('input', 'ids'), chain: dropOne, input: (item) => ({ id: item() }) }))
      .build();
    const runner = createRunner({ invoker, chains: [all], stores: { runs: memoryRunStore() } });
    open.push(runner);
    const parked = await runner.run(all, { ids: ['a'] }, { runId: 'rm-race-1' });
    if (parked.status !== 'awaiting_confirmation') throw new Error(parked.status);
    const outcomes = await Promise.allSettled([
      runner.resume(parked.resumeToken, { approved: true }),
      runner.resume(parked.resumeToken, { approved: true }),
      runner.decide('rm-race-1', { approved: true, by: 'ops' }),
    ]);
    const completed = outcomes.filter(
      (o) => o.status === 'fulfilled' && typeof o.value !== 'string' && (o.value as RunResult).status === 'completed',
    );
    expect(completed).toHaveLength(1);
    expect(calls).toEqual(['drop:a']);
  });

  it('a gate in a forEach inside a forEach: named each/1/inner/0/drop; every write once, keys stable', async () => {
    const { calls, keys, invoker } = dropper();
    const inner = chain('rm_inner', { input: z.object({ ids: z.array(z.string()) }) })
      .forEach('inner', (ref) => ({ over: ref('input', 'ids'), chain: dropOne, input: (item) => ({ id: item() }) }))
      .build();
    const outer = chain('rm_outer', { input: z.object({ groups: z.array(z.array(z.string())) }) })
      .forEach('each', (ref) => ({
        over: ref('input', 'groups'),
        chain: inner,
        input: (item) => ({ ids: item() }),
        concurrency: 2,
      }))
      .build();
    for (const store of [undefined, memoryRunStore()]) {
      calls.length = 0;
      keys.length = 0;
      const runner = createRunner({ invoker, chains: [outer], ...(store && { stores: { runs: store } }) });
      open.push(runner);
      let r: RunResult = await runner.run(
        outer,
        { groups: [['a', 'b'], ['c'], ['d', 'e']] },
        { runId: `rm-deep-${!!store}` },
      );
      const asked: string[] = [];
      while (r.status === 'awaiting_confirmation') {
        asked.push(r.confirmation.step);
        r = await runner.resume(r.resumeToken, { approved: true });
      }
      expect(r.status === 'completed' && r.output).toEqual([['a', 'b'], ['c'], ['d', 'e']]);
      expect(asked.sort()).toEqual([
        'each/0/inner/0/drop',
        'each/0/inner/1/drop',
        'each/1/inner/0/drop',
        'each/2/inner/0/drop',
        'each/2/inner/1/drop',
      ]);
      expect(calls.sort()).toEqual(['drop:a', 'drop:b', 'drop:c', 'drop:d', 'drop:e']);
      expect(keys.sort()).toEqual(asked.map((s) => `rm-deep-${!!store}:${s}`).sort());
    }
  });

  it('a gate in a branch case whose `on` reads a result: the same case runs on resume', async () => {
    const { calls, invoker } = dropper();
    let picks = 0;
    const keep = chain('rm_keep', { input: z.object({ id: z.string() }) })
      .compute('k', (s) => `kept ${s.input.id}`)
      .build();
    const c = chain('rm_branch', { input: z.object({ id: z.string() }) })
      .compute('pick', () => (picks++ === 0 ? 'drop' : 'keep'))
      .branch('act', (ref) => ({
        on: ref('pick'),
        cases: {
          drop: { chain: dropOne, input: { id: ref('input', 'id') } },
          keep: { chain: keep, input: { id: ref('input', 'id') } },
        },
      }))
      .build();
    const runner = createRunner({ invoker, chains: [c] });
    open.push(runner);
    const parked = await runner.run(c, { id: 'x' });
    if (parked.status !== 'awaiting_confirmation') throw new Error(parked.status);
    expect(parked.confirmation.step).toBe('act/drop');
    const r = await runner.resume(parked.resumeToken, { approved: true });
    expect(r.status === 'completed' && r.output).toBe('x');
    expect(calls).toEqual(['drop:x']);
    expect(picks).toBe(1);
  });
});
