import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, ref } from 'chainkit';
import { createMockInvoker } from 'chainkit/testing';
import { http } from '../helpers.js';

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
});
