// The step-kind tables: every kind's planner is consulted for its steps, and the problems of all
// kinds come back in one DefinitionError, in step order, with the checks every step shares after
// its kind's own.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineChain, DefinitionError, ref, runChain, type DefinitionIssue } from 'chainkit';
import { createMockInvoker } from 'chainkit/testing';
import { count, echo, remove } from '../helpers.js';

function issuesOf(spec: unknown): Pick<DefinitionIssue, 'path' | 'message'>[] {
  try {
    defineChain(spec as never);
  } catch (e) {
    expect(e).toBeInstanceOf(DefinitionError);
    return (e as DefinitionError).issues.map(({ path, message }) => ({ path, message }));
  }
  throw new Error('expected a DefinitionError');
}

const input = z.object({ text: z.string() });

describe('step kinds', () => {
  it('lists the problems of every kind in one DefinitionError, in step order', () => {
    const issues = issuesOf({
      name: 'kinds',
      input,
      steps: [
        { id: 'c', tool: count, input: {} },
        { id: 't', tool: remove, input: { id: 42 }, retry: 'often' },
        { id: 's', select: { from: ref('c', 'n'), expect: 'some' } },
        { id: 'k', compute: 42, output: 'number', when: true },
        { id: 'two', tool: echo, compute: () => 1, input: { value: 'x' } },
        { id: 'none' },
      ],
    });
    expect(issues.map((i) => i.path)).toEqual([
      'steps[1].input.id',
      'steps[1].confirm',
      'steps[1].retry',
      'steps[2].select.from',
      'steps[2].select.from',
      'steps[2].select.expect',
      'steps[3].compute',
      'steps[3].output',
      'steps[3].when',
      'steps[4]',
      'steps[5]',
    ]);
    expect(issues[0]!.message).toMatch(/^literal 42 does not match the field/);
    expect(issues[2]!.message).toBe('Expected `retry` to be an object or false.');
    expect(issues[1]!.message).toBe(
      'tool remove is destructive: add `confirm: { prompt }`, or `confirm: false` to waive it explicitly.',
    );
    expect(issues[3]!.message).toBe('ref c.n is a number, not an array.');
    expect(issues[4]!.message).toBe("did you mean ref('c', 'items')? `where` is checked against its items.");
    expect(issues[6]!.message).toBe('Expected `compute` to be a function of the scope.');
    expect(issues.at(-2)!.message).toBe(
      'A step needs exactly one of `tool`, `select`, `compute`, `chain`, `forEach`, `branch`, `loop`, `sleep` or `waitFor`; got tool and compute.',
    );
    expect(issues.at(-1)!.message).toBe(
      'A step needs exactly one of `tool`, `select`, `compute`, `chain`, `forEach`, `branch`, `loop`, `sleep` or `waitFor`; got none.',
    );
  });

  it('plans and runs a step of every kind through its table entry', async () => {
    const chain = defineChain({
      name: 'every-kind',
      input,
      steps: [
        { id: 'c', tool: count, input: {} },
        {
          id: 'pick',
          select: { from: ref('c', 'items'), where: { label: { contains: ref('input', 'text') } }, expect: 'one' },
        },
        { id: 'len', compute: (s) => s.results.pick.label.length, output: z.number() },
      ],
    });
    expect(chain.plan.map((p) => p.kind)).toEqual(['tool', 'select', 'compute']);
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
    });
    const r = await runChain(chain, { text: 'bet' }, { invoker });
    expect(r.status === 'completed' && r.output).toBe(4);
    expect(invoker.callsTo('count')).toHaveLength(1);
  });
});
