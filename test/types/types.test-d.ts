import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import {
  createRunner, defineChain, defineTool, findAndDelete, ref, runChain, taskSummary,
  type ChainInput, type ChainOutput, type RunResult, type TaskSummary, type ToolInput, type ToolOutput,
} from 'chainkit';

const lookup = defineTool({
  name: 'lookup', description: 'l', input: z.object({ id: z.string() }), output: z.object({ name: z.string(), age: z.number() }), effect: 'read',
});

describe('types users rely on', () => {
  it('tools carry their schema types', () => {
    expectTypeOf<ToolInput<typeof lookup>>().toEqualTypeOf<{ id: string }>();
    expectTypeOf<ToolOutput<typeof lookup>>().toEqualTypeOf<{ name: string; age: number }>();
  });

  it('chains infer input, context and output; step functions see typed input and context', () => {
    const chain = defineChain({
      name: 'typed',
      input: z.object({ id: z.string(), loud: z.boolean() }),
      context: z.object({ userId: z.string() }),
      steps: [
        { id: 'l', tool: lookup, input: (s) => {
          expectTypeOf(s.input.loud).toEqualTypeOf<boolean>();
          expectTypeOf(s.context.userId).toEqualTypeOf<string>();
          return { id: s.input.id };
        } },
        { id: 'x', tool: lookup, input: { id: ref('l', 'name') }, when: (s) => s.input.loud },
      ],
      output: (s) => ({ upper: String(s.results.l.name).toUpperCase(), n: 1 }),
    });
    expectTypeOf<ChainInput<typeof chain>>().toEqualTypeOf<{ id: string; loud: boolean }>();
    expectTypeOf<ChainOutput<typeof chain>>().toEqualTypeOf<{ upper: string; n: number }>();
  });

  it('runChain and runner.run infer input and output types', async () => {
    const invoker = async () => ({});
    const r = await runChain(taskSummary, {}, { invoker, context: { userId: 'u' } });
    if (r.status === 'completed') expectTypeOf(r.output).toEqualTypeOf<TaskSummary>();
    const runner = createRunner({ invoker });
    // @ts-expect-error — findAndDelete needs { match: string }
    void runner.run(findAndDelete, { title: 'x' });
    const d = await runner.run(findAndDelete, { match: 'milk' }, { context: { userId: 'u' } });
    expectTypeOf(d).toEqualTypeOf<RunResult<{ task_id: string; title: string; deleted: true }>>();
  });

  it('results narrow on status', () => {
    const check = (r: RunResult<number>) => {
      switch (r.status) {
        case 'completed': expectTypeOf(r.output).toEqualTypeOf<number>(); break;
        case 'awaiting_confirmation': expectTypeOf(r.resumeToken).toEqualTypeOf<string>(); break;
        case 'declined': expectTypeOf(r.step).toEqualTypeOf<string>(); break;
        case 'failed': expectTypeOf(r.error.category).toExtend<string>(); expectTypeOf(r.compensated).toEqualTypeOf<string[]>(); break;
      }
    };
    void check;
  });
});
