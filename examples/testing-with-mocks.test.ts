// Testing your chains: script the tools with createMockInvoker and drive time with fake timers.
// Given the tools first, the script is typed: a tool name, an output field or a function's input
// that does not exist is a compile error.
// Run: npx vitest run examples/testing-with-mocks.test.ts
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { createRunner, findAndUpdate, listTasks, updateTask, type Task } from 'chainkit';
import { createMockInvoker, fixtures } from 'chainkit/testing';

const task: Task = {
  task_id: '3f0c8a5e-1b2d-4c6e-9f7a-8b9c0d1e2f3a',
  user_id: fixtures.alice,
  title: 'Buy milk',
  completed: false,
  priority: 'medium',
  created_at: '2026-01-01T00:00:00Z',
};
const context = { userId: fixtures.alice };

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

it('retries a 503 with backoff, then renames the task', async () => {
  const invoker = createMockInvoker([listTasks, updateTask], {
    list_tasks: { ok: { tasks: [task] } },
    update_task: [
      { error: Object.assign(new Error('Service Unavailable'), { status: 503 }) },
      { ok: { task: { ...task, title: 'Buy oat milk' } } },
    ],
  });
  const runner = createRunner({ invoker, random: () => 0 }); // no jitter: exact delays
  const pending = runner.run(findAndUpdate, { match: 'milk', title: 'Buy oat milk' }, { context });
  await vi.runAllTimersAsync(); // plays the 500 ms backoff instantly
  const result = await pending;

  expect(result.status === 'completed' && result.output.title).toBe('Buy oat milk');
  expect(invoker.callsTo('update_task').map((c) => c.attempt)).toEqual([1, 2]);
  expect(invoker.callsTo('update_task')[1]!.at - invoker.callsTo('update_task')[0]!.at).toBe(500);
  expect(invoker.callsTo('update_task')[0]!.input).toEqual({
    user_id: fixtures.alice,
    task_id: task.task_id,
    title: 'Buy oat milk',
  });
});

it('times out a tool that never answers', async () => {
  const invoker = createMockInvoker([listTasks, updateTask], { list_tasks: { hang: true } });
  const pending = createRunner({ invoker }).run(findAndUpdate, { match: 'milk', title: 'x' }, { context });
  await vi.advanceTimersByTimeAsync(7000); // the chain's deadline
  const result = await pending;
  expect(result.status === 'failed' && result.error).toMatchObject({ category: 'timeout', step: 'find' });
  expect(invoker.calls.length).toBe(2); // first attempt timed out at 3 s, the retry (6 s timeout) hit the deadline
});
