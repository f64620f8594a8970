import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, findAndUpdate, taskTools, ref } from 'chainkit';
import { createMockInvoker, createTaskStore, fixtures } from 'chainkit/testing';

const io = { input: z.object({ q: z.string() }), output: z.object({ v: z.string() }) };
const first = defineTool({ name: 'first', description: 'first', ...io, effect: 'read' });
const second = defineTool({ name: 'second', description: 'second', ...io, effect: 'read', retry: false });
const forbidden = Object.assign(new Error('Forbidden'), { status: 403 });
const chain = defineChain({
  name: 'two_steps',
  description: 'first, then second',
  input: z.object({ q: z.string() }),
  steps: [
    { id: 'a', tool: first, input: { q: ref('input', 'q') } },
    { id: 'b', tool: second, input: { q: ref('a', 'v') } },
  ],
});

describe('trace status and errors', () => {
  it("a run that completed some steps and then failed is 'partial' in its trace (the result stays 'failed')", async () => {
    const runner = createRunner({
      invoker: createMockInvoker({ first: { ok: { v: 'x' } }, second: { error: forbidden } }),
      tools: [first, second],
    });
    const r = await runner.run(chain, { q: 'go' });
    expect(r.status).toBe('failed');
    expect(r.trace.status).toBe('partial');
    expect(r.trace.steps.map((s) => s.status)).toEqual(['success', 'error']);
    await runner.close();
  });

  it("a run that failed at its first step is 'failed', and a completed one 'completed'", async () => {
    const failing = createRunner({
      invoker: createMockInvoker({ first: { error: forbidden }, second: { ok: { v: 'y' } } }),
      tools: [first, second],
    });
    const r = await failing.run(chain, { q: 'go' });
    expect(r.trace.status).toBe('failed');
    const ok = createRunner({
      invoker: createMockInvoker({ first: { ok: { v: 'x' } }, second: { ok: { v: 'y' } } }),
      tools: [first, second],
    });
    const done = await ok.run(chain, { q: 'go' });
    expect(done.trace.status).toBe('completed');
    expect(done.trace).not.toHaveProperty('errors');
    await failing.close();
    await ok.close();
  });

  it('lists its errors at the top level, the same as the step errors and the run error', async () => {
    const runner = createRunner({
      invoker: createMockInvoker({ first: { ok: { v: 'x' } }, second: { error: forbidden } }),
      tools: [first, second],
    });
    const r = await runner.run(chain, { q: 'go' });
    if (r.status !== 'failed') throw new Error(r.status);
    expect(r.trace.errors).toHaveLength(1);
    expect(r.trace.errors![0]).toMatchObject({ category: 'permission_denied', step: 'b', tool: 'second' });
    expect(r.trace.errors![0]).toEqual(r.error);
    const direct = createRunner({
      invoker: createMockInvoker({ first: { ok: { v: 'x' } }, second: { ok: { v: 'y' } } }),
      tools: [first, second],
    });
    const invoked = await direct.invoke('second', { q: 1 });
    expect(invoked.trace.errors).toEqual([invoked.status === 'failed' && invoked.error]);
    await runner.close();
    await direct.close();
  });

  it('a select step failure after a list is partial too, with the not_found error listed', async () => {
    const store = createTaskStore({ users: fixtures.users });
    const runner = createRunner({ invoker: store.invoker, tools: [...taskTools] });
    const r = await runner.run(
      findAndUpdate,
      { match: 'no such task anywhere', title: 'x' },
      { context: { userId: fixtures.alice } },
    );
    expect(r.trace.status).toBe('partial');
    expect(r.trace.errors!.map((e) => e.code)).toEqual(['no_match']);
    await runner.close();
  });
});

describe('identity in traces', () => {
  const store = createTaskStore({ users: fixtures.users });
  const alice = { context: { userId: fixtures.alice } };

  it('keeps user ids and emails out of full traces by default', async () => {
    const runner = createRunner({ invoker: store.invoker, tools: [...taskTools], traceDetail: 'full' });
    const r = await runner.invoke('list_tasks', { user_id: fixtures.alice }, alice);
    expect(r.status).toBe('completed');
    expect(JSON.stringify(r.trace)).not.toContain(fixtures.alice);
    expect(r.trace.steps[0]!.input).toMatchObject({ user_id: '[REDACTED]', status: 'all' });
    const run = await runner.run(findAndUpdate, { match: 'dentist', title: 'Dentist at 3pm' }, alice);
    expect(run.status).toBe('completed');
    expect(JSON.stringify(run.trace)).not.toContain(fixtures.alice);
    expect(run.status === 'completed' && run.output.user_id).toBe(fixtures.alice); // the result itself is the app's
    await runner.close();
  });

  it('shows them when the user opts in with traceIdentity: true', async () => {
    const runner = createRunner({
      invoker: store.invoker,
      tools: [...taskTools],
      traceDetail: 'full',
      traceIdentity: true,
    });
    const r = await runner.invoke('list_tasks', { user_id: fixtures.alice }, alice);
    expect(r.trace.steps[0]!.input).toMatchObject({ user_id: fixtures.alice });
    await runner.close();
  });
});
