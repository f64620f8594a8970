// Bring your own zod: tools and chains defined with zod/mini or another zod 4 copy define, check, run and validate.
import { describe, expect, it } from 'vitest';
import * as zm41 from 'zod-4-1/mini';
import { z as z41 } from 'zod-4-1';
import * as zm from 'zod/mini';
import {
  defineChain,
  DefinitionError,
  defineTool,
  createToolRegistry,
  functionInvoker,
  ref,
  runChain,
  type Schema,
} from 'chainkit';
import { isSchema, schemaToJSONSchema } from '../../src/define/schema.js';

interface Schemas {
  listIn: Schema;
  listOut: Schema;
  renameIn: Schema;
  renameOut: Schema;
  chainIn: Schema;
  ctx: Schema;
}

// The same schemas in each flavour: classic zod 4.1 (another copy than chainkit's), zod/mini of both copies.
const flavours: Record<string, () => Schemas> = {
  'zod 4.1 (another copy)': () => ({
    listIn: z41.object({ user_id: z41.string() }),
    listOut: z41.object({ tasks: z41.array(z41.object({ task_id: z41.string(), title: z41.string() })) }),
    renameIn: z41.object({ task_id: z41.string(), title: z41.string().min(1) }),
    renameOut: z41.object({ ok: z41.boolean() }),
    chainIn: z41.object({ match: z41.string(), title: z41.string() }),
    ctx: z41.object({ userId: z41.string() }),
  }),
  'zod/mini': () => ({
    listIn: zm.object({ user_id: zm.string() }),
    listOut: zm.object({ tasks: zm.array(zm.object({ task_id: zm.string(), title: zm.string() })) }),
    renameIn: zm.object({ task_id: zm.string(), title: zm.string().check(zm.minLength(1)) }),
    renameOut: zm.object({ ok: zm.boolean() }),
    chainIn: zm.object({ match: zm.string(), title: zm.string() }),
    ctx: zm.object({ userId: zm.string() }),
  }),
  'zod/mini 4.1 (another copy)': () => ({
    listIn: zm41.object({ user_id: zm41.string() }),
    listOut: zm41.object({ tasks: zm41.array(zm41.object({ task_id: zm41.string(), title: zm41.string() })) }),
    renameIn: zm41.object({ task_id: zm41.string(), title: zm41.string().check(zm41.minLength(1)) }),
    renameOut: zm41.object({ ok: zm41.boolean() }),
    chainIn: zm41.object({ match: zm41.string(), title: zm41.string() }),
    ctx: zm41.object({ userId: zm41.string() }),
  }),
};

const TASKS = [
  { task_id: 't1', title: 'Buy milk' },
  { task_id: 't2', title: 'Call mum' },
];

function setup(s: Schemas) {
  const list = defineTool({
    name: 'list_tasks',
    description: 'List tasks',
    input: s.listIn,
    output: s.listOut,
    effect: 'read',
  });
  const rename = defineTool({
    name: 'rename_task',
    description: 'Rename a task',
    input: s.renameIn,
    output: s.renameOut,
  });
  const steps = (from: string) => [
    { id: 'find', tool: list, input: { user_id: ref('context', 'userId') } },
    {
      id: 'target',
      select: {
        from: ref('find', from),
        where: { title: { contains: ref('input', 'match') } },
        expect: 'one' as const,
      },
    },
    { id: 'rename', tool: rename, input: { task_id: ref('target', 'task_id'), title: ref('input', 'title') } },
  ];
  const chain = defineChain({ name: 'rename_by_title', input: s.chainIn, context: s.ctx, steps: steps('tasks') });
  return { list, rename, chain, steps };
}

describe.each(Object.entries(flavours))('schemas from %s', (_name, make) => {
  it('are schemas: tools and a chain define, and the chain runs with validated input and output', async () => {
    const s = make();
    expect(isSchema(s.listIn)).toBe(true);
    const { chain } = setup(s);
    const calls: unknown[] = [];
    const invoker = functionInvoker({
      list_tasks: () => ({ tasks: TASKS }),
      rename_task: (input: unknown) => {
        calls.push(input);
        return { ok: true };
      },
    });
    const r = await runChain(chain, { match: 'milk', title: 'Buy oat milk' }, { invoker, context: { userId: 'u1' } });
    expect(r.status).toBe('completed');
    expect(calls).toEqual([{ task_id: 't1', title: 'Buy oat milk' }]);
  });

  it('validate at run time: chain input, context, tool input and tool output', async () => {
    const { chain } = setup(make());
    const good = functionInvoker({ list_tasks: () => ({ tasks: TASKS }), rename_task: () => ({ ok: true }) });
    const badInput = await runChain(chain, { match: 5 } as never, { invoker: good, context: { userId: 'u1' } });
    expect(badInput.status === 'failed' && badInput.error).toMatchObject({
      category: 'invalid_input',
      code: 'invalid_input',
      message: expect.stringContaining("at 'match'"),
    });
    const badContext = await runChain(chain, { match: 'milk', title: 'x' }, { invoker: good, context: {} as never });
    expect(badContext.status === 'failed' && badContext.error).toMatchObject({ code: 'invalid_context' });
    const badStepInput = await runChain(
      chain,
      { match: 'milk', title: '' },
      { invoker: good, context: { userId: 'u1' } },
    );
    expect(badStepInput.status === 'failed' && badStepInput.error).toMatchObject({
      code: 'invalid_step_input',
      message: expect.stringContaining("at 'title'"),
    });
    const badOutput = functionInvoker({
      list_tasks: () => ({ tasks: [{ task_id: 't1', title: 5 }] }),
      rename_task: () => ({ ok: true }),
    });
    const r = await runChain(chain, { match: 'milk', title: 'x' }, { invoker: badOutput, context: { userId: 'u1' } });
    expect(r.status === 'failed' && r.error).toMatchObject({
      category: 'validation',
      code: 'invalid_output',
      message: expect.stringContaining("at 'tasks[0].title'"),
    });
  });

  it('are introspected for the static checks of defineChain', () => {
    const s = make();
    const { steps } = setup(s);
    let error: unknown;
    try {
      defineChain({ name: 'bad', input: s.chainIn, context: s.ctx, steps: steps('taskz') });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(DefinitionError);
    expect((error as DefinitionError).issues).toContainEqual(
      expect.objectContaining({
        path: 'steps[1].select.from',
        message: expect.stringContaining("path 'taskz' does not exist"),
      }),
    );
  });

  it('export JSON Schema for the model', () => {
    const { list } = setup(make());
    expect(schemaToJSONSchema(list.input)).toMatchObject({
      type: 'object',
      properties: { user_id: { type: 'string' } },
      required: ['user_id'],
    });
    const [def] = createToolRegistry([list], { tiers: { simple: ['list_tasks'] } }).toJSONSchema('simple');
    expect(def).toMatchObject({
      name: 'list_tasks',
      parameters: { type: 'object', properties: { user_id: { type: 'string' } } },
    });
  });
});
