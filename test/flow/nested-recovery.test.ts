// a durable run recovered (its owner dead) after a gate inside a forEach item was approved.
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { chain, createRunner, defineTool, functionInvoker, memoryRunStore, ref, type Runner } from 'chainkit';
import type { RunStore } from 'chainkit/stores';

const save = defineTool({
  name: 'save',
  description: 'Save',
  input: z.object({ id: z.string() }),
  output: z.object({ id: z.string() }),
  idempotent: true,
});
const unsave = defineTool({
  name: 'unsave',
  description: 'Undo a save',
  input: z.object({ id: z.string() }),
  output: z.object({ ok: z.boolean() }),
  idempotent: true,
});
const mark = defineTool({
  name: 'mark',
  description: 'Mark',
  input: z.object({ id: z.string() }),
  output: z.object({ id: z.string() }),
  idempotent: true,
});
const one = chain('rr_one', { input: z.object({ id: z.string() }) })
  .tool('save', save, (ref) => ({ id: ref('input', 'id') }), {
    compensate: { tool: unsave, input: { id: ref('save', 'id') } },
  })
  .compute('ask', () => true, { confirm: { prompt: 'Go on?' }, when: (s) => s.input.id === 't1' })
  .tool('mark', mark, (ref) => ({ id: ref('save', 'id') }), { when: () => true })
  .output((s) => s.results.mark?.id);
const all = chain('rr_all', { input: z.object({ ids: z.array(z.string()) }), timeoutMs: 60_000 })
  .forEach('each', (ref) => ({ over: ref('input', 'ids'), chain: one, input: (item) => ({ id: item() }) }))
  .build();

const runners: Runner[] = [];
afterEach(async () => {
  for (const r of runners.splice(0)) await r.close();
});

function make(store: RunStore, now: () => number, calls: string[], hangAt?: string) {
  const invoker = functionInvoker([save, unsave, mark], {
    save: ({ id }, call) => (calls.push(`save:${call.idempotencyKey}`), { id }),
    unsave: ({ id }) => (calls.push(`unsave:${id}`), { ok: true }),
    mark: ({ id }, call) => {
      calls.push(`mark:${call.idempotencyKey}`);
      return id === hangAt ? new Promise<never>(() => {}) : { id };
    },
  });
  const runner = createRunner({ invoker, chains: [all], stores: { runs: store }, now, leaseMs: 1_000 });
  runners.push(runner);
  return runner;
}

async function parkedThenHung(runId: string) {
  let t = 1_000_000;
  const now = () => t;
  const store = memoryRunStore({ now });
  const calls: string[] = [];
  const dead = make(store, now, calls, 't2');
  const parked = await dead.run(all, { ids: ['t0', 't1', 't2'] }, { runId });
  if (parked.status !== 'awaiting_confirmation') throw new Error(parked.status);
  expect(parked.confirmation.step).toBe('each/1/ask');
  void dead.decide(runId, { approved: true, by: 'ops' });
  for (let i = 0; i < 200 && !calls.includes(`mark:${runId}:each/2/mark`); i++)
    await new Promise((r) => setTimeout(r, 5));
  expect(calls).toContain(`mark:${runId}:each/2/mark`);
  t += 5_000; // the owner is gone
  return { store, now, calls };
}

describe('recovery after an approved nested gate', () => {
  it('recovered: nothing asked again, every write once, the item in flight again under its key', async () => {
    const { store, now, calls } = await parkedThenHung('rr-1');
    const heir = make(store, now, calls);
    const [result] = await heir.recover();
    expect(result?.status === 'completed' && result.output).toEqual(['t0', 't1', 't2']);
    expect(calls).toEqual([
      'save:rr-1:each/0/save',
      'mark:rr-1:each/0/mark',
      'save:rr-1:each/1/save',
      'mark:rr-1:each/1/mark',
      'save:rr-1:each/2/save',
      'mark:rr-1:each/2/mark',
      'mark:rr-1:each/2/mark',
    ]);
  });

  it('cancelled while its owner is gone: every save (items 0–2) is undone once', async () => {
    const { store, now, calls } = await parkedThenHung('rr-2');
    const heir = make(store, now, calls);
    expect(await heir.cancel('rr-2')).toBe('cancelled');
    expect((await heir.getRun('rr-2'))?.status).toBe('failed');
    expect(calls.filter((c) => c.startsWith('unsave:')).sort()).toEqual(['unsave:t0', 'unsave:t1', 'unsave:t2']);
  });
});
