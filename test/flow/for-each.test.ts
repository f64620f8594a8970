// §12 forEach: a chain per element, at most `concurrency` at once, items nested in traces and events.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  chain,
  createRunner,
  defineChain,
  defineTool,
  DefinitionError,
  functionInvoker,
  ref,
  runChain,
  type ItemEndEvent,
} from 'chainkit';
import { createMockInvoker } from 'chainkit/testing';
import { count, echo } from '../helpers.js';

const mark = defineTool({
  name: 'mark',
  description: 'Mark an item',
  input: z.object({ id: z.string() }),
  output: z.object({ id: z.string(), marked: z.boolean() }),
});
const markOne = chain('mark_one', { input: z.object({ id: z.string() }) })
  .tool('mark', mark, (ref) => ({ id: ref('input', 'id') }))
  .output((s) => s.results.mark.id);
const list = defineTool({
  name: 'list',
  description: 'List ids',
  input: z.object({ n: z.number() }),
  output: z.object({ items: z.array(z.object({ id: z.string() })) }),
  effect: 'read',
});
const listImpl = ({ n }: { n: number }) => ({ items: Array.from({ length: n }, (_, i) => ({ id: `t${i}` })) });

/** A `mark` that takes `ms` unless its call is aborted (then it rejects with the reason); the ids it started. */
function slowMarks(ms: number) {
  const started: string[] = [];
  const invoker = functionInvoker({
    list: listImpl,
    mark: async ({ id }: { id: string }, call: { signal: AbortSignal }) => {
      started.push(id);
      await new Promise((resolve, reject) => {
        const t = setTimeout(resolve, ms);
        call.signal.addEventListener('abort', () => (clearTimeout(t), reject(call.signal.reason)));
      });
      return { id, marked: true };
    },
  });
  return { started, invoker };
}

describe('forEach step', () => {
  it('never has more than `concurrency` items in flight (1,000 items at 8), and keeps the order of results', async () => {
    let inFlight = 0;
    let peak = 0;
    const invoker = functionInvoker({
      list: listImpl,
      mark: async ({ id }: { id: string }) => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        await new Promise((r) => setImmediate(r));
        inFlight--;
        return { id, marked: true };
      },
    });
    const c = chain('all', { input: z.object({ n: z.number() }) })
      .tool('find', list, (ref) => ({ n: ref('input', 'n') }))
      .forEach('done', (ref) => ({
        over: ref('find', 'items'),
        chain: markOne,
        input: (item) => ({ id: item('id') }),
        concurrency: 8,
      }))
      .output((s) => s.results.done);
    const r = await runChain(c, { n: 1000 }, { invoker });
    expect(r.status).toBe('completed');
    const out = r.status === 'completed' ? r.output : [];
    expect(out).toHaveLength(1000);
    expect(out[0]).toBe('t0');
    expect(out[999]).toBe('t999');
    expect(peak).toBe(8);
  });

  it('runs one item at a time by default', async () => {
    let inFlight = 0;
    let peak = 0;
    const invoker = functionInvoker({
      list: listImpl,
      mark: async ({ id }: { id: string }) => {
        peak = Math.max(peak, ++inFlight);
        await new Promise((r) => setImmediate(r));
        inFlight--;
        return { id, marked: true };
      },
    });
    const c = defineChain({
      name: 'seq',
      input: z.object({}),
      steps: [
        { id: 'find', tool: list, input: { n: 5 } },
        { id: 'done', forEach: { over: ref('find', 'items'), chain: markOne, input: { id: ref('item', 'id') } } },
      ],
    });
    const r = await runChain(c, {}, { invoker });
    expect(r.status === 'completed' && r.output).toEqual(['t0', 't1', 't2', 't3', 't4']);
    expect(peak).toBe(1);
  });

  it("onItemError 'collect' runs every item and yields { ok, value } | { ok: false, error }", async () => {
    const invoker = functionInvoker({
      list: listImpl,
      mark: ({ id }: { id: string }) => {
        if (id === 't1') throw Object.assign(new Error('no such task'), { status: 404 });
        return { id, marked: true };
      },
    });
    const c = chain('collect', { input: z.object({}) })
      .tool('find', list, () => ({ n: 3 }))
      .forEach('done', (ref) => ({
        over: ref('find', 'items'),
        chain: markOne,
        input: (item) => ({ id: item('id') }),
        onItemError: 'collect',
        concurrency: 2,
      }))
      .build();
    const r = await runChain(c, {}, { invoker });
    expect(r.status).toBe('completed');
    const out = r.status === 'completed' ? r.output : [];
    expect(out[0]).toEqual({ ok: true, value: 't0' });
    expect(out[1]).toMatchObject({ ok: false, error: { category: 'not_found', step: 'done/1/mark' } });
    expect(out[2]).toEqual({ ok: true, value: 't2' });
  });

  it("onItemError 'fail' (default) stops at the first failed item and fails the step with it", async () => {
    const invoker = functionInvoker({
      list: listImpl,
      mark: ({ id }: { id: string }) => {
        if (id === 't3') throw Object.assign(new Error('forbidden'), { status: 403 });
        return { id, marked: true };
      },
    });
    const c = chain('fail', { input: z.object({}) })
      .tool('find', list, () => ({ n: 50 }))
      .forEach('done', (ref) => ({
        over: ref('find', 'items'),
        chain: markOne,
        input: (item) => ({ id: item('id') }),
        concurrency: 2,
      }))
      .build();
    const calls: string[] = [];
    const counted = functionInvoker({
      list: listImpl,
      mark: (input: { id: string }, call) => (
        calls.push(input.id),
        (invoker as never as (c: unknown) => unknown)({ ...call, tool: 'mark', input })
      ),
    });
    const r = await runChain(c, {}, { invoker: counted as never });
    expect(r.status === 'failed' && r.error).toMatchObject({ category: 'permission_denied', step: 'done/3/mark' });
    expect(calls.length).toBeLessThan(10);
    const entry = r.trace.steps.find((t) => t.id === 'done')!;
    expect(entry.status).toBe('error');
    expect(entry.children!.find((t) => t.id === 'done/3')).toMatchObject({
      status: 'error',
      children: [expect.objectContaining({ id: 'done/3/mark', status: 'error' })],
    });
  });

  it('emits item:end per item and nests items (and their steps) in the trace; keys carry the item index', async () => {
    const invoker = createMockInvoker({
      list: { ok: listImpl({ n: 3 }) },
      mark: (input: { id: string }) => ({ id: input.id, marked: true }),
    });
    const runner = createRunner({ invoker });
    const ends: ItemEndEvent[] = [];
    runner.events.on('item:end', (e) => ends.push(e));
    const c = chain('events', { input: z.object({}) })
      .tool('find', list, () => ({ n: 3 }))
      .forEach('done', (ref) => ({ over: ref('find', 'items'), chain: markOne, input: (item) => ({ id: item('id') }) }))
      .build();
    const r = await runner.run(c, {});
    expect(ends.map((e) => [e.step, e.index, e.status])).toEqual([
      ['done', 0, 'success'],
      ['done', 1, 'success'],
      ['done', 2, 'success'],
    ]);
    const done = r.trace.steps[1]!;
    expect(done.children!.map((t) => t.id)).toEqual(['done/0', 'done/1', 'done/2']);
    expect(done.children![2]!.children!.map((t) => t.id)).toEqual(['done/2/mark']);
    expect(invoker.callsTo('mark').map((call) => call.idempotencyKey)).toEqual([
      `${r.runId}:done/0/mark`,
      `${r.runId}:done/1/mark`,
      `${r.runId}:done/2/mark`,
    ]);
    await runner.close();
  });

  it("respects the tool's per-user rate limit across items in flight", async () => {
    const limited = defineTool({
      name: 'mark_limited',
      description: 'Mark',
      input: z.object({ id: z.string() }),
      output: z.object({ id: z.string() }),
      effect: 'read',
      rateLimit: { limit: 4, intervalMs: 100, per: 'user' },
    });
    const one = chain('mark_limited_one', {
      input: z.object({ id: z.string() }),
      context: z.object({ userId: z.string() }),
    })
      .tool('mark', limited, (ref) => ({ id: ref('input', 'id') }))
      .build();
    const at: number[] = [];
    const invoker = functionInvoker([list, limited], {
      list: listImpl,
      mark_limited: ({ id }) => (at.push(performance.now()), { id }),
    });
    const c = chain('limited', { input: z.object({}), context: z.object({ userId: z.string() }) })
      .tool('find', list, () => ({ n: 12 }))
      .forEach('done', (ref) => ({
        over: ref('find', 'items'),
        chain: one,
        input: (item) => ({ id: item('id') }),
        concurrency: 8,
      }))
      .build();
    const r = await runChain(c, {}, { invoker, context: { userId: 'u1' } });
    expect(r.status).toBe('completed');
    expect(at).toHaveLength(12);
    // No window of 100 ms holds more than 4 calls: the 5th call after any call comes ~100 ms later.
    // Measured at the tool, after the limiter let the call go: a loaded machine may delay one call by a
    // few ms after its turn (seen: 80 ms between the 1st and 5th), so the bound leaves it 25 ms; without
    // the limit all 12 calls come within a few ms.
    for (let i = 0; i + 4 < at.length; i++) expect(at[i + 4]! - at[i]!).toBeGreaterThanOrEqual(75);
    expect(at[8]! - at[0]!).toBeGreaterThanOrEqual(175); // three windows for 12 calls
  });

  it('an item whose input cannot be built fails that item (collected), the others run', async () => {
    const invoker = createMockInvoker({
      list: { ok: listImpl({ n: 3 }) },
      mark: (input: { id: string }) => ({ id: input.id, marked: true }),
    });
    const c = defineChain({
      name: 'bad_input',
      input: z.object({}),
      steps: [
        { id: 'find', tool: list, input: { n: 3 } },
        {
          id: 'done',
          forEach: {
            over: ref('find', 'items'),
            chain: markOne,
            onItemError: 'collect',
            input: (item: { id: string }) => {
              if (item.id === 't1') throw new Error('no');
              return { id: item.id };
            },
          },
        },
      ],
    });
    const r = await runChain(c, {}, { invoker });
    expect(r.status === 'completed' && r.output).toEqual([
      { ok: true, value: 't0' },
      { ok: false, error: expect.objectContaining({ code: 'input_failed', step: 'done/1' }) },
      { ok: true, value: 't2' },
    ]);
  });

  it("keeps the run's one deadline: items still to run when it passes are not started", async () => {
    const { started, invoker } = slowMarks(40);
    const c = chain('slow', { input: z.object({}), timeoutMs: 100 })
      .tool('find', list, () => ({ n: 10 }))
      .forEach('done', (ref) => ({ over: ref('find', 'items'), chain: markOne, input: (item) => ({ id: item('id') }) }))
      .build();
    const r = await runChain(c, {}, { invoker });
    expect(r.status === 'failed' && r.error.category).toBe('timeout');
    expect(started.length).toBeLessThan(5);
  });

  it("onItemError 'collect' keeps the run's deadline too: the run fails deadline_exceeded, no later step or item runs", async () => {
    const { started, invoker } = slowMarks(1_000);
    let after = 0;
    const c = chain('slow_collect', { input: z.object({}), timeoutMs: 100 })
      .tool('find', list, () => ({ n: 4 }))
      .forEach('done', (ref) => ({
        over: ref('find', 'items'),
        chain: markOne,
        input: (item) => ({ id: item('id') }),
        concurrency: 2,
        onItemError: 'collect',
      }))
      .compute('after', () => ++after)
      .build();
    const r = await runChain(c, {}, { invoker });
    expect(r.status === 'failed' && [r.error.category, r.error.code]).toEqual(['timeout', 'deadline_exceeded']);
    expect(started).toEqual(['t0', 't1']); // items 2 and 3 were started after the deadline before
    expect(after).toBe(0);
  });

  it("onItemError 'collect' with 5,000 items whose input cannot be built: all collected (it overflowed the stack)", async () => {
    const invoker = createMockInvoker({
      list: { ok: listImpl({ n: 5_000 }) },
      mark: { ok: { id: 'x', marked: true } },
    });
    const c = defineChain({
      name: 'all_bad',
      input: z.object({}),
      steps: [
        { id: 'find', tool: list, input: { n: 5_000 } },
        {
          id: 'done',
          forEach: {
            over: ref('find', 'items'),
            chain: markOne,
            onItemError: 'collect',
            input: (): { id: string } => {
              throw new Error('no');
            },
          },
        },
      ],
    });
    const r = await runChain(c, {}, { invoker });
    expect(r.status === 'completed' && r.output.length).toBe(5_000);
    expect(r.status === 'completed' && r.output.every((e) => !e.ok)).toBe(true);
  });

  it('an empty array yields an empty result without running the chain', async () => {
    const invoker = createMockInvoker({ list: { ok: { items: [] } }, mark: { ok: { id: 'x', marked: true } } });
    const c = chain('empty', { input: z.object({}) })
      .tool('find', list, () => ({ n: 0 }))
      .forEach('done', (ref) => ({ over: ref('find', 'items'), chain: markOne, input: (item) => ({ id: item('id') }) }))
      .build();
    const r = await runChain(c, {}, { invoker });
    expect(r.status === 'completed' && r.output).toEqual([]);
  });

  it('a function input gets (item, scope)', async () => {
    const invoker = createMockInvoker({
      list: { ok: listImpl({ n: 2 }) },
      mark: (input: { id: string }) => ({ id: input.id, marked: true }),
    });
    const c = defineChain({
      name: 'fn',
      input: z.object({ prefix: z.string() }),
      steps: [
        { id: 'find', tool: list, input: { n: 2 } },
        {
          id: 'done',
          forEach: {
            over: ref('find', 'items'),
            chain: markOne,
            input: (item: { id: string }, s) => ({ id: `${s.input.prefix}${item.id}` }),
          },
        },
      ],
    });
    const r = await runChain(c, { prefix: 'x-' }, { invoker });
    expect(r.status === 'completed' && r.output).toEqual(['x-t0', 'x-t1']);
  });

  it('runner.close() aborts the tool calls of the items in flight (a sub-chain run is aborted through its step)', async () => {
    const aborted: string[] = [];
    let started = 0;
    let allStarted!: () => void;
    const ready = new Promise<void>((r) => (allStarted = r));
    const invoker = functionInvoker({
      list: listImpl,
      mark: ({ id }: { id: string }, call: { signal: AbortSignal }) =>
        new Promise((_, reject) => {
          call.signal.addEventListener('abort', () => (aborted.push(id), reject(call.signal.reason)));
          if (++started === 3) allStarted();
        }),
    });
    const runner = createRunner({ invoker });
    const c = chain('closing', { input: z.object({}) })
      .tool('find', list, () => ({ n: 10 }))
      .forEach('done', (ref) => ({
        over: ref('find', 'items'),
        chain: markOne,
        input: (item) => ({ id: item('id') }),
        concurrency: 3,
      }))
      .build();
    const pending = runner.run(c, {});
    await ready;
    await runner.close();
    const r = await pending;
    expect(aborted.sort()).toEqual(['t0', 't1', 't2']);
    expect(r.status).toBe('failed');
    expect(started).toBe(3);
  });

  it('refuses statically: item paths missing from the element, ref(item) outside forEach, over not an array, bad options', () => {
    let error: DefinitionError | undefined;
    try {
      defineChain({
        name: 'bad',
        input: z.object({}),
        steps: [
          { id: 'find', tool: list, input: { n: 1 } },
          // @ts-expect-error — the compiler reports the item path too (issue 23)
          { id: 'a', forEach: { over: ref('find', 'items'), chain: markOne, input: { id: ref('item', 'idd') } } },
          {
            id: 'b',
            forEach: {
              over: ref('find', 'items.0'),
              chain: markOne,
              input: { id: ref('item', 'id') },
              concurrency: 0,
              onItemError: 'ignore' as never,
            },
          },
          { id: 'c', tool: echo, input: { value: ref('item', 'id') } },
          { id: 'd', forEach: { over: ref('find', 'items'), chain: markOne, input: { id: ref('item') } } },
          { id: 'e', tool: count, input: {} },
        ],
      });
    } catch (e) {
      error = e as DefinitionError;
    }
    expect(error).toBeInstanceOf(DefinitionError);
    expect(error!.issues).toEqual(
      expect.arrayContaining([
        {
          path: 'steps[1].forEach.input.id',
          message: expect.stringContaining("path 'idd' does not exist in the forEach item"),
        },
        { path: 'steps[2].forEach.over', message: 'ref find.items[0] is a object, not an array.' },
        { path: 'steps[2].forEach.concurrency', message: expect.stringContaining('positive integer') },
        { path: 'steps[2].forEach.onItemError', message: expect.stringContaining("'fail' or 'collect'") },
        { path: 'steps[3].input.value', message: "ref to unknown step 'item'." },
        { path: 'steps[4].forEach.input.id', message: expect.stringContaining('is a object but') },
      ]),
    );
  });
});
