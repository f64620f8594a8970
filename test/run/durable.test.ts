// Durable runs in one process, on the memory run store: recording and journaling, run ids as retry
// handles, recovery from the journal, deadlines kept, store failures and lost leases. The kill tests
// (test/durable) do the same across real processes on Redis and PostgreSQL.
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createRunner,
  defineChain,
  defineTool,
  DefinitionError,
  functionInvoker,
  ref,
  type Runner,
  type ToolCall,
} from '../../src/index.js';
import { type RunStore } from '../../src/stores/index.js';
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
  name: 'durable_c',
  input: z.object({ n: z.number() }),
  timeoutMs: 10_000,
  steps: [
    { id: 'a', tool: read, input: { n: ref('input', 'n') } },
    { id: 'b', tool: write, input: { n: ref('a', 'n') }, compensate: { tool: undo, input: { id: ref('b', 'id') } } },
    { id: 'c', tool: check, input: { id: ref('b', 'id') } },
  ],
});
const gated = defineChain({
  name: 'durable_gated',
  input: z.object({ n: z.number() }),
  steps: [
    { id: 'a', tool: read, input: { n: ref('input', 'n') } },
    { id: 'b', tool: write, input: { n: ref('a', 'n') }, confirm: { prompt: 'Sure?' } },
  ],
});

type Impl = {
  read?: (n: number, call: ToolCall) => unknown;
  write?: (n: number, call: ToolCall) => unknown;
  check?: (id: string) => unknown;
};
const runners: Runner[] = [];
afterEach(async () => {
  for (const r of runners.splice(0)) await r.close();
});

function make(
  store: RunStore,
  impl: Impl = {},
  extra: { now?: () => number; leaseMs?: number; recover?: { intervalMs: number } } = {},
) {
  const calls: string[] = [];
  const invoker = functionInvoker([read, write, check, undo], {
    read: async ({ n }, call) => {
      calls.push(`read:${n}`);
      return (impl.read?.(n, call) ?? { n }) as { n: number };
    },
    write: async ({ n }, call) => {
      calls.push(`write:${call.idempotencyKey}`);
      return (impl.write?.(n, call) ?? { id: `w${n}` }) as { id: string };
    },
    check: async ({ id }) => {
      calls.push(`check:${id}`);
      return (impl.check?.(id) ?? { ok: true }) as { ok: boolean };
    },
    undo: async ({ id }) => {
      calls.push(`undo:${id}`);
      return { ok: true };
    },
  });
  const runner = createRunner({
    invoker,
    tools: [read, write, check, undo],
    chains: [chain, gated],
    stores: { runs: store },
    ...extra,
  });
  runners.push(runner);
  return { runner, calls };
}
const never = (): Promise<never> => new Promise(() => {});

describe('durable runs (memory run store)', () => {
  it('records the run, journals each step, records the result', async () => {
    const store = memoryRunStore();
    const { runner } = make(store);
    const r = await runner.run(chain, { n: 1 }, { runId: 'r1' });
    expect(r.status).toBe('completed');
    const info = await runner.getRun('r1');
    expect(info).toMatchObject({ runId: 'r1', chain: 'durable_c', status: 'completed', steps: ['a', 'b', 'c'] });
    expect(info?.result?.status).toBe('completed');
  });

  it('a finished run id returns the recorded result and calls no tool; a live one is run_in_progress', async () => {
    const store = memoryRunStore();
    const { runner, calls } = make(store);
    await runner.run(chain, { n: 1 }, { runId: 'again' });
    const before = calls.length;
    const again = await runner.run(chain, { n: 1 }, { runId: 'again' });
    expect(again.status).toBe('completed');
    expect(calls.length).toBe(before);

    const slow = make(store, { read: () => never() });
    void slow.runner.run(chain, { n: 2 }, { runId: 'live' });
    await new Promise((r) => setTimeout(r, 20));
    const other = make(store);
    const busy = await other.runner.run(chain, { n: 2 }, { runId: 'live' });
    expect(busy.status === 'failed' && [busy.error.category, busy.error.code]).toEqual(['conflict', 'run_in_progress']);
  });

  it('recovers a run whose owner died: journaled steps are not called again, the step in flight runs again under the same key', async () => {
    let t = 1_000_000;
    const now = () => t;
    const store = memoryRunStore({ now });
    // The owner hangs in `c` and never renews (its clock does not move): as good as dead.
    const dead = make(store, { read: () => ({ n: 7 }), check: never }, { now, leaseMs: 1_000 });
    void dead.runner.run(chain, { n: 0 }, { runId: 'rec' });
    await new Promise((r) => setTimeout(r, 20));
    const deadOwner = (await dead.runner.getRun('rec'))?.owner;
    expect((await dead.runner.getRun('rec'))?.steps).toEqual(['a', 'b']);
    t += 5_000; // the lease expired
    const heir = make(store, {}, { now, leaseMs: 1_000 });
    const recovered: string[] = [];
    const owners: [string, string][] = [];
    heir.runner.events.on('run:recovered', (e) => {
      recovered.push(`${e.runId}:${e.journaled.join(',')}`);
      owners.push([e.previousOwner, e.owner]);
    });
    const results = await heir.runner.recover();
    const heirOwner = (await heir.runner.getRun('rec'))?.owner;
    expect(heirOwner).not.toBe(deadOwner);
    expect(owners).toEqual([[deadOwner, heirOwner]]); // from the dead owner, to the heir
    expect(results.map((r) => r.status)).toEqual(['completed']);
    expect(heir.calls).toEqual(['check:w7']); // only `c`: `a` and `b` came from the journal
    expect(recovered).toEqual(['rec:a,b']);
    expect(results[0]!.trace.steps.map((s) => s.id)).toEqual(['a', 'b', 'c']);
    expect(await heir.runner.recover()).toEqual([]); // claimed once
  });

  it('a run recovered after its deadline fails with deadline_exceeded and compensates', async () => {
    let t = 1_000_000;
    const now = () => t;
    const store = memoryRunStore({ now });
    const dead = make(store, { read: () => ({ n: 7 }), check: never }, { now, leaseMs: 1_000 });
    void dead.runner.run(chain, { n: 0 }, { runId: 'late' });
    await new Promise((r) => setTimeout(r, 20));
    t += 60_000; // past the chain's 10 s deadline
    const heir = make(store, {}, { now, leaseMs: 1_000 });
    const [result] = await heir.runner.recover();
    expect(result?.status === 'failed' && result.error.category).toBe('timeout');
    expect(result?.status === 'failed' && result.compensated).toEqual(['b']);
    expect(heir.calls).toEqual(['undo:w7']);
  });

  it('a run store that fails mid-run: store_unavailable, nothing compensated, the run stays recoverable', async () => {
    const inner = memoryRunStore();
    let failing = false;
    const store: RunStore = {
      ...inner,
      journal: (...a) => (failing ? Promise.reject(new Error('connection lost')) : inner.journal(...a)),
    };
    const { runner, calls } = make(store, { write: () => ((failing = true), { id: 'w1' }) });
    const r = await runner.run(chain, { n: 1 }, { runId: 'sf' });
    expect(r.status === 'failed' && r.error.code).toBe('store_unavailable');
    expect(r.status === 'failed' && r.compensated).toEqual([]);
    expect(calls).not.toContain('undo:w1');
    expect((await inner.get('sf'))?.status).toBe('running');
  });

  it('the last step is journaled with the end: if the end cannot be recorded, the caller is told store_unavailable and the run stays recoverable', async () => {
    const inner = memoryRunStore();
    const store: RunStore = { ...inner, finish: () => Promise.reject(new Error('connection lost')) };
    const { runner } = make(store);
    const r = await runner.run(chain, { n: 1 }, { runId: 'nofin' });
    expect(r.status === 'failed' && r.error.code).toBe('store_unavailable');
    // b, a plain write, is journaled as started before its call, then as done.
    expect(await inner.get('nofin')).toMatchObject({
      status: 'running',
      journal: [{ step: 'a' }, { step: 'b', started: { tool: 'write' } }, { step: 'b', value: expect.anything() }],
    });
  });

  it('a run whose end or journal the store did not record reports a partial trace with its error', async () => {
    const inner = memoryRunStore();
    const { runner } = make({ ...inner, finish: () => Promise.reject(new Error('connection lost')) });
    const r = await runner.run(chain, { n: 1 }, { runId: 'nofin-trace' });
    expect(r.status === 'failed' && r.error.code).toBe('store_unavailable');
    expect(r.trace.status).toBe('partial'); // steps a and b completed
    expect(r.trace.errors?.map((e) => e.code)).toContain('store_unavailable');
    let failing = false;
    const { runner: second } = make(
      { ...inner, journal: (...a) => (failing ? Promise.reject(new Error('connection lost')) : inner.journal(...a)) },
      { write: () => ((failing = true), { id: 'w1' }) },
    );
    const cut = await second.run(chain, { n: 1 }, { runId: 'sf-trace' });
    expect(cut.status === 'failed' && cut.error.code).toBe('store_unavailable');
    expect(cut.trace.status).toBe('partial');
    expect(cut.trace.errors?.map((e) => e.code)).toContain('store_unavailable');
  });

  it('renews leases one at a time: a tick skips while the last renewal is unanswered', async () => {
    const inner = memoryRunStore();
    let silent = false;
    let unanswered = 0;
    // While the write runs the store stops answering renewals (a partition): they must not pile up.
    const store: RunStore = { ...inner, renew: (...a) => (silent ? (unanswered++, never()) : inner.renew(...a)) };
    const { runner } = make(
      store,
      {
        write: async () => {
          silent = true;
          await new Promise((r) => setTimeout(r, 1_100)); // timer ticks at ~400 and ~800 ms (a third of the lease)
          silent = false;
          return { id: 'w1' };
        },
      },
      { leaseMs: 1_200 },
    );
    await runner.run(chain, { n: 1 }, { runId: 'renew-once' });
    expect(unanswered).toBe(1);
  });

  it('a runner that lost its lease stops with lease_lost and does not compensate', async () => {
    const inner = memoryRunStore();
    const store: RunStore = {
      ...inner,
      journal: async (runId, owner, entries, complete) =>
        entries.some((e) => e.step === 'b') ? false : inner.journal(runId, owner, entries, complete),
    };
    const { runner, calls } = make(store);
    const r = await runner.run(chain, { n: 1 }, { runId: 'lost' });
    expect(r.status === 'failed' && [r.error.category, r.error.code]).toEqual(['conflict', 'lease_lost']);
    expect(calls.some((c) => c.startsWith('undo'))).toBe(false);
  });

  it('parks at a gate (result with its token kept) and resumes durably', async () => {
    const store = memoryRunStore();
    const { runner } = make(store);
    const gate = await runner.run(gated, { n: 3 }, { runId: 'g' });
    expect(gate.status).toBe('awaiting_confirmation');
    expect((await runner.getRun('g'))?.status).toBe('awaiting_confirmation');
    const retried = await runner.run(gated, { n: 3 }, { runId: 'g' });
    expect(
      retried.status === 'awaiting_confirmation' && gate.status === 'awaiting_confirmation' && retried.resumeToken,
    ).toBe(gate.status === 'awaiting_confirmation' && gate.resumeToken);
    const done = await runner.resume(gate.status === 'awaiting_confirmation' ? gate.resumeToken : '', {
      approved: true,
    });
    expect(done.status).toBe('completed');
    expect(await runner.getRun('g')).toMatchObject({ status: 'completed', steps: ['a', 'b'] });
  });

  it('close() leaves runs in flight recoverable instead of ending them', async () => {
    const store = memoryRunStore();
    const { runner } = make(store, { read: () => ({ n: 7 }), check: never });
    const pending = runner.run(chain, { n: 0 }, { runId: 'closing' });
    await new Promise((r) => setTimeout(r, 20));
    await runner.close();
    expect((await pending).status).toBe('failed');
    expect((await store.get('closing'))?.status).toBe('running');
  });

  it('polls in the background with recover: { intervalMs }', async () => {
    let t = 1_000_000;
    const now = () => t;
    const store = memoryRunStore({ now });
    const dead = make(store, { read: () => ({ n: 7 }), check: never }, { now, leaseMs: 1_000 });
    void dead.runner.run(chain, { n: 0 }, { runId: 'bg' });
    await new Promise((r) => setTimeout(r, 20));
    t += 5_000;
    const heir = make(store, {}, { now, leaseMs: 1_000, recover: { intervalMs: 10 } });
    const ended = await new Promise<string>((resolve) =>
      heir.runner.events.on('run:end', (e) => resolve(`${e.runId}:${e.status}:${e.recovered}`)),
    );
    expect(ended).toBe('bg:completed:true');
  });

  it('background recovery never waits for its slowest recovered run: another dead run is picked up on the next poll', async () => {
    let t = 1_000_000;
    const now = () => t;
    const store = memoryRunStore({ now });
    const dead = make(store, { check: never }, { now, leaseMs: 1_000 });
    void dead.runner.run(chain, { n: 1 }, { runId: 'slow' });
    await new Promise((r) => setTimeout(r, 20));
    t += 5_000;
    // The heir's lease is long: its own runs stay its own while the clock moves.
    const heir = make(
      store,
      { check: (id) => (id === 'w1' ? never() : { ok: true }) },
      { now, leaseMs: 600_000, recover: { intervalMs: 10 } },
    );
    const ended: string[] = [];
    heir.runner.events.on('run:end', (e) => ended.push(`${e.runId}:${e.status}`));
    for (let i = 0; i < 100 && !heir.calls.includes('check:w1'); i++) await new Promise((r) => setTimeout(r, 10));
    expect(heir.calls).toContain('check:w1'); // the slow run is in flight, and stays so
    const second = make(store, { check: never }, { now, leaseMs: 1_000 });
    void second.runner.run(chain, { n: 2 }, { runId: 'fast' });
    await new Promise((r) => setTimeout(r, 20));
    t += 5_000;
    const began = Date.now();
    for (let i = 0; i < 100 && ended.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(ended).toEqual(['fast:completed']);
    expect(Date.now() - began).toBeLessThan(500);
  });

  it("the end write keeps the run's deadline: a silent store at the end fails the run within it, not 10 s later", async () => {
    const quick = defineChain({
      name: 'durable_quick',
      input: z.object({ n: z.number() }),
      timeoutMs: 1_500,
      steps: [{ id: 'a', tool: read, input: { n: ref('input', 'n') } }],
    });
    const inner = memoryRunStore();
    const store: RunStore = { ...inner, finish: () => never() };
    const { runner } = make(store);
    const began = Date.now();
    const r = await runner.run(quick, { n: 1 }, { runId: 'silent-end' });
    expect(Date.now() - began).toBeLessThan(2_500);
    expect(r.status === 'failed' && r.error.code).toBe('store_unavailable');
    expect((await inner.get('silent-end'))?.status).toBe('running'); // for recovery
  });

  it('without a run store: recover/getRun say what they need, and durable options are refused', async () => {
    const runner = createRunner({ invoker: async () => ({}) });
    runners.push(runner);
    await expect(runner.recover()).rejects.toThrow(/stores: \{ runs \}/);
    await expect(runner.getRun('x')).rejects.toThrow(/stores: \{ runs \}/);
    expect(() => createRunner({ invoker: async () => ({}), recover: { intervalMs: 100 } })).toThrow(DefinitionError);
    expect(() => createRunner({ invoker: async () => ({}), stores: { runs: memoryRunStore() }, leaseMs: -1 })).toThrow(
      /leaseMs/,
    );
  });
});
