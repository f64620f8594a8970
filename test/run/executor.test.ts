import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, ref, runChain, functionInvoker, type ToolCall } from 'chainkit';
import { createMockInvoker } from 'chainkit/testing';
import { count, echo, USER } from '../helpers.js';

const slow = defineTool({
  name: 'slow',
  description: 's',
  input: z.object({ tag: z.string() }),
  output: z.object({ tag: z.string() }),
  effect: 'read',
  timeoutMs: 5000,
});

describe('executor: data flow and validation', () => {
  it('maps outputs into inputs through refs, nested objects and functions', async () => {
    const nested = defineTool({
      name: 'nested',
      description: 'n',
      input: z.object({ who: z.object({ id: z.string(), label: z.string() }), tags: z.array(z.string()) }),
      output: z.object({ done: z.boolean() }),
      effect: 'read',
    });
    const invoker = createMockInvoker({
      count: {
        ok: {
          n: 2,
          items: [
            { id: 'a', label: 'Alpha' },
            { id: 'b', label: 'Beta' },
          ],
        },
      },
      echo: (input: { value: string }) => ({ value: input.value.toUpperCase() }),
      nested: { ok: { done: true } },
    });
    const chain = defineChain({
      name: 'flow',
      input: z.object({ match: z.string() }),
      context: z.object({ userId: z.string() }),
      steps: [
        { id: 'c', tool: count, input: {} },
        {
          id: 'pick',
          select: { from: ref('c', 'items'), where: { label: { contains: ref('input', 'match') } }, expect: 'one' },
        },
        { id: 'shout', tool: echo, input: (s) => ({ value: `${s.context.userId}:${s.results.pick.label}` }) },
        {
          id: 'n',
          tool: nested,
          input: { who: { id: ref('pick', 'id'), label: 'fixed' }, tags: [ref('shout', 'value'), 'x'] },
        },
      ],
      output: (s) => ({ shout: s.results.shout.value as string, id: s.results.pick.id as string }),
    });
    const r = await runChain(chain, { match: 'bet' }, { invoker, context: { userId: 'u1' } });
    expect(r.status === 'completed' && r.output).toEqual({ shout: 'U1:BETA', id: 'b' });
    expect(invoker.callsTo('nested')[0]!.input).toEqual({ who: { id: 'b', label: 'fixed' }, tags: ['U1:BETA', 'x'] });
  });

  it('rejects chain input of the wrong shape without calling any tool', async () => {
    const invoker = createMockInvoker({ echo: { ok: { value: 'x' } } });
    const chain = defineChain({
      name: 'c',
      input: z.object({ value: z.string().min(2) }),
      steps: [{ id: 'e', tool: echo, input: { value: ref('input', 'value') } }],
    });
    const r = await runChain(chain, { value: 5 } as never, { invoker });
    expect(r.status === 'failed' && r.error).toMatchObject({
      category: 'invalid_input',
      code: 'invalid_input',
      message: expect.stringContaining("at 'value'"),
    });
    expect(r.status === 'failed' && (r.error as unknown as { issues: unknown[] }).issues).toHaveLength(1);
    expect(invoker.calls).toHaveLength(0);
  });

  it('rejects a context that fails the context schema (invalid_context)', async () => {
    const invoker = createMockInvoker({ echo: { ok: { value: 'x' } } });
    const chain = defineChain({
      name: 'c',
      input: z.object({}),
      context: z.object({ userId: z.uuid() }),
      steps: [{ id: 'e', tool: echo, input: { value: ref('context', 'userId') } }],
    });
    const r = await runChain(chain, {}, { invoker, context: { userId: 'not-a-uuid' } });
    expect(r.status === 'failed' && r.error).toMatchObject({ category: 'invalid_input', code: 'invalid_context' });
    expect(invoker.calls).toHaveLength(0);
  });

  it('fails a precondition with its message as the user message, before any tool call', async () => {
    const invoker = createMockInvoker({ echo: { ok: { value: 'x' } } });
    const chain = defineChain({
      name: 'c',
      input: z.object({ q: z.string() }),
      steps: [{ id: 'e', tool: echo, input: { value: ref('input', 'q') } }],
      preconditions: [{ check: (s) => s.input.q.trim() !== '', message: 'What should I echo?' }],
    });
    const r = await runChain(chain, { q: '  ' }, { invoker });
    expect(r.status === 'failed' && r.error).toMatchObject({
      category: 'invalid_input',
      code: 'precondition_failed',
      userMessage: 'What should I echo?',
    });
    expect(invoker.calls).toHaveLength(0);
  });

  it('fails with validation naming the path when a tool returns garbage', async () => {
    const invoker = createMockInvoker({ count: { ok: { n: 'three', items: [] } } });
    const chain = defineChain({ name: 'c', input: z.object({}), steps: [{ id: 'c', tool: count, input: {} }] });
    const r = await runChain(chain, {}, { invoker });
    expect(r.status === 'failed' && r.error).toMatchObject({
      category: 'validation',
      code: 'invalid_output',
      step: 'c',
      tool: 'count',
      attempts: 1,
      message: expect.stringContaining("at 'n'"),
    });
  });

  it('fails with validation when a resolved step input does not match the tool schema', async () => {
    const invoker = createMockInvoker({ count: { ok: { n: 0, items: [] } }, echo: { ok: { value: 'x' } } });
    const chain = defineChain({
      name: 'c',
      input: z.object({}),
      steps: [
        { id: 'c', tool: count, input: {} },
        { id: 'e', tool: echo, input: (s) => ({ value: s.results.c.n }) },
      ],
    });
    const r = await runChain(chain, {}, { invoker });
    expect(r.status === 'failed' && r.error).toMatchObject({
      category: 'validation',
      code: 'invalid_step_input',
      step: 'e',
      message: expect.stringContaining("at 'value'"),
    });
    expect(r.status === 'failed' && r.completed).toEqual({ c: { n: 0, items: [] } });
    expect(invoker.callsTo('echo')).toHaveLength(0);
  });

  it.each([
    ['a string', 'permission denied for row', 'permission_denied'],
    ['undefined', undefined, 'unknown'],
    ['an object', { code: 'database_error' }, 'internal'],
    ['an in-band error result', null, 'not_found'],
  ])('turns a tool that throws %s into a classified failure', async (_, thrown, category) => {
    const invoker =
      thrown === null
        ? createMockInvoker({ echo: { ok: { status: 'error', error: 'record_not_found', message: 'gone' } } })
        : createMockInvoker({
            echo: () => {
              throw thrown;
            },
          });
    const chain = defineChain({
      name: 'c',
      input: z.object({}),
      steps: [{ id: 'e', tool: echo, input: { value: 'v' } }],
    });
    const r = await runChain(
      chain,
      {},
      { invoker, random: () => 0, retry: { internal: { retries: 0, minDelayMs: 0, factor: 1, maxDelayMs: 0 } } },
    );
    expect(r.status === 'failed' && r.error.category).toBe(category);
    expect(r.status === 'failed' && r.error.userMessage).toBeTruthy();
    expect(r.status === 'failed' && r.error.message).not.toMatch(/\n\s+at /); // no stack traces
  });

  it('selects: not_found with no match, ambiguous with candidates, first and all', async () => {
    const items = [
      { id: 'a', label: 'Buy milk' },
      { id: 'b', label: 'Buy bread' },
      { id: 'c', label: 'Call mom' },
    ];
    const invoker = createMockInvoker({ count: { ok: { n: 3, items } } });
    const mk = (expect: 'one' | 'first' | 'all', match: string) =>
      defineChain({
        name: `sel_${expect}`,
        input: z.object({}),
        steps: [
          { id: 'c', tool: count, input: {} },
          { id: 's', select: { from: ref('c', 'items'), where: { label: { contains: match } }, expect } },
        ],
      });
    const runner = createRunner({ invoker });
    const none = await runner.run(mk('one', 'walk'), {});
    expect(none.status === 'failed' && none.error).toMatchObject({
      category: 'not_found',
      code: 'no_match',
      step: 's',
    });
    const amb = await runner.run(mk('one', 'BUY'), {});
    expect(amb.status === 'failed' && amb.error).toMatchObject({
      category: 'ambiguous',
      candidates: [items[0], items[1]],
    });
    expect(amb.status === 'failed' && amb.error.userMessage).toMatch(/2 items match/);
    const first = await runner.run(mk('first', 'buy'), {});
    expect(first.status === 'completed' && first.output).toEqual(items[0]);
    const all = await runner.run(mk('all', 'buy'), {});
    expect(all.status === 'completed' && all.output).toEqual([items[0], items[1]]);
    const byFn = defineChain({
      name: 'fn',
      input: z.object({}),
      steps: [
        { id: 'c', tool: count, input: {} },
        { id: 's', select: { from: ref('c', 'items'), where: (i) => i.id === 'c', expect: 'one' } },
      ],
    });
    const r = await runner.run(byFn, {});
    expect(r.status === 'completed' && r.output).toEqual(items[2]);
    const inMatch = defineChain({
      name: 'in',
      input: z.object({ ids: z.array(z.string()) }),
      steps: [
        { id: 'c', tool: count, input: {} },
        { id: 's', select: { from: ref('c', 'items'), where: { id: { in: ref('input', 'ids') } }, expect: 'all' } },
      ],
    });
    const r2 = await runner.run(inMatch, { ids: ['a', 'c'] });
    expect(r2.status === 'completed' && r2.output).toEqual([items[0], items[2]]);
  });

  it('skips steps whose `when` is false', async () => {
    const invoker = createMockInvoker({ echo: (i: { value: string }) => i });
    const chain = defineChain({
      name: 'w',
      input: z.object({ loud: z.boolean() }),
      steps: [
        { id: 'quiet', tool: echo, input: { value: 'q' }, when: (s) => !s.input.loud },
        { id: 'loud', tool: echo, input: { value: 'L' }, when: (s) => s.input.loud },
      ],
      output: (s) => Object.keys(s.results),
    });
    const r = await runChain(chain, { loud: true }, { invoker });
    expect(r.status === 'completed' && r.output).toEqual(['loud']);
    expect(r.trace.steps.map((s) => [s.id, s.status])).toEqual([
      ['quiet', 'skipped'],
      ['loud', 'success'],
    ]);
    expect(invoker.calls.map((c) => c.input)).toEqual([{ value: 'L' }]);
  });
});

describe('executor: concurrency, deadlines, cancellation', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const parallel = (timeoutMs = 10_000) =>
    defineChain({
      name: 'par',
      input: z.object({}),
      timeoutMs,
      steps: [
        { id: 'a', tool: slow, input: { tag: 'a' } },
        { id: 'b', tool: slow, input: { tag: 'b' } },
        { id: 'both', tool: slow, input: { tag: ref('a', 'tag') }, when: (s) => s.results.b.tag === 'b' },
      ],
    });

  it('runs independent steps concurrently and dependents after them', async () => {
    const invoker = createMockInvoker({
      slow: (i: { tag: string }) => new Promise((res) => setTimeout(() => res(i), 100)),
    });
    const done = createRunner({ invoker }).run(parallel(), {});
    await vi.advanceTimersByTimeAsync(0);
    expect(invoker.calls.map((c) => c.input)).toEqual([{ tag: 'a' }, { tag: 'b' }]); // both started at once
    await vi.advanceTimersByTimeAsync(100);
    expect(invoker.calls).toHaveLength(3);
    await vi.advanceTimersByTimeAsync(100);
    const r = await done;
    expect(r.status).toBe('completed');
    expect(r.trace.totalLatencyMs).toBe(200);
    expect(r.trace.steps.map((s) => s.id)).toEqual(['a', 'b', 'both']);
  });

  it('fails at once with deadline_exceeded, aborting the in-flight call and keeping partial results', async () => {
    const signals: AbortSignal[] = [];
    const invoker = createMockInvoker({
      slow: (i: { tag: string }, call: ToolCall) => {
        signals.push(call.signal);
        return i.tag === 'a' ? i : new Promise(() => {}); // b ignores its signal and never settles
      },
    });
    const done = createRunner({ invoker }).run(parallel(1000), {});
    await vi.advanceTimersByTimeAsync(1000);
    const r = await done;
    expect(r.status === 'failed' && r.error).toMatchObject({
      category: 'timeout',
      code: 'deadline_exceeded',
      step: 'b',
    });
    expect(r.status === 'failed' && r.completed).toEqual({ a: { tag: 'a' } });
    expect(signals[1]!.aborted).toBe(true);
    expect(invoker.calls).toHaveLength(2);
  });

  it('times out a hung attempt, aborting its signal, and ignores a late result', async () => {
    let late: (v: unknown) => void = () => {};
    const signals: AbortSignal[] = [];
    const invoker = createMockInvoker({
      slow: (_: unknown, call: ToolCall) => {
        signals.push(call.signal);
        return new Promise((res) => {
          late = res;
        });
      },
    });
    const tool = defineTool({
      name: 'slow',
      description: 's',
      input: z.object({ tag: z.string() }),
      output: z.object({ tag: z.string() }),
      effect: 'read',
      timeoutMs: 50,
      retry: false,
    });
    const chain = defineChain({
      name: 'late',
      input: z.object({}),
      steps: [{ id: 's', tool, input: { tag: 't' } }],
      timeoutMs: 5000,
    });
    const done = createRunner({
      invoker,
      retry: { timeout: { retries: 0, minDelayMs: 0, factor: 1, maxDelayMs: 0 } },
    }).run(chain, {});
    await vi.advanceTimersByTimeAsync(50);
    const r = await done;
    expect(r.status === 'failed' && r.error).toMatchObject({ category: 'timeout', code: 'attempt_timeout' });
    expect(signals[0]!.aborted).toBe(true);
    late({ tag: 'too late' });
    await vi.advanceTimersByTimeAsync(10);
    expect(r.status).toBe('failed');
  });

  it('cancels through the caller signal', async () => {
    const invoker = createMockInvoker({ slow: { hang: true } });
    const controller = new AbortController();
    const done = createRunner({ invoker }).run(parallel(), {}, { signal: controller.signal });
    await vi.advanceTimersByTimeAsync(10);
    controller.abort();
    const r = await done;
    expect(r.status === 'failed' && r.error).toMatchObject({ category: 'cancelled', code: 'cancelled' });
    expect(invoker.calls).toHaveLength(2);
  });

  it('never leaves a rejection unhandled', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      const invoker = createMockInvoker({ slow: [{ error: new Error('boom'), delayMs: 5 }, { hang: true }] });
      const runner = createRunner({ invoker });
      const done = runner.run(parallel(300), {});
      await vi.advanceTimersByTimeAsync(1000);
      await done;
      await runner.close();
      vi.useRealTimers();
      await new Promise((r) => setTimeout(r, 20));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});

describe('runChain and runner basics', () => {
  it('throws for programmer errors only', async () => {
    expect(() => createRunner({} as never)).toThrow(/invoker/);
    const runner = createRunner({ invoker: functionInvoker({}) });
    await expect(runner.run({} as never, {})).rejects.toThrow(/defineChain/);
    await runner.close();
    const chain = defineChain({
      name: 'c',
      input: z.object({}),
      steps: [{ id: 'e', tool: echo, input: { value: 'v' } }],
    });
    await expect(runner.run(chain, {})).rejects.toThrow(/closed/);
  });

  it('uses the user id from the trusted context, not from input', async () => {
    const whoami = defineTool({
      name: 'whoami',
      description: 'w',
      input: z.object({ user_id: z.string() }),
      output: z.object({ user_id: z.string() }),
      effect: 'read',
    });
    const invoker = createMockInvoker({ whoami: (i: { user_id: string }) => i });
    const chain = defineChain({
      name: 'me',
      input: z.object({ user_id: z.string().optional() }),
      context: z.object({ userId: z.string() }),
      steps: [{ id: 'w', tool: whoami, input: { user_id: ref('context', 'userId') } }],
    });
    const r = await runChain(chain, { user_id: 'attacker' }, { invoker, context: { userId: USER } });
    expect(r.status === 'completed' && r.output).toEqual({ user_id: USER });
  });
});
