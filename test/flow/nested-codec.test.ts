// a gate inside a sub-chain whose checkpoint holds a value the codec refuses.
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  chain,
  createRunner,
  defineChain,
  defineTool,
  functionInvoker,
  memoryRunStore,
  ref,
  type Runner,
} from 'chainkit';
import { save, unsave } from './nested-tools.js';

const open: Runner[] = [];
afterEach(async () => {
  for (const r of open.splice(0)) await r.close();
});

describe('a nested gate whose checkpoint the codec refuses', () => {
  it('fails clearly, hands out no token, and undoes the items saved before', async () => {
    const calls: string[] = [];
    const invoker = functionInvoker([save, unsave], {
      save: ({ id }) => (calls.push(`save:${id}`), { id }),
      unsave: ({ id }) => (calls.push(`unsave:${id}`), { ok: true }),
    });
    const one = chain('rc_one', { input: z.object({ id: z.string() }) })
      .tool('save', save, (ref) => ({ id: ref('input', 'id') }), {
        compensate: { tool: unsave, input: { id: ref('save', 'id') } },
      })
      .compute('odd', () => new Map([['a', 1]]))
      .compute('ask', () => true, { confirm: { prompt: 'Go on?' }, when: (s) => s.input.id === 't1' })
      .output((s) => s.results.save.id);
    const all = chain('rc_all', { input: z.object({ ids: z.array(z.string()) }) })
      .forEach('each', (ref) => ({ over: ref('input', 'ids'), chain: one, input: (item) => ({ id: item() }) }))
      .build();
    const runner = createRunner({ invoker, chains: [all] });
    open.push(runner);
    const r = await runner.run(all, { ids: ['t0', 't1'] });
    expect(r.status).toBe('failed');
    expect('resumeToken' in r).toBe(false);
    if (r.status !== 'failed') return;
    expect(r.error.step).toBe('each/1/ask');
    expect(r.error.message).toMatch(/Map|keep|encode/i);
    // The saves before the refused gate: left done, or undone? A failed run undoes its completed steps.
    expect(calls.filter((c) => c.startsWith('unsave:')).sort()).toEqual(['unsave:t0', 'unsave:t1']);
  });
});

describe('baseline: a top-level gate whose checkpoint the codec refuses', () => {
  it('undoes the steps completed before', async () => {
    const calls: string[] = [];
    const invoker = functionInvoker([save, unsave], {
      save: ({ id }) => (calls.push(`save:${id}`), { id }),
      unsave: ({ id }) => (calls.push(`unsave:${id}`), { ok: true }),
    });
    const c = chain('rc_top', { input: z.object({ id: z.string() }) })
      .tool('save', save, (ref) => ({ id: ref('input', 'id') }), {
        compensate: { tool: unsave, input: { id: ref('save', 'id') } },
      })
      .compute('odd', () => new Map([['a', 1]]))
      .compute('ask', () => true, { confirm: { prompt: 'Go on?' }, when: () => true })
      .build();
    const runner = createRunner({ invoker, chains: [c] });
    open.push(runner);
    const r = await runner.run(c, { id: 'a' });
    expect(r.status).toBe('failed');
    expect(calls.filter((x) => x.startsWith('unsave:'))).toEqual(['unsave:a']);
  });
});

describe('a durable run with full traces whose sub-chain step returns a value the journal cannot encode', () => {
  it('ends failed in the store too (it stayed running, and every recover() ran it again)', async () => {
    let calls = 0;
    const charge = defineTool({
      name: 'charge',
      description: 'Charge',
      input: z.object({}),
      output: z.any(),
      effect: 'read',
      retry: false,
    });
    const invoker = functionInvoker({ charge: () => (calls++, { id: 'ch_1', format: () => 'ch_1' }) });
    const inner = defineChain({
      name: 'inner_charge',
      input: z.object({}),
      steps: [{ id: 'pay', tool: charge, input: {} }],
    });
    const top = defineChain({ name: 'top_charge', input: z.object({}), steps: [{ id: 's', chain: inner, input: {} }] });
    const runner = createRunner({
      invoker,
      tools: [charge],
      chains: [top],
      leaseMs: 200,
      traceDetail: 'full',
      stores: { runs: memoryRunStore() },
    });
    open.push(runner);
    const r = await runner.run(top, {}, { runId: 'codec-j1' });
    expect(r.status === 'failed' && r.error.code).toBe('checkpoint_unserializable');
    expect((await runner.getRun('codec-j1'))?.status).toBe('failed');
    await new Promise((resolve) => setTimeout(resolve, 300)); // past the lease
    expect(await runner.recover()).toEqual([]);
    expect(calls).toBe(1);
  });
});
