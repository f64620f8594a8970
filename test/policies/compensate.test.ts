import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, memoryIdempotencyStore, memoryRunStore, ref } from 'chainkit';
import { createMockInvoker } from 'chainkit/testing';
import { http } from '../helpers.js';
import { expectedAfterUndo, retriedAfterUndo, undoneMarkContract } from '../helpers/undone-retry.js';

const reserve = defineTool({
  name: 'reserve',
  description: 'r',
  input: z.object({ item: z.string() }),
  output: z.object({ id: z.string() }),
  effect: 'write',
});
const release = defineTool({
  name: 'release',
  description: 'r',
  input: z.object({ id: z.string() }),
  output: z.object({ ok: z.boolean() }),
  effect: 'write',
  retry: false,
});
const charge = defineTool({
  name: 'charge',
  description: 'c',
  input: z.object({ amount: z.number() }),
  output: z.object({ ok: z.boolean() }),
  effect: 'write',
  retry: false,
});

const order = defineChain({
  name: 'order',
  input: z.object({ a: z.string(), b: z.string() }),
  steps: [
    {
      id: 'first',
      tool: reserve,
      input: { item: ref('input', 'a') },
      compensate: { tool: release, input: { id: ref('first', 'id') } },
    },
    {
      id: 'second',
      tool: reserve,
      input: { item: ref('input', 'b') },
      compensate: { tool: release, input: { id: ref('second', 'id') } },
    },
    { id: 'pay', tool: charge, input: { amount: 10 } },
  ],
});

describe('compensation', () => {
  it('undoes completed steps in reverse order when a later step fails', async () => {
    const invoker = createMockInvoker({
      reserve: (i: { item: string }) => ({ id: `r-${i.item}` }),
      release: { ok: { ok: true } },
      charge: { error: http(402, 'card declined') },
    });
    const r = await createRunner({ invoker }).run(order, { a: 'x', b: 'y' }, { runId: 'o1' });
    expect(r.status === 'failed' && r.error).toMatchObject({ step: 'pay', tool: 'charge' });
    expect(r.status === 'failed' && r.compensated).toEqual(['second', 'first']);
    expect(invoker.callsTo('release').map((c) => c.input)).toEqual([{ id: 'r-y' }, { id: 'r-x' }]);
    expect(invoker.callsTo('release').map((c) => c.idempotencyKey)).toEqual([
      'o1:second:compensate',
      'o1:first:compensate',
    ]);
    expect(r.trace.steps.slice(-2).map((s) => [s.id, s.tool, s.status])).toEqual([
      ['second', 'release', 'compensated'],
      ['first', 'release', 'compensated'],
    ]);
  });

  it('reports a failing compensation and still runs the others', async () => {
    const invoker = createMockInvoker({
      reserve: (i: { item: string }) => ({ id: `r-${i.item}` }),
      release: (i: { id: string }) => {
        if (i.id === 'r-y') throw http(500, 'release broke');
        return { ok: true };
      },
      charge: { error: http(402) },
    });
    const r = await createRunner({
      invoker,
      retry: { internal: { retries: 0, minDelayMs: 0, factor: 1, maxDelayMs: 0 } },
    }).run(order, { a: 'x', b: 'y' });
    if (r.status !== 'failed') throw new Error(r.status);
    expect(r.compensated).toEqual(['first']);
    expect(r.compensationFailures).toMatchObject([
      { step: 'second', error: { category: 'internal', tool: 'release' } },
    ]);
    expect(r.trace.steps.find((s) => s.id === 'second' && s.status === 'error')).toBeDefined();
  });

  it('undoes completed steps when the chain’s `output` throws, in memory and in a durable run', async () => {
    const throws = defineChain({
      name: 'order_no_output',
      input: z.object({ a: z.string() }),
      steps: [
        {
          id: 'first',
          tool: reserve,
          input: { item: ref('input', 'a') },
          compensate: { tool: release, input: { id: ref('first', 'id') } },
        },
      ],
      output: () => {
        throw new Error('no output');
      },
    });
    for (const stores of [{}, { runs: memoryRunStore() }]) {
      const invoker = createMockInvoker({
        reserve: (i: { item: string }) => ({ id: `r-${i.item}` }),
        release: { ok: { ok: true } },
      });
      const r = await createRunner({ invoker, stores }).run(throws, { a: 'x' });
      expect(r.status === 'failed' && [r.error.code, r.compensated]).toEqual(['output_failed', ['first']]);
      expect(invoker.callsTo('release').map((c) => c.input)).toEqual([{ id: 'r-x' }]);
    }
  });

  it('does nothing when the run completes', async () => {
    const invoker = createMockInvoker({
      reserve: { ok: { id: 'r' } },
      release: { ok: { ok: true } },
      charge: { ok: { ok: true } },
    });
    const r = await createRunner({ invoker }).run(order, { a: 'x', b: 'y' });
    expect(r.status).toBe('completed');
    expect(invoker.callsTo('release')).toHaveLength(0);
  });

  it('does an undone write again when a failed run is retried under the same run id', async () => {
    let declines = 1;
    const invoker = createMockInvoker({
      reserve: (i: { item: string }) => ({ id: `r-${i.item}` }),
      release: { ok: { ok: true } },
      charge: () => {
        if (declines-- > 0) throw http(402, 'card declined');
        return { ok: true };
      },
    });
    const runner = createRunner({ invoker });
    const first = await runner.run(order, { a: 'x', b: 'y' }, { runId: 'o2' });
    expect(first.status === 'failed' && first.compensated).toEqual(['second', 'first']);
    // The retry must reserve again: what the first run reserved was released.
    const retried = await runner.run(order, { a: 'x', b: 'y' }, { runId: 'o2' });
    expect(retried.status).toBe('completed');
    expect(invoker.callsTo('reserve').map((c) => c.idempotencyKey)).toEqual([
      'o2:first',
      'o2:second',
      'o2:first#1',
      'o2:second#1',
    ]);
    // A repeat of the completed retry is answered from the store: nothing is reserved a third time.
    const repeat = await runner.run(order, { a: 'x', b: 'y' }, { runId: 'o2' });
    expect(repeat.status).toBe('completed');
    expect(invoker.callsTo('reserve')).toHaveLength(4);
    expect(invoker.callsTo('release')).toHaveLength(2);
  });

  it('undoes a write done again after an undo, under a key of its own', async () => {
    const invoker = createMockInvoker({
      reserve: (i: { item: string }) => ({ id: `r-${i.item}` }),
      release: { ok: { ok: true } },
      charge: { error: http(402, 'card declined') },
    });
    const runner = createRunner({ invoker });
    for (let i = 0; i < 3; i++) {
      const r = await runner.run(order, { a: 'x', b: 'y' }, { runId: 'o3' });
      expect(r.status === 'failed' && r.compensated).toEqual(['second', 'first']);
    }
    expect(invoker.callsTo('reserve')).toHaveLength(6);
    expect(invoker.callsTo('release').map((c) => c.idempotencyKey)).toEqual([
      'o3:second:compensate',
      'o3:first:compensate',
      'o3:second:compensate#1',
      'o3:first:compensate#1',
      'o3:second:compensate#2',
      'o3:first:compensate#2',
    ]);
  });

  it('memoryIdempotencyStore keeps an undone mark in place of the result, and only over one', async () => {
    await undoneMarkContract(memoryIdempotencyStore(), 'm');
  });

  it('replicas sharing one store: a retry reserves again, and its undo has a key of its own', async () => {
    const shared = memoryIdempotencyStore();
    expect(await retriedAfterUndo(() => shared, 'm1')).toEqual(expectedAfterUndo('m1'));
  });

  it('a duplicate run undoing the same writes after the first did is answered by it: released once', async () => {
    let charges = 0;
    const invoker = createMockInvoker({
      reserve: (i: { item: string }) => ({ id: `r-${i.item}` }),
      release: { ok: { ok: true } },
      // The duplicate's charge is declined once the first run has undone its writes.
      charge: async () => {
        if (charges++ > 0) await new Promise((r) => setTimeout(r, 30));
        throw http(402);
      },
    });
    const runner = createRunner({ invoker });
    const [first, duplicate] = await Promise.all([
      runner.run(order, { a: 'x', b: 'y' }, { runId: 'o4' }),
      runner.run(order, { a: 'x', b: 'y' }, { runId: 'o4' }),
    ]);
    expect(first.status === 'failed' && first.compensated).toEqual(['second', 'first']);
    expect(duplicate.status === 'failed' && duplicate.compensated).toEqual(['second', 'first']);
    expect(invoker.callsTo('reserve')).toHaveLength(2);
    expect(invoker.callsTo('release').map((c) => c.input)).toEqual([{ id: 'r-y' }, { id: 'r-x' }]);
  });

  it('a write done before a gate, undone after it, is taken back under the generation it ran under', async () => {
    const gated = defineChain({
      name: 'gated_order',
      input: z.object({ a: z.string(), b: z.string() }),
      steps: order.steps.map((s) => (s.id === 'pay' ? { ...s, confirm: { prompt: 'Pay?' } } : s)),
    });
    let declines = 2;
    const invoker = createMockInvoker({
      reserve: (i: { item: string }) => ({ id: `r-${i.item}` }),
      release: { ok: { ok: true } },
      charge: () => {
        if (declines-- > 0) throw http(402);
        return { ok: true };
      },
    });
    const runner = createRunner({ invoker, secret: 'a-secret-of-at-least-32-characters!!' });
    const statuses: string[] = [];
    for (let i = 0; i < 3; i++) {
      const gate = await runner.run(gated, { a: 'x', b: 'y' }, { runId: 'o5' });
      if (gate.status !== 'awaiting_confirmation') throw new Error(gate.status);
      statuses.push((await runner.resume(gate.resumeToken, { approved: true })).status);
    }
    expect(statuses).toEqual(['failed', 'failed', 'completed']);
    expect(invoker.callsTo('reserve').map((c) => c.idempotencyKey)).toEqual([
      'o5:first',
      'o5:second',
      'o5:first#1',
      'o5:second#1',
      'o5:first#2',
      'o5:second#2',
    ]);
    expect(invoker.callsTo('release').map((c) => c.idempotencyKey)).toEqual([
      'o5:second:compensate',
      'o5:first:compensate',
      'o5:second:compensate#1',
      'o5:first:compensate#1',
    ]);
  });
});
