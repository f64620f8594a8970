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
import type { RunStore } from '../../src/stores/index.js';

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

describe('runner.rerun by two instances at once', () => {
  it("a second instance's seeding that comes after the first's (the seed's lease ended) does not hold the run: one re-run completes", async () => {
    const runs = memoryRunStore();
    const calls: string[] = [];
    let checkFails = true;
    const invoker = functionInvoker([read, write, check], {
      read: async ({ n }) => (calls.push('read'), { n }),
      write: async ({ n }) => (calls.push('write'), { id: `w${n}` }),
      check: async () => {
        calls.push('check');
        if (checkFails) throw Object.assign(new Error('refused'), { status: 400 });
        return { ok: true };
      },
    });
    // The interleaving a loaded machine makes: instance one seeds the re-run and ends the seed's lease;
    // instance two's seeding create comes next (and takes the record over); then both start the run.
    let oneSeeded!: () => void;
    const seeded = new Promise<void>((r) => (oneSeeded = r));
    let twoTried!: () => void;
    const tried = new Promise<void>((r) => (twoTried = r));
    let armed = false; // the failed run itself is recorded as usual
    const one: RunStore = Object.create(runs) as RunStore;
    one.renew = async (owner, ids, until) => {
      const kept = await runs.renew(owner, ids, until);
      if (owner.startsWith('rerun:') && until === 0) oneSeeded();
      return kept;
    };
    one.create = async (record, now) => {
      if (armed && !record.owner.startsWith('rerun:')) await tried; // its run starts after two's seeding
      return runs.create(record, now);
    };
    const two: RunStore = Object.create(runs) as RunStore;
    two.create = async (record, now) => {
      if (!record.owner.startsWith('rerun:')) return runs.create(record, now);
      await seeded;
      const created = await runs.create(record, now);
      twoTried();
      return created;
    };
    const make = (store: RunStore): Runner => {
      const runner = createRunner({ invoker, tools: [read, write, check], chains: [chain], stores: { runs: store } });
      runners.push(runner);
      return runner;
    };
    const [a, b] = [make(one), make(two)];
    expect((await a.run(chain, { n: 1 }, { runId: 'twice', context: { tenant: 't' } })).status).toBe('failed');
    checkFails = false;
    armed = true;
    const [x, y] = await Promise.all([a.rerun('twice'), b.rerun('twice')]);
    if (typeof x === 'string' || typeof y === 'string') throw new Error(`${String(x)} ${String(y)}`);
    const results = await Promise.all([x.result, y.result]);
    expect(results.map((r) => r.status)).toContain('completed');
    expect(calls).toEqual(['read', 'write', 'check', 'check']);
  });
});
