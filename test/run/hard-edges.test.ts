import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  createRunner,
  defineChain,
  defineTool,
  findAndDelete,
  memoryCheckpointStore,
  ref,
  runChain,
  taskTools,
  type RunResult,
} from 'chainkit';
import { type CheckpointStore, type LearningStore } from 'chainkit/stores';
import { createMockInvoker, createTaskStore, fixtures } from 'chainkit/testing';

const codeOf = (r: RunResult) => (r.status === 'failed' ? `${r.error.category}/${r.error.code}` : r.status);
const never = <T>(): Promise<T> => new Promise<T>(() => {});

const echo = defineTool({
  name: 'echo',
  description: 'Echo',
  input: z.object({ v: z.number() }),
  output: z.object({ v: z.number() }),
  effect: 'read',
});

afterEach(() => {
  vi.useRealTimers();
});

describe('a compute step or `when` that never settles ends with the run', () => {
  const hanging = defineChain({
    name: 'hangs',
    input: z.object({}),
    timeoutMs: 1_000,
    steps: [{ id: 'forever', compute: () => never<number>() }],
  });

  it('fails at the deadline as timeout/deadline_exceeded', async () => {
    vi.useFakeTimers();
    const runner = createRunner({ invoker: createMockInvoker({}) });
    const pending = runner.run(hanging, {});
    await vi.advanceTimersByTimeAsync(1_000);
    const r = await pending;
    expect(codeOf(r)).toBe('timeout/deadline_exceeded');
    expect(r.status === 'failed' && r.error.step).toBe('forever');
    await runner.close();
  });

  it("ends on the caller's signal and on close()", async () => {
    const runner = createRunner({ invoker: createMockInvoker({}) });
    const controller = new AbortController();
    const cancelled = runner.run(hanging, {}, { signal: controller.signal });
    controller.abort();
    expect(codeOf(await cancelled)).toBe('cancelled/cancelled');
    const closing = runner.run(hanging, {});
    await runner.close();
    expect(codeOf(await closing)).toBe('cancelled/runner_closed');
  });

  it('an async `when` that resolves false skips the step; one that never settles hits the deadline', async () => {
    const invoker = createMockInvoker({ echo: { ok: { v: 1 } } });
    const runner = createRunner({ invoker });
    const skipping = defineChain({
      name: 'skips',
      input: z.object({}),
      steps: [{ id: 'call', tool: echo, input: { v: 1 }, when: async () => false }],
    });
    const r = await runner.run(skipping, {});
    expect(r.status).toBe('completed');
    expect(r.trace.steps[0]).toMatchObject({ id: 'call', status: 'skipped' });
    expect(invoker.callsTo('echo')).toHaveLength(0);

    const running = defineChain({
      name: 'runs',
      input: z.object({}),
      steps: [{ id: 'call', tool: echo, input: { v: 2 }, when: async () => true }],
    });
    const ran = await runner.run(running, {});
    expect(ran.status === 'completed' && ran.output).toEqual({ v: 1 });
    expect(invoker.callsTo('echo')).toHaveLength(1);

    vi.useFakeTimers();
    const stuck = defineChain({
      name: 'stuck',
      input: z.object({}),
      timeoutMs: 500,
      steps: [{ id: 'call', tool: echo, input: { v: 3 }, when: () => never<boolean>() }],
    });
    const pending = runner.run(stuck, {});
    await vi.advanceTimersByTimeAsync(500);
    expect(codeOf(await pending)).toBe('timeout/deadline_exceeded');
    expect(invoker.callsTo('echo')).toHaveLength(1);
    await runner.close();
  });
});

describe('results keyed by step id keep no prototype', () => {
  it('a skipped step named like an Object.prototype member is not mistaken for a result', async () => {
    const runner = createRunner({ invoker: createMockInvoker({}) });
    const chain = defineChain({
      name: 'proto_ids',
      input: z.object({}),
      steps: [
        { id: 'first', compute: () => 1 },
        { id: 'toString', compute: () => 2, when: () => false },
        { id: 'valueOf', compute: () => 3, when: () => false },
      ],
    });
    const r = await runner.run(chain, {});
    expect(r.status === 'completed' && r.output).toBe(1);
    await runner.close();
  });

  it('a skipped step named `constructor` is not compensated after a later failure', async () => {
    const undo = defineTool({
      name: 'undo',
      description: 'Undo',
      input: z.object({}),
      output: z.object({}),
      effect: 'write',
    });
    const invoker = createMockInvoker({ undo: { ok: {} } });
    const runner = createRunner({ invoker });
    const chain = defineChain({
      name: 'proto_compensate',
      input: z.object({}),
      steps: [
        { id: 'constructor', compute: () => 1, when: () => false, compensate: { tool: undo, input: {} } },
        {
          id: 'boom',
          compute: () => {
            throw new Error('later failure');
          },
        },
      ],
    });
    const r = await runner.run(chain, {});
    expect(r.status).toBe('failed');
    expect(r.status === 'failed' && r.compensated).toEqual([]);
    expect(invoker.callsTo('undo')).toHaveLength(0);
    await runner.close();
  });
});

describe('run() returns a result for input it cannot read', () => {
  const chain = defineChain({
    name: 'reads',
    input: z.object({ match: z.string() }),
    steps: [{ id: 'c', compute: (s) => s.input.match }],
  });

  it('a throwing getter in the input', async () => {
    const runner = createRunner({ invoker: createMockInvoker({}) });
    const input = {
      get match(): string {
        throw new Error('getter exploded');
      },
    };
    const r = await runner.run(chain, input);
    expect(r.status).toBe('failed');
    expect(r.status === 'failed' && r.error.category).toBe('invalid_input');
    await runner.close();
  });

  it('a hostile Proxy as input and as options', async () => {
    const runner = createRunner({ invoker: createMockInvoker({}) });
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error('trap');
        },
        has() {
          throw new Error('trap');
        },
        ownKeys() {
          throw new Error('trap');
        },
        getOwnPropertyDescriptor() {
          throw new Error('trap');
        },
        getPrototypeOf() {
          throw new Error('trap');
        },
      },
    );
    const a = await runner.run(chain, hostile as { match: string });
    expect(codeOf(a).startsWith('invalid_input/')).toBe(true);
    const b = await runner.run(chain, { match: 'x' }, hostile);
    expect(codeOf(b).startsWith('invalid_input/')).toBe(true);
    await runner.close();
  });
});

describe('one AbortSignal shared by many runs', () => {
  it('adds one listener, so 50 runs trigger no MaxListenersExceededWarning', async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error): void => void warnings.push(w);
    process.on('warning', onWarning);
    try {
      const runner = createRunner({ invoker: createMockInvoker({ echo: { ok: { v: 1 }, delayMs: 5 } }) });
      const chain = defineChain({
        name: 'shared_signal',
        input: z.object({}),
        steps: [{ id: 'e', tool: echo, input: { v: 1 } }],
      });
      const controller = new AbortController();
      const results = await Promise.all(
        Array.from({ length: 50 }, () => runner.run(chain, {}, { signal: controller.signal })),
      );
      expect(results.every((r) => r.status === 'completed')).toBe(true);
      const aborted = Promise.all(
        Array.from({ length: 20 }, () => runner.run(chain, {}, { signal: controller.signal })),
      );
      controller.abort();
      expect((await aborted).map(codeOf)).toEqual(Array(20).fill('cancelled/cancelled'));
      await new Promise((r) => setImmediate(r));
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
      await runner.close();
    } finally {
      process.off('warning', onWarning);
    }
  });
});

describe('store waits are bounded', () => {
  it('resume on a hung checkpoint store gives up at the chain deadline, not after a fixed 10 s', async () => {
    const shop = createTaskStore({ users: fixtures.users });
    const inner = memoryCheckpointStore();
    let hang = false;
    const checkpoints: CheckpointStore = {
      save: (cp) => inner.save(cp),
      peek: (id) => (hang ? never() : inner.peek(id)),
      take: (id) => (hang ? never() : inner.take(id)),
    };
    const chain = defineChain({ ...findAndDeleteSpec(), timeoutMs: 3_000 });
    // The runner reads the (fake) clock at every call: real milliseconds must not shorten the bound.
    const runner = createRunner({
      invoker: shop.invoker,
      tools: [...taskTools],
      stores: { checkpoints },
      now: () => Date.now(),
    });
    const gate = await runner.run(chain, { match: 'groceries' }, { context: { userId: fixtures.alice } });
    expect(gate.status).toBe('awaiting_confirmation');
    if (gate.status !== 'awaiting_confirmation') return;
    hang = true;
    vi.useFakeTimers();
    let settled: RunResult | undefined;
    void runner
      .resume(gate.resumeToken, { approved: true }, { context: { userId: fixtures.alice }, chain })
      .then((r) => (settled = r));
    await vi.advanceTimersByTimeAsync(2_999);
    expect(settled).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(settled && codeOf(settled)).toBe('unavailable/store_unavailable');
    vi.useRealTimers();
    await runner.close();
  });

  it('close() returns while the learning store hangs', async () => {
    vi.useFakeTimers();
    const learning: LearningStore = { load: async () => ({ transitions: [], samples: [] }), append: () => never() };
    const runner = createRunner({
      invoker: createMockInvoker({ echo: { ok: { v: 1 } } }),
      tools: [echo],
      stores: { metrics: learning },
    });
    await runner.ready;
    await runner.invoke('echo', { v: 1 }, { sessionId: 's' });
    let closed = false;
    void runner.close().then(() => (closed = true));
    await vi.advanceTimersByTimeAsync(5_000);
    expect(closed).toBe(true);
  });
});

describe('runChain and confirmation gates', () => {
  it('refuses a gated chain when the token it would return could never be resumed', async () => {
    const shop = createTaskStore({ users: fixtures.users });
    await expect(
      runChain(findAndDelete, { match: 'groceries' }, { invoker: shop.invoker, context: { userId: fixtures.alice } }),
    ).rejects.toThrow(/confirmation gate.*confirm/);
    expect(shop.tasks(fixtures.alice).some((t) => t.title === 'Buy groceries')).toBe(true);
  });

  it('runs it with `confirm`, and returns a resumable token with a shared secret and checkpoint store', async () => {
    const shop = createTaskStore({ users: fixtures.users });
    const context = { userId: fixtures.alice };
    const answered = await runChain(
      findAndDelete,
      { match: 'groceries' },
      { invoker: shop.invoker, context, confirm: () => true },
    );
    expect(answered.status).toBe('completed');

    const checkpoints = memoryCheckpointStore();
    const secret = 'a-shared-secret-of-32-characters!';
    const gated = await runChain(
      findAndDelete,
      { match: 'dentist' },
      { invoker: shop.invoker, context, secret, stores: { checkpoints } },
    );
    expect(gated.status).toBe('awaiting_confirmation');
    if (gated.status !== 'awaiting_confirmation') return;
    const later = createRunner({ invoker: shop.invoker, chains: [findAndDelete], secret, stores: { checkpoints } });
    const done = await later.resume(gated.resumeToken, { approved: true }, { context });
    expect(done.status).toBe('completed');
    await later.close();
  });
});

/** The built-in find-and-delete chain's spec, with its own name (so its deadline can differ). */
function findAndDeleteSpec() {
  const [listTasks, , , , deleteTask] = taskTools;
  return {
    name: 'find_and_delete_3s',
    input: z.object({ match: z.string() }),
    context: z.object({ userId: z.string() }),
    steps: [
      { id: 'find', tool: listTasks!, input: { user_id: ref('context', 'userId'), status: 'all' } },
      {
        id: 'target',
        select: {
          from: ref('find', 'tasks'),
          where: { title: { contains: ref('input', 'match') } },
          expect: 'one' as const,
        },
      },
      {
        id: 'delete',
        tool: deleteTask!,
        input: { user_id: ref('context', 'userId'), task_id: ref('target', 'task_id') },
        confirm: { prompt: 'Delete it?' },
      },
    ],
  };
}

describe('runner.invoke on hostile or out-of-range input', () => {
  it('returns a failed result for an input it cannot read, and refuses a timeoutMs that is no timer', async () => {
    const runner = createRunner({ invoker: createMockInvoker({ echo: { ok: { v: 1 } } }), tools: [echo] });
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error('trap');
        },
        ownKeys() {
          throw new Error('trap');
        },
        getOwnPropertyDescriptor() {
          throw new Error('trap');
        },
      },
    );
    const r = await runner.invoke('echo', hostile);
    expect(r.status === 'failed' && r.error.category).toBe('invalid_input');
    for (const timeoutMs of [NaN, Infinity, -1, 2 ** 31])
      await expect(runner.invoke('echo', { v: 1 }, { timeoutMs })).rejects.toThrow(/timeoutMs/);
    await runner.close();
  });
});

describe('classification of a huge message', () => {
  it('a megabyte of text classifies at once (the patterns read its head only)', async () => {
    const { classifyError } = await import('../../src/errors/classify.js');
    expect(classifyError(new Error('dependency '.repeat(100_000))).category).toBe('unknown');
    expect(classifyError(new Error(`upstream dependency unavailable ${'x'.repeat(1_000_000)}`)).category).toBe(
      'unavailable',
    );
  });
});

describe('values that throw when read, met while a step fails or a call ends', () => {
  const withThrowingGetter = (title: string): Record<string, unknown> =>
    Object.defineProperty({ title }, 'owner', {
      enumerable: true,
      get() {
        throw new Error('lazy field not loaded');
      },
    });

  it('an ambiguous select over items with a throwing getter fails as ambiguous (it crashed the host, or never settled)', async () => {
    const list = defineTool({
      name: 'list',
      description: 'List',
      input: z.object({}),
      output: z.object({ items: z.array(z.any()) }),
      effect: 'read',
    });
    const runner = createRunner({
      invoker: async () => ({ items: [withThrowingGetter('milk'), withThrowingGetter('milk')] }),
      tools: [list],
    });
    const chain = defineChain({
      name: 'pick',
      input: z.object({}),
      timeoutMs: 1_000,
      steps: [
        { id: 'find', tool: list, input: {} },
        { id: 'one', select: { from: ref('find', 'items'), where: { title: { equals: 'milk' } }, expect: 'one' } },
      ],
    });
    const r = await runner.run(chain, {});
    expect(r.status === 'failed' && r.error.category).toBe('ambiguous');
    expect(JSON.stringify(r.status === 'failed' && r.error)).toContain('[Unreadable]');
    await runner.close();
  });

  it('runner.invoke returns a result for an input or output with a throwing getter, and for a context it cannot read', async () => {
    const write = defineTool({ name: 'w', description: 'Write', input: z.any(), output: z.any(), effect: 'write' });
    let calls = 0;
    for (const traceDetail of ['summary', 'full'] as const) {
      const runner = createRunner({
        invoker: async () => (calls++, withThrowingGetter('out')),
        tools: [write],
        traceDetail,
      });
      const r = await runner.invoke('w', withThrowingGetter('in'));
      expect([traceDetail, r.status]).toEqual([traceDetail, 'completed']);
      const signal = new AbortController().signal;
      const unreadable = {
        get userId(): string {
          throw new Error('context getter');
        },
      };
      const refused = await runner.invoke('w', {}, { context: unreadable, signal });
      expect(refused.status === 'failed' && refused.error.code).toBe('unreadable_input');
      expect(getEventListeners(signal, 'abort')).toHaveLength(0);
      await runner.close();
    }
    expect(calls).toBe(2); // the refused calls never reached the tool
  });
});
