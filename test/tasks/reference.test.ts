// The task domain against its reference behaviour: update fields, pick by position, already completed,
// content-derived idempotency of add_task, timeouts, and what a model sees of a declined run.
import { beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  addTask,
  completeTask,
  createRunner,
  defineChain,
  defineTool,
  deleteTask,
  DefinitionError,
  findAndComplete,
  findAndDelete,
  findAndUpdate,
  listTasks,
  ref,
  taskChains,
  taskSummary,
  taskTools,
  toModelResult,
  updateTask,
  type ToolCall,
} from 'chainkit';
import { createTaskStore, fixtures } from 'chainkit/testing';

const alice = { context: { userId: fixtures.alice } };

describe('findAndUpdate changes title, priority or description', () => {
  const store = createTaskStore({ users: fixtures.users });
  const runner = createRunner({ invoker: store.invoker, tools: [...taskTools], chains: [...taskChains] });
  beforeEach(() => store.reset());
  const dentist = () => store.tasks(fixtures.alice).find((t) => t.title.startsWith('Dentist'))!;

  it('changes only the priority', async () => {
    const r = await runner.run(findAndUpdate, { match: 'dentist', priority: 'low' }, alice);
    expect(r.status === 'completed' && r.output).toMatchObject({ title: 'Dentist appointment', priority: 'low' });
    expect(dentist()).toMatchObject({ title: 'Dentist appointment', priority: 'low' });
  });

  it('changes only the description, and several fields at once', async () => {
    const r = await runner.run(findAndUpdate, { match: 'dentist', description: 'Bring the insurance card' }, alice);
    expect(r.status === 'completed' && r.output).toMatchObject({
      title: 'Dentist appointment',
      priority: 'high',
      description: 'Bring the insurance card',
    });
    const both = await runner.run(
      findAndUpdate,
      { match: 'dentist', title: 'Dentist at 3pm', priority: 'medium' },
      alice,
    );
    expect(both.status === 'completed' && both.output).toMatchObject({
      title: 'Dentist at 3pm',
      priority: 'medium',
      description: 'Bring the insurance card',
    });
  });

  it('keeps { match, title } working', async () => {
    const r = await runner.run(findAndUpdate, { match: 'dentist', title: 'Dentist at 4pm' }, alice);
    expect(r.status === 'completed' && r.output).toMatchObject({ title: 'Dentist at 4pm', priority: 'high' });
  });

  it('asks what to change when no field is given, before any tool call', async () => {
    const calls = { ...store.callCount };
    const r = await runner.run(findAndUpdate, { match: 'dentist' }, alice);
    expect(r.status === 'failed' && r.error).toMatchObject({
      category: 'invalid_input',
      code: 'precondition_failed',
      userMessage: expect.stringMatching(/title.*priority.*description/),
    });
    expect(store.callCount).toEqual(calls);
  });
});

describe('tasks picked by position', () => {
  const store = createTaskStore({ users: fixtures.users });
  const runner = createRunner({ invoker: store.invoker, tools: [...taskTools], chains: [...taskChains] });
  beforeEach(() => store.reset());

  it('takes #N, N, task N and task #N as the Nth task of the list (1-based, list order)', async () => {
    const listed = store.tasks(fixtures.alice).map((t) => t.title);
    const r = await runner.run(findAndUpdate, { match: '#4', title: 'Dentist at 3pm' }, alice);
    expect(r.status === 'completed' && r.output.task_id).toBe(store.tasks(fixtures.alice)[3]!.task_id);
    expect(store.tasks(fixtures.alice)[3]!.title).toBe('Dentist at 3pm');

    const done = await runner.run(findAndComplete, { match: 'task 2' }, alice);
    expect(done.status === 'completed' && done.output).toMatchObject({ title: listed[1], completed: true });

    const gate = await runner.run(findAndDelete, { match: ' Task #1 ' }, alice);
    expect(gate.status === 'awaiting_confirmation' && gate.confirmation.prompt).toBe(
      `Are you sure you want to delete '${listed[0]}'?`,
    );
    const plain = await runner.run(findAndDelete, { match: '3' }, alice);
    expect(plain.status === 'awaiting_confirmation' && plain.confirmation.prompt).toBe(
      `Are you sure you want to delete '${listed[2]}'?`,
    );
  });

  it('a position past the end (or 0) is not_found; a number inside a longer text is a title match', async () => {
    for (const match of ['task 6', '#0']) {
      const r = await runner.run(findAndComplete, { match }, alice);
      expect(r.status === 'failed' && r.error.category, match).toBe('not_found');
    }
    const mixed = createTaskStore({ users: { [fixtures.alice]: [{ title: 'Call mom' }, { title: 'Buy 3 apples' }] } });
    const r = await createRunner({ invoker: mixed.invoker }).run(findAndComplete, { match: '3 apples' }, alice);
    expect(r.status === 'completed' && r.output.title).toBe('Buy 3 apples');
  });

  it('says so in the chain descriptions', () => {
    for (const chain of [findAndUpdate, findAndDelete, findAndComplete]) expect(chain.description).toMatch(/position/);
  });
});

describe('findAndComplete on a completed task', () => {
  const store = createTaskStore({
    users: {
      [fixtures.alice]: [
        { title: 'Water plants', completed: true },
        { title: 'Water the garden' },
        { title: 'Call mom', completed: true },
      ],
    },
  });
  const runner = createRunner({ invoker: store.invoker, tools: [...taskTools] });
  beforeEach(() => store.reset());

  it('completes nothing and says it was already completed', async () => {
    const r = await runner.run(findAndComplete, { match: 'call mom' }, alice);
    expect(r.status === 'completed' && r.output).toMatchObject({
      title: 'Call mom',
      completed: true,
      already_completed: true,
    });
    expect(store.callCount.complete_task).toBeUndefined(); // no write
    expect(r.trace.steps.find((s) => s.id === 'complete')!.status).toBe('skipped');
  });

  it('flags a real completion as not already completed, preferring a pending match over a completed one', async () => {
    const r = await runner.run(findAndComplete, { match: 'water' }, alice);
    expect(r.status === 'completed' && r.output).toMatchObject({
      title: 'Water the garden',
      completed: true,
      already_completed: false,
    });
  });
});

describe('add_task refuses an identical task of the same user within the hour', () => {
  const store = createTaskStore({ users: fixtures.users });
  let runner = createRunner({ invoker: store.invoker, tools: [...taskTools] });
  beforeEach(() => {
    store.reset();
    runner = createRunner({ invoker: store.invoker, tools: [...taskTools] }); // kept results live in the runner's store
  });
  const add = (input: Record<string, unknown>, opts: { idempotencyKey?: string } = {}) =>
    runner.invoke<{ task: { task_id: string } }>('add_task', { user_id: fixtures.alice, ...input }, opts);

  it('returns the first task as cached for the same title (whitespace and case aside), priority and description', async () => {
    const first = await add({ title: 'Buy stamps' });
    const again = await add({ title: '  buy   STAMPS ' });
    expect(again.trace.steps[0]!.status).toBe('cached');
    expect(again.status === 'completed' && again.output.task.task_id).toBe(
      first.status === 'completed' && first.output.task.task_id,
    );
    expect(store.callCount.add_task).toBe(1);
    expect(store.tasks(fixtures.alice).filter((t) => t.title === 'Buy stamps')).toHaveLength(1);
  });

  it('adds a task that differs, belongs to another user, or carries its own idempotency key', async () => {
    await add({ title: 'Buy stamps' });
    await add({ title: 'Buy stamps', priority: 'high' });
    await add({ title: 'Buy stamps', description: 'For the letters' });
    await runner.invoke('add_task', { user_id: fixtures.bob, title: 'Buy stamps' });
    const keyed = await add({ title: 'Buy stamps' }, { idempotencyKey: 'req-9' });
    expect(keyed.trace.steps[0]!.status).toBe('success');
    expect(store.callCount.add_task).toBe(5);
  });

  it('dedupes across chain runs with different run ids, and keeps results an hour', async () => {
    const addOne = defineChain({
      name: 'add_one_ref',
      input: z.object({ title: z.string() }),
      context: z.object({ userId: z.uuid() }),
      steps: [{ id: 'add', tool: addTask, input: { user_id: ref('context', 'userId'), title: ref('input', 'title') } }],
    });
    const a = await runner.run(addOne, { title: 'Pay rent' }, alice);
    const b = await runner.run(addOne, { title: 'Pay rent' }, alice);
    expect(b.trace.steps[0]!.status).toBe('cached');
    expect(a.status === 'completed' && b.status === 'completed' && b.output).toEqual(
      a.status === 'completed' && a.output,
    );
    expect(store.callCount.add_task).toBe(1);
    expect(addTask.idempotencyTtlMs).toBe(3_600_000);
  });

  it('keeps the first task for one hour: a re-add after 61 minutes is a new task', async () => {
    let t = 1_000_000;
    const clocked = createRunner({ invoker: store.invoker, tools: [...taskTools], now: () => t });
    const addAt = (minutes: number) => {
      t = 1_000_000 + minutes * 60_000;
      return clocked.invoke('add_task', { user_id: fixtures.alice, title: 'Buy stamps' });
    };
    await addAt(0);
    expect((await addAt(59)).trace.steps[0]!.status).toBe('cached');
    expect(store.callCount.add_task).toBe(1);
    expect((await addAt(61)).trace.steps[0]!.status).toBe('success');
    expect(store.callCount.add_task).toBe(2);
    await clocked.close();
  });
});

describe('the idempotencyKey tool option', () => {
  const item = z.object({ sku: z.string(), qty: z.number() });
  const order = (extra: Record<string, unknown> = {}) =>
    defineTool({
      name: 'place_order',
      description: 'Place an order',
      input: item,
      output: z.object({ id: z.number() }),
      idempotencyKey: (input, call) => `order:${String(call.context.userId)}:${input.sku}:${input.qty}`,
      idempotencyTtlMs: 60_000,
      ...extra,
    });

  it('derives the key from the content and the call; a step key or call key still wins', async () => {
    const keys: (string | undefined)[] = [];
    const seen: unknown[] = [];
    let n = 0;
    const tool = defineTool({
      name: 'place_order',
      description: 'Place an order',
      input: item,
      output: z.object({ id: z.number() }),
      idempotencyKey: (input, call) => {
        seen.push({ ...call });
        return `order:${String(call.context.userId)}:${input.sku}`;
      },
    });
    const runner = createRunner({
      invoker: async (call: ToolCall) => {
        keys.push(call.idempotencyKey);
        return { id: ++n };
      },
      tools: [tool],
    });
    const ctx = { context: { userId: 'u1' } };
    expect((await runner.invoke('place_order', { sku: 'a', qty: 1 }, ctx)).status).toBe('completed');
    const dup = await runner.invoke<{ id: number }>('place_order', { sku: 'a', qty: 2 }, ctx);
    expect(dup.status === 'completed' && dup.output.id).toBe(1); // same key: the kept result
    await runner.invoke('place_order', { sku: 'a', qty: 1 }, { ...ctx, idempotencyKey: 'explicit' });
    const chain = defineChain({
      name: 'order_twice',
      input: z.object({}),
      context: z.object({ userId: z.string() }),
      steps: [
        { id: 'own', tool, input: { sku: 'b', qty: 1 } },
        { id: 'keyed', tool, input: { sku: 'b', qty: 1 }, idempotencyKey: () => 'step-key' },
      ],
    });
    const r = await runner.run(chain, {}, { ...ctx, runId: 'run-1' });
    expect(r.status).toBe('completed');
    expect(keys).toEqual(['order:u1:a', 'explicit', 'order:u1:b', 'step-key']);
    expect(seen[0]).toMatchObject({ tool: 'place_order', step: 'place_order', context: { userId: 'u1' } });
    expect(seen.at(-1)).toMatchObject({ tool: 'place_order', runId: 'run-1', step: 'own', context: { userId: 'u1' } });
  });

  it('falls back to the default key when the function throws or returns no string', async () => {
    const keys: (string | undefined)[] = [];
    const runner = createRunner({
      invoker: async (call: ToolCall) => {
        keys.push(call.idempotencyKey);
        return { id: 1 };
      },
      tools: [
        order({
          idempotencyKey: () => {
            throw new Error('boom');
          },
        }),
      ],
    });
    const r = await runner.invoke('place_order', { sku: 'a', qty: 1 });
    expect(r.status).toBe('completed');
    expect(keys[0]).toMatch(/:place_order$/);
  });

  it('is checked at definition', () => {
    expect(order().idempotencyTtlMs).toBe(60_000);
    for (const bad of [
      { idempotencyKey: 'k' },
      { idempotencyTtlMs: 0 },
      { idempotencyTtlMs: Infinity },
      { idempotencyTtlMs: 1e13 },
      { effect: 'read' },
    ]) {
      expect(() => order(bad), JSON.stringify(bad)).toThrow(DefinitionError);
    }
  });
});

describe('reference timeouts', () => {
  it('reads 3 s, writes 2 s, the summary deadline 8 s', () => {
    expect(listTasks.timeoutMs).toBe(3000);
    expect([addTask, updateTask, completeTask, deleteTask].map((t) => t.timeoutMs)).toEqual([2000, 2000, 2000, 2000]);
    expect(taskSummary.timeoutMs).toBe(8000);
  });
});

describe('what a model sees', () => {
  it('keeps the metadata of a declined run', async () => {
    const store = createTaskStore({ users: fixtures.users });
    const runner = createRunner({ invoker: store.invoker, tools: [...taskTools], chains: [...taskChains] });
    const gate = await runner.run(findAndDelete, { match: 'groceries' }, alice);
    if (gate.status !== 'awaiting_confirmation') throw new Error(gate.status);
    const declined = await runner.resume(gate.resumeToken, { approved: false }, alice);
    expect(declined.status).toBe('declined');
    const model = toModelResult(declined);
    expect(model).toMatchObject({
      status: 'declined',
      step: 'delete',
      metadata: { context: { chain: 'find_and_delete' } },
    });
    expect((model as { metadata: unknown }).metadata).toEqual(declined.metadata);
  });
});
