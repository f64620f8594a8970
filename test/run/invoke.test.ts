import { describe, expect, it } from 'vitest';
import { createRunner, taskTools, formatTrace } from 'chainkit';
import { createTaskStore, fixtures } from 'chainkit/testing';

describe('runner.invoke', () => {
  const store = createTaskStore({ users: fixtures.users });
  const runner = createRunner({ invoker: store.invoker, tools: [...taskTools] });

  it('calls one tool by name through the pipeline, with a trace and metadata', async () => {
    const r = await runner.invoke('list_tasks', { user_id: fixtures.bob, status: 'all' });
    expect(r.status === 'completed' && r.output).toMatchObject({
      tasks: [{ title: 'Fix the bike' }, { title: 'File taxes' }],
    });
    expect(r.trace.steps).toMatchObject([{ id: 'list_tasks', tool: 'list_tasks', status: 'success', attempts: 1 }]);
    expect(r.metadata.context).toEqual({ tool: 'list_tasks' });
    expect(r.metadata.timing).toMatchObject({
      confidence: 'low',
      timeoutMs: 3000,
      willTimeout: false,
      estimatedDurationMs: r.trace.totalLatencyMs,
    });
    expect(
      createRunner({ invoker: store.invoker, tools: [...taskTools] }).timing.estimate('list_tasks').estimatedDurationMs,
    ).toBe(150); // the declared prior
    expect(r.metadata.suggestions.nextTools.map((s) => s.tool)).toEqual(['update_task', 'complete_task']);
    expect(formatTrace(r.trace)).toContain('list_tasks');
  });

  it('validates input and reports unknown tools as not_found', async () => {
    const bad = await runner.invoke('list_tasks', { user_id: 'nope' });
    expect(bad.status === 'failed' && bad.error).toMatchObject({
      category: 'invalid_input',
      message: expect.stringContaining("at 'user_id'"),
    });
    const unknown = await runner.invoke('fly_to_moon', {});
    expect(unknown.status === 'failed' && unknown.error).toMatchObject({ category: 'not_found', code: 'unknown_tool' });
  });

  it('passes an idempotency key for writes', async () => {
    const keys: (string | undefined)[] = [];
    const r2 = createRunner({
      invoker: async (call) => {
        keys.push(call.idempotencyKey);
        return store.invoker(call);
      },
      tools: [...taskTools],
    });
    await r2.invoke('add_task', { user_id: fixtures.bob, title: 'New' }, { idempotencyKey: 'req-1' });
    await r2.invoke('list_tasks', { user_id: fixtures.bob, status: 'all' });
    expect(keys).toEqual(['req-1', undefined]);
  });
});
