import { describe, expect, it } from 'vitest';
import {
  createRunner,
  defineChain,
  listTasks,
  ref,
  findAndComplete,
  findAndDelete,
  findAndUpdate,
  taskErrors,
  taskTools,
} from 'chainkit';
import { classifyError } from '../../src/errors/classify.js';
import { createTaskStore, fixtures } from 'chainkit/testing';
import { z } from 'zod';

const alice = { context: { userId: fixtures.alice } };
const missingId = '99999999-9999-4999-8999-999999999999';

describe('task user messages', () => {
  const store = createTaskStore({ users: fixtures.users });
  const runner = createRunner({ invoker: store.invoker, tools: [...taskTools] });

  it('a task id the backend does not know says so and offers to list the tasks', async () => {
    store.reset();
    const r = await runner.invoke('complete_task', { user_id: fixtures.alice, task_id: missingId }, alice);
    if (r.status !== 'failed') throw new Error(r.status);
    expect(r.error).toMatchObject({ category: 'not_found', code: 'invalid_task_id' });
    expect(r.error.userMessage).toBe("I couldn't find that task. Would you like me to list your tasks?");
    expect(classifyError({ error: 'task_not_found' }, [taskErrors]).userMessage).toBe(r.error.userMessage);
  });

  it('a match no task has says so and offers to list the tasks, in every find-and-act chain', async () => {
    store.reset();
    const results = [
      await runner.run(findAndComplete, { match: 'walk the llama' }, alice),
      await runner.run(findAndDelete, { match: 'walk the llama' }, alice),
      await runner.run(findAndUpdate, { match: 'walk the llama', title: 'x' }, alice),
    ];
    for (const r of results) {
      if (r.status !== 'failed') throw new Error(r.status);
      expect(r.error).toMatchObject({ category: 'not_found', code: 'no_match' });
      expect(r.error.userMessage).toBe("I couldn't find that task. Would you like me to list your tasks?");
    }
  });

  it('an in-band task_already_completed is recognised by the task domain and says the task is already completed', async () => {
    store.reset();
    const task = store.tasks(fixtures.alice).find((t) => t.completed)!;
    store.failNext('complete_task', {
      status: 'error',
      error: 'task_already_completed',
      message: `Task ${task.task_id} is already completed.`,
    });
    const r = await runner.invoke('complete_task', { user_id: fixtures.alice, task_id: task.task_id }, alice);
    if (r.status !== 'failed') throw new Error(r.status);
    expect(r.error).toMatchObject({
      category: 'conflict',
      code: 'task_already_completed',
      retryable: false,
      attempts: 1,
    });
    expect(r.error.userMessage).toBe('That task is already completed.');
    expect(classifyError({ error: 'task_already_completed' }, [taskErrors]).category).toBe('conflict');
  });

  it('a rate limit says how many seconds to wait', async () => {
    store.reset();
    store.failNext('list_tasks', {
      status: 'error',
      error: 'rate_limit_exceeded',
      message: 'Slow down.',
      retry_after: 7,
    });
    const r = await runner.invoke(
      'list_tasks',
      { user_id: fixtures.alice, status: 'all' },
      { ...alice, timeoutMs: 2000 },
    );
    if (r.status !== 'failed') throw new Error(r.status);
    expect(r.error).toMatchObject({ category: 'rate_limited', retryAfterMs: 7000 });
    expect(r.error.userMessage).toBe('Too many requests right now. Please wait 7 seconds and try again.');
  });

  it('a select step without noMatch keeps the generic sentence; a noMatch that is no string is a definition error', async () => {
    store.reset();
    const find = { id: 'find', tool: listTasks, input: { user_id: ref('context', 'userId'), status: 'all' as const } };
    const common = { description: 'x', input: z.object({}), context: z.object({ userId: z.uuid() }) };
    const plain = defineChain({
      name: 'plain_pick',
      ...common,
      steps: [find, { id: 'pick', select: { from: ref('find', 'tasks'), where: () => false, expect: 'one' } }],
    });
    const r = await runner.run(plain, {}, alice);
    expect(r.status === 'failed' && r.error.userMessage).toBe("I couldn't find what you asked for.");
    expect(() =>
      defineChain({
        name: 'bad_pick',
        ...common,
        steps: [
          find,
          {
            id: 'pick',
            select: { from: ref('find', 'tasks'), where: () => false, expect: 'one', noMatch: 5 as never },
          },
        ],
      }),
    ).toThrow(/noMatch/);
  });
});
