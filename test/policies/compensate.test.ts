import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, memoryIdempotencyStore, ref } from 'chainkit';
import type { IdempotencyStore } from 'chainkit/stores';
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

describe('compensation and a retried request (the same run id, no run store)', () => {
  it('refuses the undone write (write_undone) instead of answering that it is done: no false success', async () => {
    let declined = true;
    const invoker = createMockInvoker({
      reserve: (i: { item: string }) => ({ id: `r-${i.item}` }),
      release: { ok: { ok: true } },
      charge: () => {
        if (declined) throw http(402, 'card declined');
        return { ok: true };
      },
    });
    const runner = createRunner({ invoker });
    const first = await runner.run(order, { a: 'x', b: 'y' }, { runId: 'o2' });
    expect(first.status === 'failed' && first.compensated).toEqual(['second', 'first']);
    declined = false; // the card works now, and the client retries the same request
    const again = await runner.run(order, { a: 'x', b: 'y' }, { runId: 'o2' });
    // Both holds were released: answered from the store, the retry would have completed holding nothing.
    expect(again.status === 'failed' && again.error).toMatchObject({
      category: 'conflict',
      code: 'write_undone',
      step: 'first',
    });
    expect(invoker.callsTo('reserve')).toHaveLength(2);
    expect(invoker.callsTo('release')).toHaveLength(2);
    // A new run id is a new request: it holds and charges.
    expect((await runner.run(order, { a: 'x', b: 'y' }, { runId: 'o3' })).status).toBe('completed');
    await runner.close();
  });

  it('two requests with one run id in flight at once: the hold they share is released once', async () => {
    const calls: string[] = [];
    const gates: (() => void)[] = [];
    let n = 0;
    const invoker = createMockInvoker({
      reserve: () => (calls.push('reserve'), { id: `r${++n}` }),
      release: (i: { id: string }) => (calls.push(`release ${i.id}`), { ok: true }),
      check: () => new Promise((_, reject) => gates.push(() => reject(http(422, 'out of stock')))),
    });
    const check = defineTool({
      name: 'check',
      description: 'c',
      input: z.object({}),
      output: z.object({ ok: z.boolean() }),
      effect: 'read',
      retry: false,
    });
    const runner = createRunner({ invoker });
    const dup = defineChain({
      name: 'dup_order',
      input: z.object({}),
      steps: [
        {
          id: 'first',
          tool: reserve,
          input: { item: 'x' },
          compensate: { tool: release, input: { id: ref('first', 'id') } },
        },
        { id: 'check', tool: check, input: () => ({}) },
      ],
    });
    const first = runner.run(dup, {}, { runId: 'dup-1' });
    while (gates.length < 1) await new Promise((r) => setTimeout(r, 1));
    const second = runner.run(dup, {}, { runId: 'dup-1' }); // the client retried while the first was in flight
    while (gates.length < 2) await new Promise((r) => setTimeout(r, 1));
    gates[0]!();
    expect((await first).status).toBe('failed');
    gates[1]!();
    expect((await second).status).toBe('failed');
    expect(calls).toEqual(['reserve', 'release r1']);
    await runner.close();
  });

  it('a store that falls silent when the undone write is marked: the run still ends, the undo stands', async () => {
    vi.useFakeTimers();
    try {
      const kept = memoryIdempotencyStore();
      const silent: IdempotencyStore = {
        begin: (...a) => kept.begin(...a),
        // The mark of an undone write never answers (Redis or PostgreSQL gone quiet); every other write does.
        complete: (key, value, ttl) =>
          JSON.stringify(value).includes('undone') ? new Promise<void>(() => {}) : kept.complete(key, value, ttl),
        fail: (...a) => kept.fail(...a),
      };
      const invoker = createMockInvoker({
        reserve: { ok: { id: 'r1' } },
        release: { ok: { ok: true } },
        charge: { error: http(402) },
      });
      const runner = createRunner({ invoker, stores: { idempotency: silent } });
      let outcome: unknown;
      void runner.run(order, { a: 'x', b: 'y' }).then((r) => (outcome = r));
      await vi.advanceTimersByTimeAsync(25_000); // each mark gives up after 10 s
      expect(outcome).toMatchObject({ status: 'failed', compensated: ['second', 'first'] });
      await runner.close();
    } finally {
      vi.useRealTimers();
    }
  });
});
