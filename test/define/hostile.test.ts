// Hostile definitions (issue 11, items 7 and 8): property-named ids, keys and paths, cyclic and deep
// literals, malformed paths, out-of-range numbers, and the size of the compiled plan.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  createRunner,
  defineChain,
  defineTool,
  DefinitionError,
  functionInvoker,
  ref,
  type DefinitionIssue,
  type Runner,
} from 'chainkit';
import { createMockInvoker } from 'chainkit/testing';
import { echo } from '../helpers.js';

function issuesOf(define: () => unknown): DefinitionIssue[] {
  try {
    define();
  } catch (e) {
    expect(e).toBeInstanceOf(DefinitionError);
    return [...(e as DefinitionError).issues];
  }
  throw new Error('expected a DefinitionError');
}

const PROTO_NAMES = [
  'toString',
  'constructor',
  'valueOf',
  'hasOwnProperty',
  'isPrototypeOf',
  'prototype',
  'toLocaleString',
];
const input = z.object({ text: z.string() });
const open: Runner[] = [];
afterEach(async () => {
  for (const r of open.splice(0)) await r.close();
});
const runnerOf = (fns: Record<string, (i: any) => unknown>): Runner => {
  const r = createRunner({ invoker: functionInvoker(fns) });
  open.push(r);
  return r;
};

describe('property-named step ids', () => {
  it.each(PROTO_NAMES)('runs a chain whose step is called %s, and refs to it', async (id) => {
    const chain = defineChain({
      name: 'named',
      input,
      steps: [
        { id, tool: echo, input: { value: ref('input', 'text') } },
        { id: 'again', tool: echo, input: { value: ref(id, 'value') } },
        { id: 'both', compute: (s) => `${s.results[id].value}/${s.results.again.value}` },
      ],
    });
    const r = await runnerOf({ echo: (i) => i }).run(chain, { text: 'hi' });
    expect(r.status === 'completed' && r.output).toBe('hi/hi');
  });

  it('compensates only steps that ran, and resumes gates, whatever the step ids are called', async () => {
    const chain = defineChain({
      name: 'named_undo',
      input,
      steps: [
        {
          id: 'toString',
          tool: echo,
          input: { value: 'a' },
          when: () => false,
          compensate: { tool: echo, input: { value: 'undo' } },
        },
        { id: 'constructor', tool: echo, input: { value: 'b' }, compensate: { tool: echo, input: { value: 'undo' } } },
        { id: 'valueOf', tool: echo, input: { value: ref('constructor', 'value') }, confirm: { prompt: 'Go on?' } },
        { id: 'hasOwnProperty', tool: echo, input: { value: ref('valueOf', 'value').transform(() => 'boom') } },
      ],
    });
    const runner = runnerOf({
      echo: (i: { value: string }) =>
        i.value === 'boom' ? Promise.reject(Object.assign(new Error('bad'), { status: 400 })) : i,
    });
    const gated = await runner.run(chain, { text: '' });
    expect(gated.status).toBe('awaiting_confirmation');
    if (gated.status !== 'awaiting_confirmation') return;
    const r = await runner.resume(gated.resumeToken, { approved: true });
    expect(r.status === 'failed' && r.error.step).toBe('hasOwnProperty');
    expect(r.status === 'failed' && r.compensated).toEqual(['constructor']);
    expect(r.status === 'failed' && r.completed).toEqual({ constructor: { value: 'b' }, valueOf: { value: 'b' } });
  });

  it('refuses `__proto__` as a step id', () => {
    const issues = issuesOf(() =>
      defineChain({ name: 'p', input, steps: [{ id: '__proto__', tool: echo, input: { value: 'x' } }] }),
    );
    expect(issues).toEqual([
      expect.objectContaining({ path: 'steps[0].id', message: expect.stringContaining('__proto__') }),
    ]);
  });

  it('reads only own results: a ref to a step that did not run is undefined, never a prototype member', () => {
    for (const id of PROTO_NAMES) expect(ref(id).resolve({ input: {}, context: {}, results: {} }), id).toBeUndefined();
  });
});

describe('property-named ref paths', () => {
  it.each(PROTO_NAMES)('reports a ref path %s missing from the schema as a DefinitionError', (name) => {
    const issues = issuesOf(() =>
      defineChain({ name: 'p', input, steps: [{ id: 'e', tool: echo, input: { value: ref('input', name) } }] }),
    );
    expect(issues).toEqual([
      expect.objectContaining({ path: 'steps[0].input.value', message: expect.stringContaining('does not exist') }),
    ]);
    const nested = issuesOf(() =>
      defineChain({
        name: 'p',
        input: z.object({ a: z.object({ b: z.string() }) }),
        steps: [{ id: 'e', tool: echo, input: { value: ref('input', `a.${name}`) } }],
      }),
    );
    expect(nested[0]!.message).toContain('does not exist');
  });

  it('follows own properties only at run time', () => {
    const scope = {
      input: { a: {}, list: [1, 2, 3], name: 'abcd', own: { toString: 'mine' } },
      context: {},
      results: {},
    };
    for (const name of PROTO_NAMES) expect(ref('input', `a.${name}`).resolve(scope), name).toBeUndefined();
    expect(ref('input', 'a.__defineGetter__').resolve(scope)).toBeUndefined();
    expect(ref('input', 'list.length').resolve(scope)).toBe(3);
    expect(ref('input', 'list.1').resolve(scope)).toBe(2);
    expect(ref('input', 'name.length').resolve(scope)).toBe(4);
    expect(ref('input', 'own.toString').resolve(scope)).toBe('mine');
  });

  it('works for a field really called toString or constructor', async () => {
    const odd = defineTool({
      name: 'odd',
      description: 'Odd names',
      input: z.object({ constructor: z.string(), toString: z.string() }),
      output: z.object({ constructor: z.string(), toString: z.string() }),
      effect: 'read',
    });
    const chain = defineChain({
      name: 'odd_chain',
      input: z.object({ toString: z.string() }),
      steps: [
        { id: 'o', tool: odd, input: { constructor: ref('input', 'toString'), toString: 'lit' } },
        { id: 'e', tool: echo, input: { value: ref('o', 'constructor') } },
      ],
    });
    const r = await runnerOf({ odd: (i) => i, echo: (i) => i }).run(chain, { toString: 'via-input' });
    expect(r.status === 'completed' && r.output).toEqual({ value: 'via-input' });
  });
});

describe('property-named mapping keys and where fields', () => {
  it.each(PROTO_NAMES)('refuses a mapping key %s that the tool does not have', (name) => {
    const issues = issuesOf(() =>
      defineChain({ name: 'p', input, steps: [{ id: 'e', tool: echo, input: { value: 'x', [name]: 'y' } }] }),
    );
    expect(issues).toEqual([
      expect.objectContaining({ path: `steps[0].input.${name}`, message: expect.stringContaining('not a field') }),
    ]);
  });

  it('reports a required field called constructor that is not mapped', () => {
    const odd = defineTool({
      name: 'odd',
      description: 'Odd',
      input: z.object({ constructor: z.string() }),
      output: z.object({}),
    });
    const issues = issuesOf(() => defineChain({ name: 'p', input, steps: [{ id: 'o', tool: odd, input: {} }] }));
    expect(issues).toEqual([
      expect.objectContaining({ path: 'steps[0].input.constructor', message: expect.stringContaining('not mapped') }),
    ]);
  });

  it('refuses `__proto__` as a mapping key, also nested and in compensate', () => {
    const meta = defineTool({
      name: 'meta',
      description: 'Meta',
      input: z.object({ value: z.string(), meta: z.any() }),
      output: z.object({}),
    });
    const key = JSON.parse('{"__proto__": "x"}') as Record<string, unknown>;
    const issues = issuesOf(() =>
      defineChain({
        name: 'p',
        input,
        steps: [
          { id: 'a', tool: echo, input: { value: 'v', ...key } },
          {
            id: 'b',
            tool: meta,
            input: { value: 'v', meta: { deep: key } },
            compensate: { tool: echo, input: { value: 'v', ...key } },
          },
        ],
      }),
    );
    expect(issues.map((i) => i.path)).toEqual([
      'steps[0].input.__proto__',
      'steps[1].input.meta.deep.__proto__',
      'steps[1].compensate.input.__proto__',
    ]);
  });

  it.each(PROTO_NAMES)('refuses a where field %s the items do not have', (name) => {
    const list = defineTool({
      name: 'list',
      description: 'List',
      input: z.object({}),
      output: z.object({ items: z.array(z.object({ label: z.string() })) }),
      effect: 'read',
    });
    const issues = issuesOf(() =>
      defineChain({
        name: 'p',
        input,
        steps: [
          { id: 'l', tool: list, input: {} },
          { id: 's', select: { from: ref('l', 'items'), where: { [name]: { equals: 'x' } }, expect: 'one' } },
        ],
      }),
    );
    expect(issues).toEqual([
      expect.objectContaining({
        path: `steps[1].select.where.${name}`,
        message: expect.stringContaining('not a field'),
      }),
    ]);
  });

  it('matches where fields against own properties of items only', async () => {
    const chain = defineChain({
      name: 'own_where',
      input,
      steps: [
        { id: 'items', compute: () => [{}, { constructor: 'x', toString: 'abc' }] },
        { id: 'eq', select: { from: ref('items'), where: { constructor: { equals: Object } }, expect: 'all' } },
      ],
    });
    const r = await runnerOf({}).run(chain, { text: '' });
    expect(r.status === 'failed' && r.error.code).toBe('no_match');
    const contains = defineChain({
      name: 'own_where2',
      input,
      steps: [
        { id: 'items', compute: () => [{}, { toString: 'abc' }] },
        { id: 'c', select: { from: ref('items'), where: { toString: { contains: 'B' } }, expect: 'all' } },
      ],
    });
    const r2 = await runnerOf({}).run(contains, { text: '' });
    expect(r2.status === 'completed' && r2.output).toEqual([{ toString: 'abc' }]);
  });

  it('refuses `__proto__` as a where field', () => {
    const where = JSON.parse('{"__proto__": {"equals": 1}}') as Record<string, never>;
    const issues = issuesOf(() =>
      defineChain({
        name: 'p',
        input,
        steps: [
          { id: 'items', compute: () => [] },
          { id: 's', select: { from: ref('items'), where, expect: 'all' } },
        ],
      }),
    );
    expect(issues).toEqual([expect.objectContaining({ path: 'steps[1].select.where.__proto__' })]);
  });
});

describe('cyclic, deep and malformed definitions', () => {
  const anyTool = defineTool({
    name: 'any_tool',
    description: 'Takes anything',
    input: z.object({ value: z.any() }),
    output: z.object({}),
  });

  it('refuses a mapping literal that contains itself', () => {
    const loop: Record<string, unknown> = { a: 1 };
    loop.self = loop;
    const issues = issuesOf(() =>
      defineChain({ name: 'p', input, steps: [{ id: 'a', tool: anyTool, input: { value: loop } }] }),
    );
    expect(issues).toEqual([
      expect.objectContaining({ path: 'steps[0].input.value.self', message: expect.stringContaining('cycle') }),
    ]);
    const arr: unknown[] = [];
    arr.push([arr]);
    expect(
      issuesOf(() => defineChain({ name: 'p', input, steps: [{ id: 'a', tool: anyTool, input: { value: arr } }] }))[0]!
        .message,
    ).toContain('cycle');
  });

  it('accepts a literal shared twice (not a cycle)', () => {
    const shared = { x: 1 };
    expect(() =>
      defineChain({ name: 'p', input, steps: [{ id: 'a', tool: anyTool, input: { value: [shared, shared] } }] }),
    ).not.toThrow();
  });

  it('refuses 3,000-deep literals (input, where values) with a DefinitionError', () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i < 3000; i++) deep = i % 2 ? { a: deep } : [deep];
    expect(
      issuesOf(() => defineChain({ name: 'p', input, steps: [{ id: 'a', tool: anyTool, input: { value: deep } }] }))[0]!
        .message,
    ).toMatch(/deeper than/);
    expect(
      issuesOf(() =>
        defineChain({
          name: 'p',
          input,
          steps: [
            { id: 'items', compute: () => [] },
            { id: 's', select: { from: ref('items'), where: { x: { in: deep } }, expect: 'all' } },
          ],
        }),
      )[0]!.message,
    ).toMatch(/deeper than/);
    let deeper: unknown = 'leaf';
    for (let i = 0; i < 200_000; i++) deeper = { a: deeper };
    expect(
      issuesOf(() =>
        defineChain({
          name: 'p',
          input,
          steps: [{ id: 'a', tool: anyTool, input: { value: 1 }, junk: deeper } as never],
        }),
      ).length,
    ).toBeGreaterThan(0);
  });

  it('keeps BigInt literals (fingerprint included)', () => {
    const big = defineTool({
      name: 'big',
      description: 'Big',
      input: z.object({ n: z.bigint() }),
      output: z.object({}),
    });
    expect(defineChain({ name: 'p', input, steps: [{ id: 'b', tool: big, input: { n: 10n } }] }).fingerprint).toMatch(
      /^[0-9a-f]{32}$/,
    );
  });

  it.each([
    'a..b',
    '.a',
    'a.',
    '[x]',
    'a[0',
    'a]',
    'a[0]b',
    'a[-1]',
    'a.[0]',
    '__proto__',
    'a.__proto__.b',
    'a[__proto__]',
  ])('refuses the path %j with a DefinitionError', (path) => {
    expect(() => ref('input', path)).toThrow(DefinitionError);
  });

  it('still parses good paths', () => {
    expect(ref('find', 'tasks[0].id').segments).toEqual(['tasks', 0, 'id']);
    expect(ref('find', '[1][2].x').segments).toEqual([1, 2, 'x']);
    expect(ref('find', 'a-b.c d.0').segments).toEqual(['a-b', 'c d', 0]);
    expect(ref('find').segments).toEqual([]);
  });
});

describe('out-of-range numbers are refused at definition', () => {
  const tool = (extra: Record<string, unknown>) => () =>
    defineTool({ name: 't', description: 'T', input: z.object({}), output: z.object({}), ...extra });
  const BAD_MS = [Infinity, -Infinity, NaN, -1, 2 ** 31, 1e300];

  const BAD_COUNT = [Infinity, NaN, -1, 1.5, 1e300];
  it.each([
    ['timeoutMs', BAD_MS, (v: number) => ({ timeoutMs: v })],
    ['expectedDurationMs', BAD_MS, (v: number) => ({ expectedDurationMs: v })],
    ['rateLimit.intervalMs', BAD_MS, (v: number) => ({ rateLimit: { limit: 1, intervalMs: v, per: 'global' } })],
    [
      'rateLimit.limit',
      [...BAD_COUNT, 0],
      (v: number) => ({ rateLimit: { limit: v, intervalMs: 1000, per: 'global' } }),
    ],
    [
      'rateLimit.maxQueue',
      BAD_COUNT,
      (v: number) => ({ rateLimit: { limit: 1, intervalMs: 1000, per: 'global', maxQueue: v } }),
    ],
    ['retry.minDelayMs', BAD_MS, (v: number) => ({ retry: { minDelayMs: v } })],
    ['retry.maxDelayMs', BAD_MS, (v: number) => ({ retry: { maxDelayMs: v } })],
    ['retry.retries', BAD_COUNT, (v: number) => ({ retry: { retries: v } })],
    ['retry.factor', [Infinity, NaN, -1, 0.5], (v: number) => ({ retry: { factor: v } })],
  ] as const)('tool %s', (path, bad, spec) => {
    for (const v of bad)
      expect(
        issuesOf(tool(spec(v))).map((i) => i.path),
        `${path} = ${v}`,
      ).toEqual([path]);
  });

  it('accepts the largest timer value', () => {
    expect(
      tool({
        timeoutMs: 2 ** 31 - 1,
        rateLimit: { limit: 10, intervalMs: 2 ** 31 - 1, per: 'user' },
        retry: { maxDelayMs: 2 ** 31 - 1 },
      })().timeoutMs,
    ).toBe(2 ** 31 - 1);
  });

  it('step and chain timeoutMs', () => {
    for (const v of BAD_MS) {
      expect(
        issuesOf(() =>
          defineChain({ name: 'p', input, steps: [{ id: 'e', tool: echo, input: { value: 'x' }, timeoutMs: v }] }),
        ).map((i) => i.path),
      ).toEqual(['steps[0].timeoutMs']);
      expect(
        issuesOf(() =>
          defineChain({ name: 'p', input, timeoutMs: v, steps: [{ id: 'e', tool: echo, input: { value: 'x' } }] }),
        ).map((i) => i.path),
      ).toEqual(['timeoutMs']);
      expect(
        issuesOf(() =>
          defineChain({
            name: 'p',
            input,
            steps: [{ id: 'e', tool: echo, input: { value: 'x' }, retry: { maxDelayMs: v } }],
          }),
        ).map((i) => i.path),
      ).toEqual(['steps[0].retry.maxDelayMs']);
    }
    expect(
      issuesOf(() =>
        defineChain({ name: 'p', input, steps: [{ id: 'e', tool: echo, input: { value: 'x' }, timeoutMs: 2 ** 31 }] }),
      )[0]!.message,
    ).toBe('Expected `timeoutMs` to be a positive number of ms below 2^31.');
  });

  it('runner options', () => {
    const invoker = functionInvoker({});
    for (const v of BAD_MS) {
      expect(
        issuesOf(() => createRunner({ invoker, confirmationTtlMs: v })).map((i) => i.path),
        String(v),
      ).toEqual(['confirmationTtlMs']);
      expect(
        issuesOf(() => createRunner({ invoker, breaker: { openMs: v } })).map((i) => i.path),
        String(v),
      ).toEqual(['breaker.openMs']);
    }
    for (const v of [Infinity, NaN, -1, 0, 1.5, 1e300]) {
      expect(
        issuesOf(() => createRunner({ invoker, breaker: { threshold: v } })).map((i) => i.path),
        String(v),
      ).toEqual(['breaker.threshold']);
    }
  });
});

describe('the compiled plan of functions that see every earlier step', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a compute step after concurrent tool steps waits for all of them', async () => {
    vi.useFakeTimers();
    const slow = defineTool({
      name: 'slow',
      description: 'Slow',
      input: z.object({ value: z.string() }),
      output: z.object({ value: z.string() }),
      effect: 'read',
    });
    const invoker = createMockInvoker({
      echo: { ok: { value: 'e' }, delayMs: 30 },
      slow: (i: { value: string }) => new Promise((res) => setTimeout(() => res(i), i.value === 'late' ? 90 : 60)),
    });
    const seen: string[][] = [];
    const chain = defineChain({
      name: 'order',
      input,
      steps: [
        { id: 't1', tool: echo, input: { value: 'a' } },
        { id: 't2', tool: slow, input: { value: 'b' } },
        {
          id: 'c1',
          compute: (s) => {
            seen.push(Object.keys(s.results));
            return 1;
          },
        },
        { id: 't3', tool: slow, input: { value: 'late' } }, // no refs: starts at once, runs past c1
        { id: 't4', tool: echo, input: { value: ref('t1', 'value') } },
        {
          id: 'c2',
          compute: (s) => {
            seen.push(Object.keys(s.results).sort());
            return 2;
          },
        },
      ],
    });
    const runner = createRunner({ invoker });
    open.push(runner);
    const done = runner.run(chain, { text: '' });
    await vi.advanceTimersByTimeAsync(200);
    const r = await done;
    expect(r.status).toBe('completed');
    expect(seen).toEqual([
      ['t1', 't2'],
      ['c1', 't1', 't2', 't3', 't4'],
    ]);
    expect(r.trace.steps.find((s) => s.id === 't3')!.startedAt).toBe(
      r.trace.steps.find((s) => s.id === 't1')!.startedAt,
    );
  });

  it('compiles 10,000 compute steps into a plan of linear size', () => {
    const steps = Array.from({ length: 10_000 }, (_, i) => ({ id: `s${i}`, compute: () => i }));
    const chain = defineChain({ name: 'long', input, steps });
    expect(chain.plan.length).toBe(10_000);
    expect(chain.plan.reduce((n, p) => n + p.deps.length, 0)).toBeLessThan(20_000);
    expect(chain.plan[9_999]!.deps).toEqual([9_998]);
  });
});
