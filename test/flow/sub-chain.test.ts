// §12 sub-chains: `.chain(id, sub, mapping)` and `{ id, chain, input }` run a chain as one step.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  chain,
  createRunner,
  defineChain,
  DefinitionError,
  formatTrace,
  memoryCheckpointStore,
  ref,
  runChain,
  type StepStartEvent,
} from 'chainkit';
import { createMockInvoker } from 'chainkit/testing';
import { count, echo, remove, TASK_ID } from '../helpers.js';

const shout = chain('shout', { input: z.object({ text: z.string() }) })
  .tool('say', echo, (ref) => ({ value: ref('input', 'text') }))
  .compute('loud', (s) => s.results.say.value.toUpperCase())
  .output((s) => ({ loud: s.results.loud }));

describe('sub-chain step', () => {
  it('runs the sub-chain with its mapped input; its output is the step result', async () => {
    const invoker = createMockInvoker({ echo: (input: { value: string }) => ({ value: `${input.value}!` }) });
    const outer = chain('outer', { input: z.object({ name: z.string() }) })
      .chain('greet', shout, (ref) => ({ text: ref('input', 'name') }))
      .output((s) => s.results.greet.loud);
    const r = await runChain(outer, { name: 'ada' }, { invoker });
    expect(r.status === 'completed' && r.output).toBe('ADA!');
    expect(invoker.calls.map((c) => c.input)).toEqual([{ value: 'ada' }]);
  });

  it('nests the sub-chain steps under the step in the trace and in events (ids step/…)', async () => {
    const invoker = createMockInvoker({ echo: { ok: { value: 'x' } } });
    const runner = createRunner({ invoker });
    const started: StepStartEvent[] = [];
    runner.events.on('step:start', (e) => started.push(e));
    const outer = defineChain({
      name: 'outer',
      input: z.object({}),
      steps: [{ id: 'greet', chain: shout, input: { text: 'hi' } }],
    });
    const r = await runner.run(outer, {});
    expect(started.map((e) => e.step)).toEqual(['greet', 'greet/say', 'greet/loud']);
    expect(r.trace.steps.map((t) => t.id)).toEqual(['greet']);
    expect(r.trace.steps[0]!.children!.map((t) => `${t.id}:${t.status}`)).toEqual([
      'greet/say:success',
      'greet/loud:success',
    ]);
    expect(formatTrace(r.trace)).toMatch(/greet\/say/);
    await runner.close();
  });

  it('gives sub-steps idempotency keys that carry the step path', async () => {
    const invoker = createMockInvoker({ remove: { ok: { ok: true } } });
    const sub = defineChain({
      name: 'rm',
      input: z.object({ id: z.uuid() }),
      steps: [{ id: 'rm', tool: remove, input: { id: ref('input', 'id') }, confirm: false }],
    });
    const outer = defineChain({
      name: 'outer',
      input: z.object({}),
      steps: [{ id: 'clean', chain: sub, input: { id: TASK_ID } }],
    });
    const r = await runChain(outer, {}, { invoker });
    expect(r.status).toBe('completed');
    expect(invoker.calls[0]!.idempotencyKey).toBe(`${r.runId}:clean/rm`);
  });

  it('fails the step with the sub-step failure, its id nested', async () => {
    const invoker = createMockInvoker({ echo: { error: { status: 404, message: 'gone' } } });
    const outer = chain('outer', { input: z.object({}) })
      .chain('greet', shout, () => ({ text: 'x' }))
      .build();
    const r = await runChain(outer, {}, { invoker });
    expect(r.status === 'failed' && r.error).toMatchObject({ category: 'not_found', step: 'greet/say' });
    expect(r.trace.steps[0]).toMatchObject({ id: 'greet', status: 'error' });
  });

  it('checks the sub-chain input at run time too (invalid_step_input)', async () => {
    const invoker = createMockInvoker({ echo: { ok: { value: 'x' } } });
    const outer = defineChain({
      name: 'outer',
      input: z.object({}),
      steps: [{ id: 'greet', chain: shout, input: () => ({ text: 5 }) }],
    });
    const r = await runChain(outer, {}, { invoker });
    expect(r.status === 'failed' && r.error).toMatchObject({ code: 'invalid_step_input', step: 'greet' });
    expect(invoker.calls).toHaveLength(0);
  });

  it('a gate inside a sub-chain is answered in-process, or parks the run (test/flow/nested-gates.test.ts)', async () => {
    const invoker = createMockInvoker({ remove: { ok: { ok: true } } });
    const sub = defineChain({
      name: 'rm',
      input: z.object({ id: z.uuid() }),
      steps: [{ id: 'rm', tool: remove, input: { id: ref('input', 'id') }, confirm: { prompt: 'Remove?' } }],
    });
    const outer = defineChain({
      name: 'outer',
      input: z.object({}),
      steps: [{ id: 'clean', chain: sub, input: { id: TASK_ID } }],
    });
    const asked: string[] = [];
    const yes = await runChain(outer, {}, { invoker, confirm: (c) => (asked.push(`${c.step}:${c.prompt}`), true) });
    expect(yes.status).toBe('completed');
    expect(asked).toEqual(['clean/rm:Remove?']);
    const runner = createRunner({ invoker });
    const parked = await runner.run(outer, {});
    expect(parked.status === 'awaiting_confirmation' && parked.confirmation).toMatchObject({
      step: 'clean/rm',
      tool: 'remove',
    });
    expect(invoker.calls).toHaveLength(1);
    if (parked.status === 'awaiting_confirmation')
      expect((await runner.resume(parked.resumeToken, { approved: true })).status).toBe('completed');
    await runner.close();
    expect(invoker.calls).toHaveLength(2);
  });

  it('runChain without `confirm`, `secret` and checkpoints refuses a gate inside a sub-chain (at any depth) before its first step', async () => {
    const invoker = createMockInvoker({
      remove: { ok: { ok: true } },
      count: { ok: { n: 1, items: [{ id: TASK_ID, label: 'x' }] } },
    });
    const sub = defineChain({
      name: 'rm',
      input: z.object({ id: z.uuid() }),
      steps: [{ id: 'rm', tool: remove, input: { id: ref('input', 'id') }, confirm: { prompt: 'Remove?' } }],
    });
    const mid = defineChain({
      name: 'mid',
      input: z.object({ id: z.uuid() }),
      steps: [{ id: 'inner', chain: sub, input: { id: ref('input', 'id') } }],
    });
    const outer = defineChain({
      name: 'outer',
      input: z.object({}),
      steps: [
        { id: 'find', tool: count, input: {} },
        { id: 'each', forEach: { over: ref('find', 'items'), chain: mid, input: { id: ref('item', 'id') } } },
      ],
    });
    await expect(runChain(outer, {}, { invoker })).rejects.toThrow(
      /^runChain: chain outer has a confirmation gate, and the runner made for this call is closed after it/,
    );
    expect(invoker.calls).toHaveLength(0);
    const parked = await runChain(
      outer,
      {},
      {
        invoker,
        secret: 's'.repeat(32),
        stores: { checkpoints: memoryCheckpointStore() },
      },
    );
    expect(parked.status === 'awaiting_confirmation' && parked.confirmation.step).toBe('each/0/inner/rm');
    const answered = await runChain(outer, {}, { invoker, confirm: () => true });
    expect(answered.status).toBe('completed');
  });

  it('refuses statically: unmapped and wrong fields, refs into the sub-chain mapping, a chain that contains itself', () => {
    let error: DefinitionError | undefined;
    try {
      defineChain({
        name: 'outer',
        input: z.object({ n: z.number() }),
        steps: [
          { id: 'c', tool: count, input: {} },
          { id: 'a', chain: shout, input: { texts: 'x' } },
          { id: 'b', chain: shout, input: { text: ref('input', 'n') } },
          { id: 'd', chain: { kind: 'nope' } as never, input: {} },
        ],
      });
    } catch (e) {
      error = e as DefinitionError;
    }
    expect(error).toBeInstanceOf(DefinitionError);
    expect(error!.issues).toEqual(
      expect.arrayContaining([
        { path: 'steps[1].input.texts', message: expect.stringContaining("not a field of chain shout's input") },
        { path: 'steps[1].input.text', message: expect.stringContaining('is not mapped') },
        { path: 'steps[2].input.text', message: expect.stringContaining('is a number') },
        { path: 'steps[3].chain', message: expect.stringContaining('Expected `chain` to be a chain') },
      ]),
    );
    // A chain named like one it contains (at any depth) would run itself.
    const inner = defineChain({
      name: 'loopy',
      input: z.object({}),
      steps: [{ id: 'e', tool: echo, input: { value: 'x' } }],
    });
    const middle = defineChain({ name: 'middle', input: z.object({}), steps: [{ id: 'in', chain: inner, input: {} }] });
    expect(() =>
      defineChain({ name: 'loopy', input: z.object({}), steps: [{ id: 'm', chain: middle, input: {} }] }),
    ).toThrow(/contains itself \(loopy → middle → loopy\)/);
  });
});
