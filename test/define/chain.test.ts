import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineChain, DefinitionError, ref, type DefinitionIssue } from 'chainkit';
import { count, echo, remove } from '../helpers.js';

function issuesOf(spec: unknown): DefinitionIssue[] {
  try {
    defineChain(spec as never);
  } catch (e) {
    expect(e).toBeInstanceOf(DefinitionError);
    return [...(e as DefinitionError).issues];
  }
  throw new Error('expected a DefinitionError');
}

const input = z.object({ text: z.string(), n: z.number() });
const context = z.object({ userId: z.uuid() });
const ok = { id: 'c', tool: count, input: {} };

describe('defineChain static validation', () => {
  it('accepts a valid chain and plans dependencies from refs', () => {
    const chain = defineChain({
      name: 'valid',
      input,
      context,
      steps: [
        ok,
        { id: 'e1', tool: echo, input: { value: ref('input', 'text') } },
        {
          id: 'pick',
          select: { from: ref('c', 'items'), where: { label: { contains: ref('input', 'text') } }, expect: 'first' },
        },
        { id: 'e2', tool: echo, input: { value: ref('pick', 'label') } },
        { id: 'sum', compute: (s) => s.results.e2.value.length },
      ],
    });
    // `sum` sees every earlier step: it waits for e1 and e2, and through them for c and pick.
    expect(chain.plan.map((p) => p.deps)).toEqual([[], [], [0], [2], [1, 3]]);
    expect(chain.fingerprint).toMatch(/^[0-9a-f]{32}$/);
  });

  // Each case: a mistake, the path it is reported at, and words the message must contain.
  const cases: [string, unknown, string, RegExp][] = [
    ['invalid chain name', { name: 'no spaces allowed', input, steps: [ok] }, 'name', /chain name/],
    ['input not a schema', { name: 'x', input: { text: 'string' }, steps: [ok] }, 'input', /zod schema/],
    ['no steps', { name: 'x', input, steps: [] }, 'steps', /non-empty/],
    ['invalid step id', { name: 'x', input, steps: [{ ...ok, id: '9lives' }] }, 'steps[0].id', /step id/],
    ['reserved step id', { name: 'x', input, steps: [{ ...ok, id: 'input' }] }, 'steps[0].id', /reserved/],
    ['duplicate step id', { name: 'x', input, steps: [ok, ok] }, 'steps[1].id', /Duplicate step id 'c'/],
    ['step with two kinds', { name: 'x', input, steps: [{ ...ok, compute: () => 1 }] }, 'steps[0]', /exactly one/],
    ['step with no kind', { name: 'x', input, steps: [{ id: 'a' }] }, 'steps[0]', /got none/],
    [
      'tool not from defineTool',
      { name: 'x', input, steps: [{ id: 'a', tool: { name: 'fake' }, input: {} }] },
      'steps[0].tool',
      /defineTool/,
    ],
    [
      'ref to unknown step',
      { name: 'x', input, steps: [{ id: 'a', tool: echo, input: { value: ref('ghost', 'v') } }] },
      'steps[0].input.value',
      /unknown step 'ghost'/,
    ],
    [
      'ref to a later step',
      {
        name: 'x',
        input,
        steps: [
          { id: 'a', tool: echo, input: { value: ref('b', 'value') } },
          { id: 'b', tool: echo, input: { value: 'x' } },
        ],
      },
      'steps[0].input.value',
      /does not come before/,
    ],
    [
      'ref path missing in step output',
      { name: 'x', input, steps: [ok, { id: 'a', tool: echo, input: { value: ref('c', 'items[0].nope') } }] },
      'steps[1].input.value',
      /path 'items\[0\]\.nope' does not exist in the output of step 'c' \(tool count\)/,
    ],
    [
      'ref path missing in chain input',
      { name: 'x', input, steps: [{ id: 'a', tool: echo, input: { value: ref('input', 'txt') } }] },
      'steps[0].input.value',
      /does not exist in the chain input/,
    ],
    [
      'context ref without context schema',
      { name: 'x', input, steps: [{ id: 'a', tool: echo, input: { value: ref('context', 'userId') } }] },
      'steps[0].input.value',
      /no `context` schema/,
    ],
    [
      'number into a uuid string',
      {
        name: 'x',
        input,
        context,
        steps: [{ id: 'a', tool: remove, input: { id: ref('input', 'n') }, confirm: false }],
      },
      'steps[0].input.id',
      /is a number but 'id' expects a string/,
    ],
    [
      'required field unmapped',
      { name: 'x', input, steps: [{ id: 'a', tool: echo, input: {} }] },
      'steps[0].input.value',
      /required field 'value'/,
    ],
    [
      'unknown input field',
      { name: 'x', input, steps: [{ id: 'a', tool: echo, input: { value: 'v', valeu: 'typo' } }] },
      'steps[0].input.valeu',
      /not a field of echo's input/,
    ],
    [
      'literal that fails the field schema',
      { name: 'x', input, steps: [{ id: 'a', tool: remove, input: { id: 'not-a-uuid' }, confirm: false }] },
      'steps[0].input.id',
      /does not match the field/,
    ],
    [
      'destructive step without confirm',
      { name: 'x', input, steps: [{ id: 'a', tool: remove, input: { id: '6f1d2c3b-4a5e-4f60-8a7b-1c2d3e4f5a6b' } }] },
      'steps[0].confirm',
      /destructive/,
    ],
    [
      'select from a non-array',
      { name: 'x', input, steps: [ok, { id: 's', select: { from: ref('c', 'n'), expect: 'one' } }] },
      'steps[1].select.from',
      /is a number, not an array/,
    ],
    [
      'select from not a ref',
      { name: 'x', input, steps: [ok, { id: 's', select: { from: 'c.items', expect: 'one' } }] },
      'steps[1].select.from',
      /ref/,
    ],
    [
      'bad select expect',
      { name: 'x', input, steps: [ok, { id: 's', select: { from: ref('c', 'items'), expect: 'many' } }] },
      'steps[1].select.expect',
      /'one', 'first' or 'all'/,
    ],
    [
      'select where on a missing field',
      {
        name: 'x',
        input,
        steps: [ok, { id: 's', select: { from: ref('c', 'items'), where: { title: { equals: 'a' } }, expect: 'one' } }],
      },
      'steps[1].select.where.title',
      /not a field of the selected items/,
    ],
    [
      'unknown matcher op',
      {
        name: 'x',
        input,
        steps: [ok, { id: 's', select: { from: ref('c', 'items'), where: { label: { like: 'a' } }, expect: 'one' } }],
      },
      'steps[1].select.where.label',
      /equals, contains, in/,
    ],
    ['when not a function', { name: 'x', input, steps: [{ ...ok, when: true }] }, 'steps[0].when', /function/],
    ['bad step timeout', { name: 'x', input, steps: [{ ...ok, timeoutMs: 0 }] }, 'steps[0].timeoutMs', /positive/],
    ['bad confirm', { name: 'x', input, steps: [{ ...ok, confirm: { text: 'sure?' } }] }, 'steps[0].confirm', /prompt/],
    [
      'compute not a function',
      { name: 'x', input, steps: [{ id: 'a', compute: 42 }] },
      'steps[0].compute',
      /function of the scope/,
    ],
    [
      'precondition without message',
      { name: 'x', input, steps: [ok], preconditions: [{ check: () => true }] },
      'preconditions[0].message',
      /message/,
    ],
    [
      'input mapping neither object nor function',
      { name: 'x', input, steps: [{ id: 'a', tool: echo, input: 'hello' }] },
      'steps[0].input',
      /object of literals and refs/,
    ],
  ];

  for (const [name, spec, path, message] of cases) {
    it(`reports: ${name}`, () => {
      const issues = issuesOf(spec);
      const hit = issues.find((i) => i.path === path);
      expect(hit, `issues were: ${JSON.stringify(issues)}`).toBeDefined();
      expect(hit!.message).toMatch(message);
    });
  }

  it('lists every problem in one error', () => {
    const issues = issuesOf({
      name: 'multi',
      input,
      steps: [
        { id: 'a', tool: echo, input: { value: ref('ghost') } },
        { id: 'a', tool: remove, input: { id: ref('input', 'n') } },
      ],
    });
    expect(issues.map((i) => i.path)).toEqual(
      expect.arrayContaining(['steps[0].input.value', 'steps[1].id', 'steps[1].input.id', 'steps[1].confirm']),
    );
    expect(issues.length).toBeGreaterThanOrEqual(4);
  });

  it('lets a transform convert an incompatible type', () => {
    expect(() =>
      defineChain({
        name: 'ok',
        input,
        steps: [{ id: 'a', tool: echo, input: { value: ref('input', 'n').transform((n: number) => String(n)) } }],
      }),
    ).not.toThrow();
  });

  it('changes the fingerprint when the definition changes', () => {
    const make = (prompt: string) =>
      defineChain({
        name: 'fp',
        input,
        context,
        steps: [{ id: 'a', tool: remove, input: { id: ref('context', 'userId') }, confirm: { prompt } }],
      });
    expect(make('Sure?').fingerprint).toBe(make('Sure?').fingerprint);
    expect(make('Sure?').fingerprint).not.toBe(make('Really sure?').fingerprint);
  });
});

describe('definition messages say what to write instead', () => {
  const messageAt = (spec: unknown, path: string): string => {
    const issues = issuesOf(spec);
    const hit = issues.find((i) => i.path === path);
    expect(hit, `issues were: ${JSON.stringify(issues)}`).toBeDefined();
    return hit!.message;
  };

  it('a missing ref path lists the fields that do exist', () => {
    expect(
      messageAt(
        { name: 'x', input, steps: [{ id: 'a', tool: echo, input: { value: ref('input', 'txt') } }] },
        'steps[0].input.value',
      ),
    ).toBe("path 'txt' does not exist in the chain input (fields: text, n).");
    expect(
      messageAt(
        { name: 'x', input, steps: [ok, { id: 'a', tool: echo, input: { value: ref('c', 'items.0.nope') } }] },
        'steps[1].input.value',
      ),
    ).toBe("path 'items.0.nope' does not exist in the output of step 'c' (tool count) (fields of items.0: id, label).");
  });

  it("a field read on an array suggests an index ('contacts.id' → 'contacts.0.id')", () => {
    expect(
      messageAt(
        { name: 'x', input, steps: [ok, { id: 'a', tool: echo, input: { value: ref('c', 'items.label') } }] },
        'steps[1].input.value',
      ),
    ).toBe(
      "path 'items.label' does not exist in the output of step 'c' (tool count): 'items' is an array, so an index comes next; did you mean 'items.0.label'?",
    );
  });

  it('a bad select.from does not hide the where errors', () => {
    const where = { lable: { equals: 'x' }, label: { like: 'x' } };
    for (const from of [ref('c'), ref('c', 'itemz'), ref('c', 'n')]) {
      const issues = issuesOf({ name: 'x', input, steps: [ok, { id: 's', select: { from, where, expect: 'one' } }] });
      const at = (path: string) =>
        issues
          .filter((i) => i.path === path)
          .map((i) => i.message)
          .join(' | ');
      expect(at('steps[1].select.from')).toMatch(/did you mean ref\('c', 'items'\)\?/);
      expect(at('steps[1].select.where.lable')).toMatch(
        /'lable' is not a field of the selected items \(fields: id, label\)/,
      );
      expect(at('steps[1].select.where.label')).toMatch(/Expected one of equals, contains, in; got like/);
    }
  });
});
