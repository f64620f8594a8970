// The builder form makes the chain defineChain makes from the same steps; typed invokers behave
// like the untyped ones at run time.
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  chain,
  createRunner,
  defineChain,
  DefinitionError,
  functionInvoker,
  ref,
  type Runner,
  type Scope,
} from 'chainkit';
import { createMockInvoker } from 'chainkit/testing';
import { count, echo, remove, USER } from '../helpers.js';

const input = z.object({ text: z.string(), label: z.string() });
const context = z.object({ userId: z.uuid() });
// Shared by both forms: a function's source text is part of the fingerprint.
const prompt = (s: Scope): string => `Remove ${String(s.results.pick.id)}?`;
const summary = (s: Scope): unknown => ({ removed: s.results.remove, text: s.input.text });
const length = (s: Scope): number => String(s.input.text).length;

const declarative = () =>
  defineChain({
    name: 'same',
    version: '2',
    description: 'd',
    keywords: ['k'],
    input,
    context,
    timeoutMs: 5000,
    steps: [
      { id: 'count', tool: count, input: {} },
      {
        id: 'pick',
        select: { from: ref('count', 'items'), where: { label: { contains: ref('input', 'label') } }, expect: 'one' },
      },
      { id: 'len', compute: length, output: z.number() },
      { id: 'remove', tool: remove, input: { id: ref('context', 'userId') }, confirm: { prompt } },
    ],
    output: summary,
  });

const built = () =>
  chain('same', { input, context, version: '2', description: 'd', keywords: ['k'], timeoutMs: 5000 })
    .tool('count', count, () => ({}))
    .select('pick', (ref) => ({
      from: ref('count', 'items'),
      where: { label: { contains: ref('input', 'label') } },
      expect: 'one',
    }))
    .compute('len', length, { output: z.number() })
    .tool('remove', remove, (ref) => ({ id: ref('context', 'userId') }), { confirm: { prompt } })
    .output(summary);

describe('chain() builder', () => {
  const open: Runner[] = [];
  afterEach(async () => {
    for (const r of open.splice(0)) await r.close();
  });

  it('makes the same chain as defineChain: fingerprint, plan and metadata', () => {
    const a = declarative();
    const b = built();
    expect(b.fingerprint).toBe(a.fingerprint);
    expect(b.plan.map((p) => [p.id, p.kind, p.deps])).toEqual(a.plan.map((p) => [p.id, p.kind, p.deps]));
    expect({ ...b, plan: undefined, steps: undefined, output: undefined }).toEqual({
      ...a,
      plan: undefined,
      steps: undefined,
      output: undefined,
    });
    expect(Object.isFrozen(b)).toBe(true);
  });

  it('.build() without output has the fingerprint of a declarative chain without output', () => {
    const a = defineChain({
      name: 'b',
      input,
      steps: [{ id: 'e', tool: echo, input: { value: ref('input', 'text') } }],
    });
    const b = chain('b', { input })
      .tool('e', echo, (ref) => ({ value: ref('input', 'text') }))
      .build();
    expect(b.fingerprint).toBe(a.fingerprint);
  });

  it('runs like the declarative chain', async () => {
    const script = { count: { ok: { n: 1, items: [{ id: 'i1', label: 'Milk' }] } }, remove: { ok: { ok: true } } };
    const results = [];
    for (const c of [declarative(), built()]) {
      const runner = createRunner({ invoker: createMockInvoker(script) });
      open.push(runner);
      results.push(
        await runner.run(c, { text: 'hello', label: 'milk' }, { context: { userId: USER }, confirm: () => true }),
      );
    }
    expect(results.map((r) => r.status === 'completed' && r.output)).toEqual([
      { removed: { ok: true }, text: 'hello' },
      { removed: { ok: true }, text: 'hello' },
    ]);
  });

  it('throws the same DefinitionError as defineChain (runtime checks stay for what types cannot see)', () => {
    const issuesOf = (make: () => unknown): unknown => {
      try {
        make();
      } catch (e) {
        expect(e).toBeInstanceOf(DefinitionError);
        return (e as DefinitionError).issues;
      }
      throw new Error('expected a DefinitionError');
    };
    const uuid = z.object({ id: z.string() });
    // A destructive step without `confirm` type-checks; both forms reject it the same way.
    const fromBuilder = issuesOf(() =>
      chain('x', { input: uuid })
        .tool('r', remove, (r) => ({ id: r('input', 'id') }))
        .build(),
    );
    const fromSpec = issuesOf(() =>
      defineChain({ name: 'x', input: uuid, steps: [{ id: 'r', tool: remove, input: { id: ref('input', 'id') } }] }),
    );
    expect(fromBuilder).toEqual(fromSpec);
    expect(JSON.stringify(fromBuilder)).toMatch(/destructive/);
  });

  it('rejects step options that would replace the step itself', () => {
    const b = chain('x', { input });
    expect(() => b.tool('e', echo, () => ({ value: 'v' }), JSON.parse('{"tool": 1}'))).toThrow(
      /`tool` is not a step option/,
    );
    expect(() => b.compute('c', () => 1, JSON.parse('"fast"'))).toThrow(TypeError);
  });

  it('is immutable: each call returns a new builder', () => {
    const base = chain('x', { input }).tool('e', echo, (ref) => ({ value: ref('input', 'text') }));
    const one = base.compute('a', () => 1).build();
    const two = base.compute('b', () => 2).build();
    expect(one.steps.map((s) => s.id)).toEqual(['e', 'a']);
    expect(two.steps.map((s) => s.id)).toEqual(['e', 'b']);
  });
});

describe('typed invokers at run time', () => {
  it('functionInvoker(tools, impls) calls the implementations by tool name', async () => {
    const invoker = functionInvoker([echo], { echo: async ({ value }) => ({ value: value.toUpperCase() }) });
    const runner = createRunner({ invoker });
    const c = chain('shout', { input })
      .tool('e', echo, (ref) => ({ value: ref('input', 'text') }))
      .build();
    const r = await runner.run(c, { text: 'hi', label: 'x' });
    await runner.close();
    expect(r.status === 'completed' && r.output).toEqual({ value: 'HI' });
  });

  it("rejects an implementation for a tool not given (a JavaScript caller's typo)", () => {
    expect(() => functionInvoker([echo], JSON.parse('{"ecoh": 1}'))).toThrow(
      /'ecoh' is not one of the tools given \(echo\)/,
    );
    expect(() => createMockInvoker([echo, count], JSON.parse('{"cuont": {"ok": 1}}'))).toThrow(
      /'cuont' is not one of the tools given \(echo, count\)/,
    );
    expect(() => functionInvoker(JSON.parse('[{}]'), {})).toThrow(/array of tools/);
  });

  it('createMockInvoker(tools, script) answers from the script', async () => {
    const invoker = createMockInvoker([echo], { echo: [{ ok: { value: 'a' } }, (i) => ({ value: `${i.value}!` })] });
    const call = {
      tool: 'echo',
      input: { value: 'x' },
      attempt: 1,
      signal: new AbortController().signal,
      runId: 'r',
      traceId: 't',
      context: {},
      progress: () => undefined,
    };
    expect(await invoker(call)).toEqual({ value: 'a' });
    expect(await invoker(call)).toEqual({ value: 'x!' });
    expect(invoker.callsTo('echo')).toHaveLength(2);
  });
});
