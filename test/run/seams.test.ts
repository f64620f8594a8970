// The executor's seams for durable runs: a journal that holds each step until it is kept, a run
// started from prior state with its own deadline, and `onEnd` awaited before the result returns.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineChain, defineTool, functionInvoker, ref, type RunResult, type ToolCall } from 'chainkit';
import { execute } from '../../src/run/executor.js';
import { type Execution } from '../../src/run/execution.js';
import { runnerParts } from '../../src/run/parts.js';
import { storeFailure } from '../../src/stores/guard.js';
import type { JournalEntry } from '../../src/stores/run-store.js';

const make = defineTool({
  name: 'make',
  description: 'm',
  input: z.object({ n: z.number() }),
  output: z.object({ id: z.string() }),
  effect: 'write',
});
const use = defineTool({
  name: 'use',
  description: 'u',
  input: z.object({ id: z.string() }),
  output: z.object({ ok: z.boolean() }),
  effect: 'write',
});
const wait = defineTool({
  name: 'wait',
  description: 'w',
  input: z.object({}),
  output: z.object({}),
  effect: 'read',
  retry: false,
});

// `use` depends on `make` (a ref to its result); `maybe` is skipped by its `when`.
const chain = defineChain({
  name: 'seams',
  input: z.object({ n: z.number() }),
  steps: [
    { id: 'make', tool: make, input: { n: ref('input', 'n') } },
    { id: 'maybe', tool: make, input: { n: 0 }, when: () => false },
    { id: 'use', tool: use, input: { id: ref('make', 'id') } },
  ],
});

function setup(extra: Partial<Execution> = {}) {
  const calls: string[] = [];
  const invoker = functionInvoker({
    make: (i: { n: number }) => (calls.push('make'), { id: `id-${i.n}` }),
    use: () => (calls.push('use'), { ok: true }),
    wait: (_: unknown, call: ToolCall) =>
      new Promise((_resolve, reject) => call.signal.addEventListener('abort', () => reject(call.signal.reason))),
  });
  const parts = runnerParts({ invoker, tools: [make, use, wait] });
  const exec: Execution = {
    chain,
    runId: 'run-1',
    traceId: 'trace-1',
    input: { n: 7 },
    context: {},
    results: Object.create(null) as Record<string, unknown>,
    done: [],
    priorTrace: [],
    startedAt: parts.calls.now(),
    resumed: false,
    ...extra,
  };
  return { calls, parts, exec };
}

const failure = (r: RunResult) => (r.status === 'failed' ? r.error : undefined);

const tick = () => new Promise((r) => setTimeout(r, 5));

describe('executor seams for durable runs', () => {
  it('journals each step that ends ok or skipped before any step that depends on it starts', async () => {
    const journaled: JournalEntry[] = [];
    const keep = new Map<string, () => void>();
    const { calls, parts, exec } = setup({
      journal: (entry) => {
        journaled.push(entry);
        return new Promise<void>((resolve) => keep.set(entry.step, resolve));
      },
    });
    const pending = execute(parts, exec);
    await tick();
    // `make` ended, but counts as done only once its entry is kept: `use` (a ref to it) and `maybe`
    // (a `when` function, which waits for every earlier step) have not started.
    expect(journaled.map((e) => [e.step, e.value])).toEqual([['make', { id: 'id-7' }]]);
    expect(journaled[0]!.trace).toMatchObject({ id: 'make', tool: 'make', status: 'success', attempts: 1 });
    expect(calls).toEqual(['make']);
    keep.get('make')!();
    await tick();
    expect(calls).toEqual(['make', 'use']);
    expect(journaled.map((e) => [e.step, e.skipped])).toEqual([
      ['make', undefined],
      ['maybe', true],
      ['use', undefined],
    ]);
    expect(journaled[1]!.trace).toMatchObject({ id: 'maybe', status: 'skipped' });
    keep.get('maybe')!();
    await tick();
    let settled = false;
    void pending.then(() => (settled = true));
    await tick();
    expect(settled).toBe(false); // `use` is not done until its entry is kept
    keep.get('use')!();
    const r = await pending;
    expect(r.status).toBe('completed');
    expect(r.trace.steps.map((t) => [t.id, t.status])).toEqual([
      ['make', 'success'],
      ['maybe', 'skipped'],
      ['use', 'success'],
    ]);
  });

  it('a journal that rejects fails the run with its classification (store_unavailable) and starts no dependent', async () => {
    const { calls, parts, exec } = setup({
      journal: () => Promise.reject(storeFailure('run (journal)', new Error('connection reset'))),
    });
    const r = await execute(parts, exec);
    expect(failure(r)).toMatchObject({
      category: 'unavailable',
      code: 'store_unavailable',
      step: 'make',
      tool: 'make',
    });
    expect(failure(r)?.message).toContain('connection reset');
    expect(calls).toEqual(['make']);
  });

  it('a journal that throws, answers false or resolves false fails the run and starts no dependent', async () => {
    for (const journal of [
      () => {
        throw new Error('no store');
      },
      () => false,
      () => Promise.resolve(false),
    ]) {
      const { calls, parts, exec } = setup({ journal });
      const r = await execute(parts, exec);
      expect(r.status).toBe('failed');
      expect(failure(r)?.step).toBe('make');
      expect(calls).toEqual(['make']);
    }
    const { parts, exec } = setup({ journal: () => false });
    expect(failure(await execute(parts, exec))).toMatchObject({ category: 'conflict', code: 'journal_refused' });
  });

  it('starts from prior state: journaled steps are not called again, their trace entries are kept', async () => {
    const journaled: string[] = [];
    const prior = {
      stepNumber: 1,
      id: 'make',
      tool: 'make',
      status: 'success' as const,
      attempts: 1,
      latencyMs: 3,
      startedAt: new Date(0).toISOString(),
    };
    const { calls, parts, exec } = setup({
      resumed: true,
      done: ['make', 'maybe'],
      results: Object.assign(Object.create(null) as Record<string, unknown>, { make: { id: 'id-1' } }),
      priorTrace: [prior],
      journal: (entry) => void journaled.push(entry.step),
    });
    const r = await execute(parts, exec);
    expect(r.status).toBe('completed');
    expect(calls).toEqual(['use']);
    expect(journaled).toEqual(['use']);
    expect(r.trace.steps.map((t) => t.id)).toEqual(['make', 'use']);
    expect(r.trace.steps[0]).toBe(prior);
  });

  it('honours an explicit deadlineAt over the chain timeout, and skips preconditions when continuing', async () => {
    const gated = defineChain({
      name: 'waits',
      input: z.object({}),
      steps: [{ id: 'w', tool: wait, input: {} }],
      preconditions: [{ check: () => false, message: 'never' }],
      timeoutMs: 60_000,
    });
    const { parts, exec } = setup();
    const started = Date.now();
    const r = await execute(parts, {
      ...exec,
      chain: gated,
      input: {},
      resumed: true,
      deadlineAt: parts.calls.now() + 50,
    });
    expect(failure(r)).toMatchObject({ category: 'timeout', code: 'deadline_exceeded', step: 'w' });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('awaits onEnd with the result before returning it', async () => {
    let recorded: RunResult | undefined;
    let returned = false;
    const { parts, exec } = setup({
      onEnd: async (result) => {
        await tick();
        expect(returned).toBe(false);
        recorded = result;
      },
    });
    const r = await execute(parts, exec);
    returned = true;
    expect(recorded).toBe(r);
    expect(r.status).toBe('completed');
  });
});
