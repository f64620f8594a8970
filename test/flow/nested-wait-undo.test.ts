// a run parked `waiting` at a sleep/waitFor inside a forEach item (or a sub-chain) that is
// cancelled, or whose waitFor times out, must undo what the items and sub-chains finished before.
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { chain, createRunner, functionInvoker, memoryRunStore, ref, type Runner } from 'chainkit';
import { save, unsave } from './nested-tools.js';

const Review = z.object({ ok: z.boolean() });

const open: Runner[] = [];
afterEach(async () => {
  for (const r of open.splice(0)) await r.close();
});

// Each item saves (compensated), then item t1 waits for a review.
const saveOne = chain('rw_save_one', { input: z.object({ id: z.string() }) })
  .tool('save', save, (ref) => ({ id: ref('input', 'id') }), {
    compensate: { tool: unsave, input: { id: ref('save', 'id') } },
  })
  .waitFor(
    'review',
    { signal: 'review', schema: Review, timeoutMs: 60_000 },
    { when: (s: { input: { id: string } }) => s.input.id === 't1' },
  )
  .output((s) => s.results.save.id);
const all = chain('rw_all', { input: z.object({ ids: z.array(z.string()) }), timeoutMs: 60_000 })
  .forEach('each', (ref) => ({ over: ref('input', 'ids'), chain: saveOne, input: (item) => ({ id: item() }) }))
  .build();
const sub = chain('rw_sub', { input: z.object({ id: z.string() }), timeoutMs: 60_000 })
  .chain('one', saveOne, (ref) => ({ id: ref('input', 'id') }))
  .build();

function setup() {
  let t = 1_700_000_000_000;
  const clock = { now: () => t, advance: (ms: number) => (t += ms) };
  const calls: string[] = [];
  const invoker = functionInvoker([save, unsave], {
    save: ({ id }) => (calls.push(`save:${id}`), { id }),
    unsave: ({ id }) => (calls.push(`unsave:${id}`), { ok: true }),
  });
  const runner = createRunner({
    invoker,
    chains: [all, sub],
    stores: { runs: memoryRunStore({ now: clock.now }) },
    now: clock.now,
  });
  open.push(runner);
  return { runner, calls, clock };
}

describe('a run waiting inside a forEach item', () => {
  it('cancelled: items finished before the wait and the waiting item’s save are undone', async () => {
    const { runner, calls } = setup();
    const parked = await runner.run(all, { ids: ['t0', 't1', 't2'] }, { runId: 'rw-1' });
    expect(parked).toMatchObject({ status: 'waiting', waiting: { step: 'each/1/review', signal: 'review' } });
    expect(calls).toEqual(['save:t0', 'save:t1']);
    expect(await runner.cancel('rw-1')).toBe('cancelled');
    expect((await runner.getRun('rw-1'))?.status).toBe('failed');
    expect(calls.filter((c) => c.startsWith('unsave:')).sort()).toEqual(['unsave:t0', 'unsave:t1']);
  });

  it('its waitFor times out: the same undos', async () => {
    const { runner, calls, clock } = setup();
    const parked = await runner.run(all, { ids: ['t0', 't1', 't2'] }, { runId: 'rw-2' });
    expect(parked.status).toBe('waiting');
    clock.advance(60_001);
    const [ended] = await runner.recover();
    expect(ended).toMatchObject({ status: 'failed', error: { code: 'wait_timeout' } });
    expect(calls.filter((c) => c.startsWith('unsave:')).sort()).toEqual(['unsave:t0', 'unsave:t1']);
  });

  it('inside a `chain` step, cancelled: the sub-chain’s save is undone', async () => {
    const { runner, calls } = setup();
    const parked = await runner.run(sub, { id: 't1' }, { runId: 'rw-3' });
    expect(parked).toMatchObject({ status: 'waiting', waiting: { step: 'one/review' } });
    expect(await runner.cancel('rw-3')).toBe('cancelled');
    expect(calls.filter((c) => c.startsWith('unsave:'))).toEqual(['unsave:t1']);
  });
});
