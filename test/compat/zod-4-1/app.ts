// An app on zod 4.1 defines tools and a chain with its own schemas: must type-check against chainkit.
import { z } from 'zod';
import * as zm from 'zod/mini';
import {
  chain,
  createRunner,
  defineChain,
  defineTool,
  functionInvoker,
  ref,
  type ChainOutput,
  type ToolOutput,
} from 'chainkit';

const Task = z.object({ task_id: z.string(), title: z.string(), done: z.boolean() });

export const listTasks = defineTool({
  name: 'list_tasks',
  description: "List a user's tasks",
  input: z.object({ user_id: z.string(), status: z.enum(['all', 'open']).default('all') }),
  output: z.object({ tasks: z.array(Task) }),
  effect: 'read',
});

export const renameTask = defineTool({
  name: 'rename_task',
  description: 'Rename a task',
  input: z.object({ task_id: z.string(), title: z.string().min(1) }),
  output: z.object({ task: Task }),
});

export const rename = defineChain({
  name: 'rename',
  input: z.object({ match: z.string(), title: z.string() }),
  context: z.object({ userId: z.string() }),
  steps: [
    { id: 'find', tool: listTasks, input: { user_id: ref('context', 'userId') } },
    {
      id: 'target',
      select: { from: ref('find', 'tasks'), where: { title: { contains: ref('input', 'match') } }, expect: 'one' },
    },
    { id: 'rename', tool: renameTask, input: { task_id: ref('target', 'task_id'), title: ref('input', 'title') } },
  ],
  output: (s) => ({ id: s.results.rename.task.task_id, before: s.results.target.title }),
});

export const built = chain('rename_built', {
  input: z.object({ match: z.string() }),
  context: z.object({ userId: z.string() }),
})
  .tool('find', listTasks, (r) => ({ user_id: r('context', 'userId') }))
  .select('target', (r) => ({
    from: r('find', 'tasks'),
    where: { title: { contains: r('input', 'match') } },
    expect: 'one',
  }))
  .output((s) => s.results.target.done);

export const count = defineTool({
  name: 'count',
  description: 'Count',
  input: zm.object({ n: zm.number() }),
  output: zm.object({ total: zm.number() }),
  effect: 'read',
});

// The types flow from zod 4.1 schemas (classic and mini): a wrong one is a compile error here.
const listed: ToolOutput<typeof listTasks> = { tasks: [{ task_id: 't', title: 'x', done: false }] };
const counted: ToolOutput<typeof count> = { total: 1 };
// @ts-expect-error -- `tasks` is an array of tasks, so the output type is not `unknown`/`any`
const wrong: ToolOutput<typeof listTasks> = { tasks: 5 };
const out: ChainOutput<typeof rename> = { id: 't', before: 'x' };
const flag: ChainOutput<typeof built> = true;

export async function main(): Promise<void> {
  const runner = createRunner({
    invoker: functionInvoker([listTasks, renameTask], {
      list_tasks: () => listed,
      rename_task: (input) => ({ task: { task_id: input.task_id, title: input.title, done: false } }),
    }),
    tools: [listTasks, renameTask],
  });
  const result = await runner.run(rename, { match: 'x', title: 'y' }, { context: { userId: 'u1' } });
  if (result.status === 'completed') {
    const id: string = result.output.id;
    void [id, out, flag, counted, wrong];
  }
}
