// §12 branch (one chain of several, picked by a value) and loop (a chain again until `until`, at most `max`).
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { chain, createRunner, defineChain, DefinitionError, functionInvoker, ref, runChain } from 'chainkit';
import { createMockInvoker } from 'chainkit/testing';
import { echo } from '../helpers.js';

const email = chain('email', { input: z.object({ to: z.string() }) })
  .tool('send', echo, (ref) => ({ value: ref('input', 'to') }))
  .output((s) => ({ via: 'email', to: s.results.send.value }));
const sms = chain('sms', { input: z.object({ channel: z.string(), to: z.string() }) })
  .compute('code', (s) => s.input.to.length)
  .build();
const fallback = chain('fallback', { input: z.object({}) })
  .compute('none', () => 'nobody')
  .build();

describe('branch step', () => {
  const notify = (withDefault: boolean) => {
    const base = chain('notify', { input: z.object({ channel: z.string(), to: z.string() }) });
    return withDefault
      ? base
          .branch('n', (ref) => ({
            on: ref('input', 'channel'),
            cases: { email: { chain: email, input: { to: ref('input', 'to') } }, sms },
            default: { chain: fallback, input: {} },
          }))
          .build()
      : base
          .branch('n', (ref) => ({
            on: ref('input', 'channel'),
            cases: { email: { chain: email, input: { to: ref('input', 'to') } }, sms },
          }))
          .build();
  };

  it('runs the case named by `on` (a mapped case, or a bare case given the chain input)', async () => {
    const invoker = createMockInvoker({ echo: (input: { value: string }) => input });
    const a = await runChain(notify(false), { channel: 'email', to: 'ada@example.com' }, { invoker });
    expect(a.status === 'completed' && a.output).toEqual({ via: 'email', to: 'ada@example.com' });
    expect(a.trace.steps[0]!.children!.map((t) => t.id)).toEqual(['n/send']);
    const b = await runChain(notify(false), { channel: 'sms', to: '+4412' }, { invoker });
    expect(b.status === 'completed' && b.output).toBe(5);
    expect(invoker.calls).toHaveLength(1);
  });

  it('runs `default` when `on` names no case', async () => {
    const r = await runChain(
      notify(true),
      { channel: 'pigeon', to: 'x' },
      { invoker: createMockInvoker({ echo: { ok: { value: 'x' } } }) },
    );
    expect(r.status === 'completed' && r.output).toBe('nobody');
  });

  it('fails invalid_input / no_branch without a default, and calls nothing', async () => {
    const invoker = createMockInvoker({ echo: { ok: { value: 'x' } } });
    const r = await runChain(notify(false), { channel: 'pigeon', to: 'x' }, { invoker });
    expect(r.status === 'failed' && r.error).toMatchObject({
      category: 'invalid_input',
      code: 'no_branch',
      step: 'n',
      userMessage: "'pigeon' is not one of: email, sms.",
    });
    expect(invoker.calls).toHaveLength(0);
  });

  it('a ref to a numeric field names the case written as that number (it always failed no_branch)', async () => {
    const c = defineChain({
      name: 'by_level',
      input: z.object({ level: z.number() }),
      steps: [
        {
          id: 'n',
          branch: {
            on: ref('input', 'level'),
            cases: { 1: { chain: fallback, input: {} }, 2: { chain: sms, input: { channel: 'x', to: 'abcd' } } },
          },
        },
      ],
    });
    const r = await runChain(c, { level: 2 }, { invoker: createMockInvoker({}) });
    expect(r.status === 'completed' && r.output).toBe(4);
    const none = await runChain(c, { level: 3 }, { invoker: createMockInvoker({}) });
    expect(none.status === 'failed' && none.error.code).toBe('no_branch');
  });

  it('takes `on` as a function of the scope', async () => {
    const c = defineChain({
      name: 'fn',
      input: z.object({ loud: z.boolean() }),
      steps: [
        {
          id: 'n',
          branch: {
            on: (s) => (s.input.loud ? 'a' : 'b'),
            cases: { a: { chain: fallback, input: {} }, b: { chain: sms, input: { channel: 'x', to: 'abc' } } },
          },
        },
      ],
    });
    const r = await runChain(c, { loud: false }, { invoker: createMockInvoker({}) });
    expect(r.status === 'completed' && r.output).toBe(3);
  });

  it('refuses statically: a case that is not a chain, a case mapping that does not fit, no cases, a bad `on`', () => {
    let error: DefinitionError | undefined;
    try {
      defineChain({
        name: 'bad',
        input: z.object({ n: z.number() }),
        steps: [
          {
            id: 'a',
            branch: {
              // @ts-expect-error — the compiler reports the path too (issue 23)
              on: ref('input', 'nn'),
              cases: { x: { chain: email, input: { to: ref('input', 'n') } }, y: 'nope' as never },
            },
          },
          { id: 'b', branch: { on: 'email' as never, cases: {} } },
        ],
      });
    } catch (e) {
      error = e as DefinitionError;
    }
    expect(error!.issues).toEqual([
      { path: 'steps[0].branch.on', message: expect.stringContaining("path 'nn' does not exist in the chain input") },
      { path: 'steps[0].branch.cases.x.input.to', message: expect.stringContaining('is a number but') },
      { path: 'steps[0].branch.cases.y.chain', message: expect.stringContaining('Expected `chain` to be a chain') },
      { path: 'steps[1].branch.on', message: expect.stringContaining('Expected `on`') },
      { path: 'steps[1].branch.cases', message: expect.stringContaining('at least one case') },
    ]);
  });
});

const status = {
  name: 'status',
  description: 'Export status',
  input: z.object({ id: z.string() }),
  output: z.object({ ready: z.boolean(), n: z.number() }),
  effect: 'read' as const,
};

describe('loop step', () => {
  const make = async () => {
    const { defineTool } = await import('chainkit');
    const tool = defineTool(status);
    const check = chain('check', { input: z.object({ id: z.string() }) })
      .tool('get', tool, (ref) => ({ id: ref('input', 'id') }))
      .build();
    return { tool, check };
  };

  it('runs the chain until `until` holds; its result is the last output; iterations nest in the trace', async () => {
    const { check } = await make();
    let n = 0;
    const invoker = functionInvoker({ status: () => ({ ready: ++n === 3, n }) });
    const c = chain('poll', { input: z.object({ id: z.string() }) })
      .loop('wait', {
        chain: check,
        input: (ref) => ({ id: ref('input', 'id') }),
        until: (out, i) => out.ready && i === 3,
        max: 5,
      })
      .build();
    const r = await runChain(c, { id: 'e1' }, { invoker });
    expect(r.status === 'completed' && r.output).toEqual({ ready: true, n: 3 });
    expect(r.trace.steps[0]!.children!.map((t) => t.id)).toEqual(['wait/1', 'wait/2', 'wait/3']);
    expect(r.trace.steps[0]!.children![1]!.children!.map((t) => t.id)).toEqual(['wait/2/get']);
  });

  it('fails loop_limit after `max` iterations', async () => {
    const { check } = await make();
    const invoker = functionInvoker({ status: () => ({ ready: false, n: 0 }) });
    const c = defineChain({
      name: 'poll',
      input: z.object({}),
      steps: [
        {
          id: 'wait',
          loop: { chain: check, input: { id: 'e1' }, until: (out: { ready: boolean }) => out.ready, max: 4 },
        },
      ],
    });
    const r = await runChain(c, {}, { invoker });
    expect(r.status === 'failed' && r.error).toMatchObject({ code: 'loop_limit', step: 'wait' });
    expect(r.trace.steps[0]!.children).toHaveLength(4);
  });

  it('waits `delayMs` between iterations (fake timers)', async () => {
    vi.useFakeTimers();
    try {
      const { check } = await make();
      let n = 0;
      const at: number[] = [];
      const invoker = functionInvoker({ status: () => (at.push(Date.now()), { ready: ++n === 3, n }) });
      const runner = createRunner({ invoker });
      const c = defineChain({
        name: 'poll',
        input: z.object({}),
        steps: [
          {
            id: 'wait',
            loop: {
              chain: check,
              input: { id: 'e1' },
              until: (out: { ready: boolean }) => out.ready,
              max: 5,
              delayMs: 2000,
            },
          },
        ],
      });
      const pending = runner.run(c, {});
      await vi.advanceTimersByTimeAsync(5000);
      const r = await pending;
      expect(r.status).toBe('completed');
      expect(at.map((t) => t - at[0]!)).toEqual([0, 2000, 4000]);
      await runner.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('refuses a loop without `max` (and other bad options) in the one DefinitionError', async () => {
    const { check } = await make();
    let error: DefinitionError | undefined;
    try {
      defineChain({
        name: 'bad',
        input: z.object({}),
        steps: [
          { id: 'a', loop: { chain: check, input: { id: 'x' }, until: () => true } as never },
          { id: 'b', loop: { chain: check, input: { id: 'x' }, until: 'yes' as never, max: 0, delayMs: -1 } },
        ],
      });
    } catch (e) {
      error = e as DefinitionError;
    }
    expect(error!.issues).toEqual([
      { path: 'steps[0].loop.max', message: expect.stringContaining('A loop needs `max`') },
      { path: 'steps[1].loop.until', message: expect.stringContaining('Expected `until` to be a function') },
      { path: 'steps[1].loop.max', message: expect.stringContaining('integer from 1') },
      { path: 'steps[1].loop.delayMs', message: expect.stringContaining('non-negative') },
    ]);
  });
});
