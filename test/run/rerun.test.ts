// `runner.rerun(runId)`: a failed durable run run again from its first failed step, as a new run
// linked by its id; the steps before the failure are taken from the journal, not called again.
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createRunner,
  defineChain,
  defineTool,
  functionInvoker,
  ref,
  rerunIdOf,
  type Runner,
} from '../../src/index.js';
import { memoryRunStore } from '../../src/testing/index.js';

const read = defineTool({
  name: 'read',
  description: 'r',
  input: z.object({ n: z.number() }),
  output: z.object({ n: z.number() }),
  effect: 'read',
});
const write = defineTool({
  name: 'write',
  description: 'w',
  input: z.object({ n: z.number() }),
  output: z.object({ id: z.string() }),
  effect: 'write',
});
const check = defineTool({
  name: 'check',
  description: 'c',
  input: z.object({ id: z.string() }),
  output: z.object({ ok: z.boolean() }),
  effect: 'read',
});
const undo = defineTool({
  name: 'undo',
  description: 'u',
  input: z.object({ id: z.string() }),
  output: z.object({ ok: z.boolean() }),
  effect: 'write',
});
const chain = defineChain({
  name: 'rerun_c',
  input: z.object({ n: z.number() }),
  context: z.object({ tenant: z.string() }),
  steps: [
    { id: 'a', tool: read, input: { n: ref('input', 'n') } },
    { id: 'b', tool: write, input: { n: ref('a', 'n') } },
    { id: 'c', tool: check, input: { id: ref('b', 'id') } },
  ],
});
const undoable = defineChain({
  name: 'rerun_undo',
  input: z.object({ n: z.number() }),
  steps: [
    { id: 'a', tool: read, input: { n: ref('input', 'n') } },
    { id: 'b', tool: write, input: { n: ref('a', 'n') }, compensate: { tool: undo, input: { id: ref('b', 'id') } } },
    { id: 'c', tool: check, input: { id: ref('b', 'id') } },
  ],
});

const runners: Runner[] = [];
afterEach(async () => {
  for (const r of runners.splice(0)) await r.close();
});

function make() {
  const calls: string[] = [];
  let checkFails = true;
  const invoker = functionInvoker([read, write, check, undo], {
    read: async ({ n }) => (calls.push(`read:${n}`), { n }),
    write: async ({ n }) => (calls.push(`write:${n}`), { id: `w${n}` }),
    check: async ({ id }) => {
      calls.push(`check:${id}`);
      if (checkFails) throw Object.assign(new Error('check refused'), { status: 400 });
      return { ok: true };
    },
    undo: async ({ id }) => (calls.push(`undo:${id}`), { ok: true }),
  });
  const runner = createRunner({
    invoker,
    tools: [read, write, check, undo],
    chains: [chain, undoable],
    stores: { runs: memoryRunStore() },
  });
  runners.push(runner);
  return { runner, calls, heal: () => (checkFails = false) };
}

describe('runner.rerun', () => {
  it('names re-runs after the run they re-run', () => {
    expect(rerunIdOf('order-7')).toBe('order-7~rerun1');
    expect(rerunIdOf('order-7~rerun1')).toBe('order-7~rerun2');
  });

  it('re-runs a failed run from its failed step with the journaled results before it, once', async () => {
    const { runner, calls, heal } = make();
    const failed = await runner.run(chain, { n: 3 }, { runId: 'r1', context: { tenant: 't1' } });
    expect(failed.status).toBe('failed');
    expect(calls).toEqual(['read:3', 'write:3', 'check:w3']);
    heal();
    const again = await runner.rerun('r1');
    if (typeof again === 'string') throw new Error(again);
    expect(again).toMatchObject({ runId: 'r1~rerun1', rerunOf: 'r1', reused: ['a', 'b'] });
    const result = await again.result;
    expect(result.status).toBe('completed');
    expect(calls).toEqual(['read:3', 'write:3', 'check:w3', 'check:w3']); // a and b not called again
    expect((await runner.getRun('r1~rerun1'))?.status).toBe('completed');
    expect(result.trace.steps.map((s) => s.id)).toEqual(['a', 'b', 'c']);
    // Exactly once: re-running r1 again answers the same new run, no tool called.
    const twice = await runner.rerun('r1');
    if (typeof twice === 'string') throw new Error(twice);
    expect(twice.runId).toBe('r1~rerun1');
    expect((await twice.result).status).toBe('completed');
    expect(calls).toHaveLength(4);
  });

  it('calls again the steps the failed run compensated', async () => {
    const { runner, calls, heal } = make();
    expect((await runner.run(undoable, { n: 1 }, { runId: 'u1' })).status).toBe('failed');
    expect(calls).toEqual(['read:1', 'write:1', 'check:w1', 'undo:w1']);
    heal();
    const again = await runner.rerun('u1');
    if (typeof again === 'string') throw new Error(again);
    expect(again.reused).toEqual(['a']);
    expect((await again.result).status).toBe('completed');
    expect(calls.slice(4)).toEqual(['write:1', 'check:w1']);
  });

  it('refuses runs that did not fail, and unknown ones', async () => {
    const { runner, heal } = make();
    heal();
    expect((await runner.run(chain, { n: 1 }, { runId: 'ok1', context: { tenant: 't' } })).status).toBe('completed');
    expect(await runner.rerun('ok1')).toBe('not_failed');
    expect(await runner.rerun('nope')).toBe('not_found');
  });
});
