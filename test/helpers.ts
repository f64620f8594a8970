// Shared test fixtures: small tools and ids.
import { z } from 'zod';
import { afterEach } from 'vitest';
import { createRunner, defineChain, defineTool, ref, type Runner } from 'chainkit';
import { createTaskStore, fixtures, type TaskStore } from 'chainkit/testing';

export const USER = '6f1d2c3b-4a5e-4f60-8a7b-1c2d3e4f5a6b';
export const TASK_ID = 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d';

export const echo = defineTool({
  name: 'echo',
  description: 'Echo a value',
  input: z.object({ value: z.string() }),
  output: z.object({ value: z.string() }),
  effect: 'read',
  timeoutMs: 1000,
});

export const count = defineTool({
  name: 'count',
  description: 'Count things',
  input: z.object({}),
  output: z.object({ n: z.number(), items: z.array(z.object({ id: z.string(), label: z.string() })) }),
  effect: 'read',
});

export const remove = defineTool({
  name: 'remove',
  description: 'Remove a thing',
  input: z.object({ id: z.uuid() }),
  output: z.object({ ok: z.boolean() }),
  effect: 'destructive',
});

export const http = (status: number, message = `HTTP ${status}`, extra: Record<string, unknown> = {}): Error =>
  Object.assign(new Error(message), { status, ...extra });

/**
 * Registers an `afterEach` that closes what each test opened, and returns a factory of a fresh
 * task backend with a runner on it (closed after the test).
 */
export function taskRunners(): () => { store: TaskStore; runner: Runner } {
  const open: Runner[] = [];
  afterEach(async () => {
    for (const runner of open.splice(0)) await runner.close();
  });
  return () => {
    const store = createTaskStore({ users: fixtures.users });
    const runner = createRunner({ invoker: store.invoker });
    open.push(runner);
    return { store, runner };
  };
}

/**
 * A chain whose input schema transforms (not idempotently, and to another type: `'21'` becomes 42)
 * on a runner whose tool records the inputs it saw; the runner is closed after the test. Run
 * through an agent adapter, the tool must see what `runner.run` would give it: the transform once.
 */
export function transformingChain(): { runner: Runner; chain: ReturnType<typeof doubled>; seen: unknown[] } {
  const seen: unknown[] = [];
  const runner = createRunner({
    invoker: async (call) => {
      seen.push(call.input);
      return { ok: true };
    },
  });
  afterEach(() => runner.close());
  return { runner, chain: doubled(), seen };
}

function doubled() {
  const save = defineTool({
    name: 'save',
    description: 'Saves it.',
    input: z.object({ n: z.number() }),
    output: z.object({ ok: z.boolean() }),
  });
  return defineChain({
    name: 'save_it',
    description: 'Saves it.',
    input: z.object({ n: z.string().transform((s) => Number(s) * 2) }),
    steps: [{ id: 's', tool: save, input: { n: ref('input', 'n') } }],
  });
}
