// The built-in completeAll chain (§12): a forEach of complete_one over the pending tasks that match,
// at most 4 at once, confirmed first when more than 10 would change.
import { describe, expect, it } from 'vitest';
import { completeAll, createRunner, taskTools, type ToolCall } from 'chainkit';
import { createTaskStore, fixtures } from 'chainkit/testing';

const alice = { context: { userId: fixtures.alice } };

describe('completeAll', () => {
  it('completes every pending task whose title matches, and no other', async () => {
    const store = createTaskStore({ users: fixtures.users });
    const runner = createRunner({ invoker: store.invoker, tools: [...taskTools], chains: [completeAll] });
    const r = await runner.run(completeAll, { match: 'buy' }, alice);
    expect(r.status === 'completed' && r.output.completed.map((t) => t.title)).toEqual(['Buy groceries', 'Buy milk']);
    expect(r.status === 'completed' && r.output.failed).toEqual([]);
    expect(
      store
        .tasks(fixtures.alice)
        .filter((t) => !t.completed)
        .map((t) => t.title),
    ).toEqual(['Dentist appointment']);
    expect(store.callCount.complete_task).toBe(2);
    await runner.close();
  });

  it('completes every pending task without `match`, at most 4 in flight', async () => {
    const many = Array.from({ length: 9 }, (_, i) => ({ title: `Chore ${i}` }));
    const store = createTaskStore({ users: { [fixtures.alice]: [...many, { title: 'Old', completed: true }] } });
    let inFlight = 0;
    let peak = 0;
    const invoker = async (call: ToolCall): Promise<unknown> => {
      if (call.tool !== 'complete_task') return store.invoker(call);
      peak = Math.max(peak, ++inFlight);
      await new Promise((r) => setTimeout(r, 2));
      inFlight--;
      return store.invoker(call);
    };
    const runner = createRunner({ invoker, tools: [...taskTools] });
    const r = await runner.run(completeAll, {}, alice);
    expect(r.status === 'completed' && r.output.completed).toHaveLength(9);
    expect(store.tasks(fixtures.alice).every((t) => t.completed)).toBe(true);
    expect(peak).toBe(4);
    await runner.close();
  });

  it('asks first when more than 10 would change; declined changes nothing, approved completes all', async () => {
    const many = Array.from({ length: 12 }, (_, i) => ({ title: `Chore ${i}` }));
    const store = createTaskStore({ users: { [fixtures.alice]: many } });
    const runner = createRunner({ invoker: store.invoker, tools: [...taskTools], chains: [completeAll] });
    const r = await runner.run(completeAll, {}, alice);
    if (r.status !== 'awaiting_confirmation') throw new Error(`expected a gate, got ${r.status}`);
    expect(r.confirmation).toMatchObject({
      step: 'many',
      tool: 'complete_one',
      prompt: 'Mark all 12 pending tasks as done?',
    });
    expect(store.callCount.complete_task ?? 0).toBe(0);
    const no = await runner.run(completeAll, {}, alice);
    if (no.status !== 'awaiting_confirmation') throw new Error(no.status);
    expect((await runner.resume(no.resumeToken, { approved: false }, alice)).status).toBe('declined');
    expect(store.callCount.complete_task ?? 0).toBe(0);
    const done = await runner.resume(r.resumeToken, { approved: true }, alice);
    expect(done.status === 'completed' && (done.output as { completed: unknown[] }).completed).toHaveLength(12);
    expect(store.callCount.complete_task).toBe(12);
    await runner.close();
  });

  it('reports a task that fails and still completes the others', async () => {
    const store = createTaskStore({ users: { [fixtures.alice]: [{ title: 'A' }, { title: 'B' }, { title: 'C' }] } });
    store.failNext('complete_task', { status: 'error', error: 'permission_denied', message: 'Not yours' });
    const runner = createRunner({ invoker: store.invoker, tools: [...taskTools] });
    const r = await runner.run(completeAll, {}, alice);
    expect(r.status === 'completed' && r.output.completed.map((t) => t.title)).toEqual(['B', 'C']);
    expect(r.status === 'completed' && r.output.failed).toEqual([
      { task_id: expect.any(String), title: 'A', error: expect.objectContaining({ category: 'permission_denied' }) },
    ]);
    await runner.close();
  });
});
