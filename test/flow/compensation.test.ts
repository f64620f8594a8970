// Compensation reaches into sub-chains: a run that fails undoes the completed steps with `compensate`
// of its `chain`, `forEach`, `branch` and `loop` steps too, newest first, each once (§12, issue 21).
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createRunner,
  defineChain,
  memoryRunStore,
  defineTool,
  functionInvoker,
  ref,
  runChain,
  type Chain,
  type Runner,
  type RunResult,
} from 'chainkit';
import { http } from '../helpers.js';
import { atEndWrite } from '../helpers/end-write.js';
import type { JournalEntry, RunStore } from 'chainkit/stores';

const list = defineTool({
  name: 'list',
  description: 'List ids',
  input: z.object({ n: z.number() }),
  output: z.object({ items: z.array(z.object({ id: z.string() })) }),
  effect: 'read',
});
const save = defineTool({
  name: 'save',
  description: 'Save one',
  input: z.object({ id: z.string() }),
  output: z.object({ id: z.string() }),
  retry: false,
});
const unsave = defineTool({
  name: 'unsave',
  description: 'Undo a save',
  input: z.object({ id: z.string() }),
  output: z.object({ ok: z.boolean() }),
  retry: false,
});
const check = defineTool({
  name: 'check',
  description: 'Check one',
  input: z.object({ id: z.string() }),
  output: z.object({ ok: z.boolean() }),
  effect: 'read',
  retry: false,
});
const reserve = defineTool({
  name: 'reserve',
  description: 'Reserve',
  input: z.object({}),
  output: z.object({ id: z.string() }),
  retry: false,
});
const release = defineTool({
  name: 'release',
  description: 'Release',
  input: z.object({ id: z.string() }),
  output: z.object({ ok: z.boolean() }),
  retry: false,
});
const boom = defineTool({
  name: 'boom',
  description: 'Fails',
  input: z.object({}),
  output: z.object({}),
  effect: 'read',
  retry: false,
});

/** An item's chain: save (undone by unsave), then check (fails for ids in `bad`). */
const saveOne = defineChain({
  name: 'save_one',
  input: z.object({ id: z.string() }),
  steps: [
    {
      id: 'save',
      tool: save,
      input: { id: ref('input', 'id') },
      compensate: { tool: unsave, input: { id: ref('save', 'id') } },
    },
    { id: 'check', tool: check, input: { id: ref('save', 'id') } },
  ],
  output: (s) => s.results.save.id,
});

/** The tools; `check` refuses the ids in `bad`, `unsave` those in `stuck`. */
function tools(bad: string[] = [], stuck: string[] = []) {
  const calls: string[] = [];
  const keys: string[] = [];
  const handlers = {
    list: ({ n }: { n: number }) => ({ items: Array.from({ length: n }, (_, i) => ({ id: `t${i}` })) }),
    save: ({ id }: { id: string }) => (calls.push(`save ${id}`), { id }),
    unsave: ({ id }: { id: string }, call: { idempotencyKey?: string }) => {
      if (stuck.includes(id)) throw http(409, `cannot unsave ${id}`);
      calls.push(`unsave ${id}`);
      keys.push(call.idempotencyKey!);
      return { ok: true };
    },
    check: ({ id }: { id: string }) => {
      if (bad.includes(id)) throw http(403, `no ${id}`);
      return { ok: true };
    },
    reserve: () => (calls.push('reserve'), { id: 'r1' }),
    release: ({ id }: { id: string }) => (calls.push(`release ${id}`), { ok: true }),
    boom: () => {
      throw http(403, 'boom');
    },
  };
  const invoker = functionInvoker(handlers);
  return {
    invoker,
    handlers,
    calls,
    keys,
    undone: () => calls.filter((c) => c.startsWith('unsave') || c.startsWith('release')),
  };
}

describe('compensation inside sub-chains', () => {
  it('a later failure undoes the completed forEach items (newest first, each once) after the steps run after them and before those run before', async () => {
    const t = tools();
    const c = defineChain({
      name: 'fan_out',
      input: z.object({}),
      steps: [
        { id: 'reserve', tool: reserve, input: {}, compensate: { tool: release, input: { id: ref('reserve', 'id') } } },
        { id: 'find', tool: list, input: () => ({ n: 3 }) },
        { id: 'done', forEach: { over: ref('find', 'items'), chain: saveOne, input: { id: ref('item', 'id') } } },
        { id: 'fail', tool: boom, input: () => ({}) },
      ],
    });
    const r = await runChain(c, {}, { invoker: t.invoker });
    expect(r.status).toBe('failed');
    expect(t.undone()).toEqual(['unsave t2', 'unsave t1', 'unsave t0', 'release r1']);
    if (r.status !== 'failed') return;
    expect(r.error).toMatchObject({ step: 'fail' });
    expect(r.compensated).toEqual(['done/2/save', 'done/1/save', 'done/0/save', 'reserve']);
    expect(r.compensationFailures).toBeUndefined();
    expect(r.trace.steps.filter((s) => s.status === 'compensated').map((s) => s.id)).toEqual([
      'done/2/save',
      'done/1/save',
      'done/0/save',
      'reserve',
    ]);
    // Each undo has a key of its own (the item index in it): none is answered from another's.
    expect(new Set(t.keys).size).toBe(3);
    expect(t.keys[0]).toBe(`${r.runId}:done/2/save:compensate`);
  });

  it('undoes the steps of `chain`, `branch` and every completed `loop` iteration, nested chains included', async () => {
    const t = tools();
    const inner = defineChain({
      name: 'inner',
      input: z.object({}),
      steps: [
        { id: 'find', tool: list, input: { n: 2 } },
        { id: 'each', forEach: { over: ref('find', 'items'), chain: saveOne, input: { id: ref('item', 'id') } } },
      ],
    });
    const one = (id: string) =>
      defineChain({
        name: `one_${id}`,
        input: z.object({ n: z.number() }),
        steps: [
          {
            id: 'save',
            tool: save,
            input: { id: `${id}` },
            compensate: { tool: unsave, input: { id: ref('save', 'id') } },
          },
        ],
      });
    const c = defineChain({
      name: 'nested',
      input: z.object({ kind: z.enum(['a', 'b']) }),
      steps: [
        { id: 'audit', chain: inner, input: {} },
        {
          id: 'pick',
          branch: {
            on: (s: { input: { kind: string } }) => s.input.kind,
            cases: { a: { chain: one('a'), input: () => ({ n: 1 }) }, b: { chain: one('b'), input: () => ({ n: 1 }) } },
          },
        },
        {
          id: 'poll',
          loop: { chain: one('l'), input: () => ({ n: 1 }), until: (_out: unknown, n: number) => n === 2, max: 5 },
        },
        { id: 'fail', tool: boom, input: () => ({}) },
      ],
    } as never);
    const r = await runChain(c as never, { kind: 'b' }, { invoker: t.invoker });
    expect(r.status).toBe('failed');
    if (r.status !== 'failed') return;
    expect(r.compensated).toEqual([
      'poll/2/save',
      'poll/1/save',
      'pick/save',
      'audit/each/1/save',
      'audit/each/0/save',
    ]);
    expect(t.undone()).toEqual(['unsave l', 'unsave l', 'unsave b', 'unsave t1', 'unsave t0']);
  });

  it("a forEach that fails on an item: the item undoes its own steps, the completed items are undone by the run's failure (each once)", async () => {
    const t = tools(['t2']);
    const c = defineChain({
      name: 'stop_at_bad',
      input: z.object({}),
      steps: [
        { id: 'find', tool: list, input: { n: 4 } },
        { id: 'done', forEach: { over: ref('find', 'items'), chain: saveOne, input: { id: ref('item', 'id') } } },
      ],
    });
    const r = await runChain(c, {}, { invoker: t.invoker });
    expect(r.status).toBe('failed');
    if (r.status !== 'failed') return;
    expect(r.error).toMatchObject({ step: 'done/2/check' });
    // Item 2 undid its save as it failed; then the run undid items 1 and 0. Item 3 never started.
    expect(t.undone()).toEqual(['unsave t2', 'unsave t1', 'unsave t0']);
    expect(r.compensated).toEqual(['done/2/save', 'done/1/save', 'done/0/save']);
    const item2 = r.trace.steps.find((s) => s.id === 'done')!.children!.find((s) => s.id === 'done/2')!;
    expect(item2.children!.map((s) => [s.id, s.status])).toContainEqual(['done/2/save', 'compensated']);
  });

  it('items that fail together each undo their own steps, and all of it is in the run’s `compensated`', async () => {
    const t = tools(['t0', 't1']);
    const c = defineChain({
      name: 'two_bad',
      input: z.object({}),
      steps: [
        { id: 'find', tool: list, input: { n: 2 } },
        {
          id: 'done',
          forEach: { over: ref('find', 'items'), chain: saveOne, input: { id: ref('item', 'id') }, concurrency: 2 },
        },
      ],
    });
    const r = await runChain(c, {}, { invoker: t.invoker });
    expect(r.status).toBe('failed');
    if (r.status !== 'failed') return;
    expect(t.undone().sort()).toEqual(['unsave t0', 'unsave t1']);
    expect([...r.compensated].sort()).toEqual(['done/0/save', 'done/1/save']);
  });

  it('a failed sub-chain’s own undos are in the run’s `compensated` and `compensationFailures`, before the run’s', async () => {
    const t = tools(['t9'], ['t8']);
    const both = defineChain({
      name: 'save_two',
      input: z.object({}),
      steps: [
        { id: 'a', tool: save, input: { id: 't8' }, compensate: { tool: unsave, input: { id: ref('a', 'id') } } },
        { id: 'b', tool: save, input: { id: 't7' }, compensate: { tool: unsave, input: { id: ref('b', 'id') } } },
        { id: 'check', tool: check, input: { id: 't9' } },
      ],
    });
    const c = defineChain({
      name: 'outer',
      input: z.object({}),
      steps: [
        { id: 'reserve', tool: reserve, input: {}, compensate: { tool: release, input: { id: ref('reserve', 'id') } } },
        { id: 'two', chain: both, input: {} },
      ],
    });
    const r = await runChain(c, {}, { invoker: t.invoker });
    expect(r.status).toBe('failed');
    if (r.status !== 'failed') return;
    expect(r.error).toMatchObject({ step: 'two/check' });
    expect(t.undone()).toEqual(['unsave t7', 'release r1']);
    expect(r.compensated).toEqual(['two/b', 'reserve']);
    expect(r.compensationFailures?.map((f) => [f.step, f.error.code])).toEqual([['two/a', 'http_409']]);
  });

  it('a sub-chain failing beside a step that failed first: its own undos are in the run’s `compensated` too', async () => {
    const undone: string[] = [];
    const invoker = functionInvoker({
      save: ({ id }: { id: string }) => ({ id }),
      unsave: ({ id }: { id: string }) => (undone.push(id), { ok: true }),
      check: () => new Promise((resolve) => setTimeout(() => resolve({ ok: true }), 300)),
      boom: () => new Promise((_, reject) => setTimeout(() => reject(http(403, 'no')), 50)),
    });
    const c = defineChain({
      name: 'side_by_side',
      input: z.object({}),
      steps: [
        { id: 'sub', chain: saveOne, input: { id: 's1' } }, // cut off in its check by bad's failure
        { id: 'bad', tool: boom, input: {} },
      ],
    });
    const r = await runChain(c, {}, { invoker });
    expect(r.status === 'failed' && [r.error.step, r.compensated]).toEqual(['bad', ['sub/save']]);
    expect(undone).toEqual(['s1']);
  });

  it('runner.close() during a sub-chain: its steps and the run’s are all reported not compensated', async () => {
    const invoker = functionInvoker({
      save: ({ id }: { id: string }) => ({ id }),
      unsave: () => ({ ok: true }),
      reserve: () => ({ id: 'r1' }),
      release: () => ({ ok: true }),
      check: () => new Promise((resolve) => setTimeout(() => resolve({ ok: true }), 500)),
    });
    const c = defineChain({
      name: 'closed_inside',
      input: z.object({}),
      steps: [
        { id: 'reserve', tool: reserve, input: {}, compensate: { tool: release, input: { id: ref('reserve', 'id') } } },
        { id: 'two', chain: saveOne, input: { id: ref('reserve', 'id') } },
      ],
    });
    const runner = createRunner({ invoker });
    const running = runner.run(c, {});
    await new Promise((resolve) => setTimeout(resolve, 50));
    await runner.close();
    const r = await running;
    expect(r.status === 'failed' && r.compensated).toEqual([]);
    expect(r.status === 'failed' && r.compensationFailures?.map((f) => [f.step, f.error.code])).toEqual([
      ['two/save', 'runner_closed'],
      ['reserve', 'runner_closed'],
    ]);
  });

  it('a sub-chain whose `output` throws undoes the steps it completed', async () => {
    const t = tools();
    const throws = defineChain({
      name: 'save_then_throw',
      input: z.object({}),
      steps: [
        { id: 'save', tool: save, input: { id: 't0' }, compensate: { tool: unsave, input: { id: ref('save', 'id') } } },
      ],
      output: () => {
        throw new Error('no output');
      },
    });
    const c = defineChain({
      name: 'outer_throw',
      input: z.object({}),
      steps: [{ id: 'one', chain: throws, input: {} }],
    });
    const r = await runChain(c, {}, { invoker: t.invoker });
    expect(r.status).toBe('failed');
    if (r.status !== 'failed') return;
    expect(r.error).toMatchObject({ code: 'output_failed' });
    expect(t.undone()).toEqual(['unsave t0']);
    expect(r.compensated).toEqual(['one/save']);
  });

  it("failed items collected with onItemError 'collect' each undo their own steps under their own key; the completed ones stay done", async () => {
    const t = tools(['t0', 't1']);
    const c = defineChain({
      name: 'collect_bad',
      input: z.object({}),
      steps: [
        { id: 'find', tool: list, input: { n: 3 } },
        {
          id: 'done',
          forEach: {
            over: ref('find', 'items'),
            chain: saveOne,
            input: { id: ref('item', 'id') },
            onItemError: 'collect',
          },
        },
      ],
    });
    const r = await runChain(c, {}, { invoker: t.invoker });
    expect(r.status).toBe('completed');
    expect(t.undone()).toEqual(['unsave t0', 'unsave t1']);
    expect(t.keys).toEqual([`${r.runId}:done/0/save:compensate`, `${r.runId}:done/1/save:compensate`]);
  });

  it('a durable run undoes completed forEach items when a later step fails, and journals each undo', async () => {
    const t = tools();
    const runs = memoryRunStore();
    const runner = createRunner({ invoker: t.invoker, stores: { runs } });
    try {
      const c = defineChain({
        name: 'durable_fan_out',
        input: z.object({}),
        steps: [
          { id: 'find', tool: list, input: { n: 2 } },
          { id: 'done', forEach: { over: ref('find', 'items'), chain: saveOne, input: { id: ref('item', 'id') } } },
          { id: 'fail', tool: boom, input: () => ({}) },
        ],
      });
      const r = await runner.run(c, {});
      expect(r.status).toBe('failed');
      if (r.status !== 'failed') return;
      expect(r.compensated).toEqual(['done/1/save', 'done/0/save']);
      expect(t.undone()).toEqual(['unsave t1', 'unsave t0']);
      const stored = await runs.get(r.runId);
      expect(stored?.journal.filter((e) => e.compensation === 'undone').map((e) => e.step)).toEqual([
        'done/1/save',
        'done/0/save',
      ]);
    } finally {
      await runner.close();
    }
  });
});

/**
 * A durable run whose owner dies at `hangAt` (that call never answers), then recovered by an heir
 * whose `boom` fails: the calls before the crash, the calls after it, the heir's result.
 */
async function crashThenFail(c: Chain, input: unknown, hangAt: string, bad: string[] = []) {
  let t = 1_000_000;
  const now = (): number => t;
  const runs = memoryRunStore({ now });
  const calls: string[] = [];
  let dead = true;
  let hung = false;
  const seen = new Map<string, number>();
  // `hangAt` names a call (`save t2`), or its n-th time (`check l#2`).
  const hang = (name: string): boolean => {
    const n = (seen.get(name) ?? 0) + 1;
    seen.set(name, n);
    return dead && (name === hangAt || `${name}#${n}` === hangAt) && (hung = true);
  };
  const never = new Promise<never>(() => {});
  const invoker = functionInvoker({
    list: ({ n }: { n: number }) => ({ items: Array.from({ length: n }, (_, i) => ({ id: `t${i}` })) }),
    save: ({ id }: { id: string }) => (hang(`save ${id}`) ? never : (calls.push(`save ${id}`), { id })),
    unsave: ({ id }: { id: string }) => (hang(`unsave ${id}`) ? never : (calls.push(`unsave ${id}`), { ok: true })),
    check: ({ id }: { id: string }) => {
      if (hang(`check ${id}`)) return never;
      if (bad.includes(id)) throw http(403, `no ${id}`);
      return { ok: true };
    },
    reserve: () => (calls.push('reserve'), { id: 'r1' }),
    release: ({ id }: { id: string }) => (calls.push(`release ${id}`), { ok: true }),
    boom: () => {
      if (hang('boom')) return never;
      throw http(403, 'boom');
    },
  });
  const make = (): Runner => {
    const r = createRunner({ invoker, chains: [c], stores: { runs }, now, leaseMs: 1_000 });
    open.push(r);
    return r;
  };
  const owner = make();
  void owner.run(c, input as never, { runId: 'crash' });
  for (let i = 0; i < 400 && !hung; i++) await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, 50)); // what runs beside the hung call ends and is journaled
  const before = [...calls];
  dead = false;
  t += 5_000; // the owner is gone: its lease expired
  const heir = make();
  const [result] = await heir.recover();
  return { before, after: calls.slice(before.length), result };
}

const open: Runner[] = [];
afterEach(async () => {
  for (const r of open.splice(0)) await r.close();
});

describe('a failed sub-chain’s own undos in a durable run', () => {
  it('are journaled: an heir after a crash at the end write neither undoes them again nor reports them otherwise', async () => {
    let t = 1_000_000;
    const now = (): number => t;
    const runs = memoryRunStore({ now });
    const two = defineChain({
      name: 'save_then_check',
      input: z.object({}),
      steps: [
        { id: 'save', tool: save, input: { id: 'in' }, compensate: { tool: unsave, input: { id: ref('save', 'id') } } },
        { id: 'check', tool: check, input: { id: ref('save', 'id') } },
      ],
    });
    const c = defineChain({
      name: 'outer_durable',
      input: z.object({}),
      timeoutMs: 600_000,
      steps: [
        { id: 'reserve', tool: reserve, input: {}, compensate: { tool: release, input: { id: ref('reserve', 'id') } } },
        { id: 'two', chain: two, input: {} },
      ],
    });
    // Each runner its own idempotency store (another process's): only the journal says what was undone.
    const make = (store: typeof runs) => {
      const t2 = tools(['in']);
      const r = createRunner({ invoker: t2.invoker, chains: [c], stores: { runs: store }, now, leaseMs: 60_000 });
      open.push(r);
      return { runner: r, undone: t2.undone };
    };
    let ended = false;
    const owner = make(atEndWrite(runs, () => ((ended = true), new Promise<boolean>(() => {}))));
    void owner.runner.run(c, {}, { runId: 'sub-undo' });
    for (let i = 0; i < 200 && !ended; i++) await new Promise((r) => setTimeout(r, 5));
    expect(owner.undone()).toEqual(['unsave in', 'release r1']);
    t += 61_000; // the owner is gone
    const heir = make(runs);
    const [recovered] = await heir.runner.recover();
    expect(heir.undone()).toEqual([]);
    expect(recovered?.status === 'failed' && recovered.compensated).toEqual(['two/save', 'reserve']);
  });
});

/**
 * Runs `c` durably (run id `runId`, default `dies`) until its owner dies at the journal write holding an
 * entry `dies` picks (that write never answers), then recovers it on a second runner: the `calls` made
 * before, left in `calls` those made after, and the heir's result.
 */
async function diesAtJournal(
  c: Chain,
  invoker: ReturnType<typeof functionInvoker>,
  dies: (e: JournalEntry) => boolean,
  calls: string[],
  runId = 'dies',
) {
  let t = 1_000_000;
  const now = (): number => t;
  const runs = memoryRunStore({ now });
  let died = false;
  const dying: RunStore = {
    ...runs,
    journal: (id, owner, entries, complete) =>
      entries.some(dies) ? ((died = true), new Promise<boolean>(() => {})) : runs.journal(id, owner, entries, complete),
  };
  const make = (store: RunStore): Runner => {
    const r = createRunner({ invoker, chains: [c], stores: { runs: store }, now, leaseMs: 1_000 });
    open.push(r);
    return r;
  };
  void make(dying).run(c, {}, { runId });
  for (let i = 0; i < 200 && !died; i++) await new Promise((r) => setTimeout(r, 5));
  const before = calls.splice(0);
  t += 5_000; // the owner is gone
  const [result] = await make(runs).recover();
  return { before, result };
}

describe('an owner dying between a failed sub-chain’s own undos and the run’s compensation', () => {
  const two = defineChain({
    name: 'save_then_check_once',
    input: z.object({}),
    steps: [
      { id: 'save', tool: save, input: { id: 'in' }, compensate: { tool: unsave, input: { id: ref('save', 'id') } } },
      { id: 'check', tool: check, input: { id: ref('save', 'id') } },
    ],
  });
  // Declared idempotent: no start is journaled before it, so the heir finds no write in doubt.
  const hold = defineTool({ ...reserve, name: 'reserve', idempotent: true });
  const c = defineChain({
    name: 'outer_dying_at_start',
    input: z.object({}),
    timeoutMs: 600_000,
    steps: [
      { id: 'reserve', tool: hold, input: {}, compensate: { tool: release, input: { id: ref('reserve', 'id') } } },
      { id: 'two', chain: two, input: {} },
    ],
  });
  /** `check` refuses its first call, or every one; the owner dies as it journals the run's compensation start. */
  const scenario = async (always: boolean) => {
    const calls: string[] = [];
    const keys: string[] = [];
    let checks = 0;
    const invoker = functionInvoker({
      ...tools().handlers,
      save: ({ id }: { id: string }, call: { idempotencyKey?: string }) => (
        calls.push(`save ${id}`),
        keys.push(call.idempotencyKey!),
        { id }
      ),
      unsave: ({ id }: { id: string }) => (calls.push(`unsave ${id}`), { ok: true }),
      check: () => {
        if (always || ++checks === 1) throw http(403, 'no');
        return { ok: true };
      },
      reserve: () => (calls.push('reserve'), { id: 'r1' }),
      release: ({ id }: { id: string }) => (calls.push(`release ${id}`), { ok: true }),
    });
    const { before, result } = await diesAtJournal(c, invoker, (e) => e.compensation === 'start', calls);
    return { before, after: calls, keys, result };
  };

  it('the heir runs the sub-chain again: its undone write is done again under its key’s next generation', async () => {
    const r = await scenario(false);
    expect(r.before).toEqual(['reserve', 'save in', 'unsave in']);
    expect(r.result?.status).toBe('completed');
    // `reserve` again too: its entry was to ride on a later write (idempotent, it may run again).
    expect(r.after).toEqual(['reserve', 'save in']);
    expect(r.keys).toEqual(['dies:two/save', 'dies:two/save#1']);
  });

  it('a collected item whose own undo was journaled, its owner dying before the item was: run again whole', async () => {
    const calls: string[] = [];
    let refused = false;
    const invoker = functionInvoker({
      ...tools().handlers,
      save: ({ id }: { id: string }) => (calls.push(`save ${id}`), { id }),
      unsave: ({ id }: { id: string }) => (calls.push(`unsave ${id}`), { ok: true }),
      check: ({ id }: { id: string }) => {
        if (id === 't1' && !refused) throw ((refused = true), http(403, 'not now'));
        return { ok: true };
      },
    });
    const c = defineChain({
      name: 'collect_dying',
      input: z.object({}),
      timeoutMs: 600_000,
      steps: [
        { id: 'find', tool: list, input: { n: 2 } },
        {
          id: 'done',
          forEach: {
            over: ref('find', 'items'),
            chain: saveOne,
            input: { id: ref('item', 'id') },
            onItemError: 'collect',
            concurrency: 1,
          },
        },
      ],
    });
    const { before, result } = await diesAtJournal(c, invoker, (e) => e.step === 'done/1', calls, 'fe');
    expect(before).toEqual(['save t0', 'save t1', 'unsave t1']);
    expect(result?.status === 'completed' && result.output).toEqual([
      { ok: true, value: 't0' },
      { ok: true, value: 't1' },
    ]);
    expect(calls).toEqual(['save t1']); // its save holds again
  });

  it('when the sub-chain fails again, the heir reports its undo as the owner would have', async () => {
    const r = await scenario(true);
    expect(r.result?.status === 'failed' && r.result.compensated).toEqual(['two/save', 'reserve']);
    expect(r.after).toEqual(['reserve', 'save in', 'unsave in', 'release r1']);
  });
});

describe('a collected item’s own undo in a durable run', () => {
  it('is no compensation of the run: a plain write in flight at a crash after it still parks the run in doubt', async () => {
    let t = 1_000_000;
    const now = (): number => t;
    const runs = memoryRunStore({ now });
    const pay = defineTool({
      name: 'pay',
      description: 'A payment API that ignores idempotency keys',
      input: z.object({ n: z.number() }),
      output: z.object({ paid: z.boolean() }),
      effect: 'write',
      retry: false,
    });
    const c = defineChain({
      name: 'collect_then_pay',
      input: z.object({}),
      timeoutMs: 600_000,
      steps: [
        { id: 'find', tool: list, input: { n: 2 } },
        {
          id: 'done',
          forEach: {
            over: ref('find', 'items'),
            chain: saveOne,
            input: { id: ref('item', 'id') },
            onItemError: 'collect',
          },
        },
        { id: 'pay', tool: pay, input: { n: 1 } },
      ],
    });
    let hung = false;
    const payCalls: number[] = [];
    const invoker = functionInvoker({
      ...tools(['t1']).handlers,
      pay: () => {
        payCalls.push(1);
        if (payCalls.length === 1) return ((hung = true), new Promise<never>(() => {})); // the charge went out; the owner dies
        return { paid: true };
      },
    });
    const make = (): Runner => {
      const r = createRunner({ invoker, chains: [c], stores: { runs }, now, leaseMs: 1_000 });
      open.push(r);
      return r;
    };
    void make().run(c, {}, { runId: 'collect-pay' });
    for (let i = 0; i < 400 && !hung; i++) await new Promise((r) => setTimeout(r, 5));
    t += 5_000; // the owner is gone
    const [recovered] = await make().recover();
    expect(payCalls).toHaveLength(1);
    expect(recovered?.status).toBe('in_doubt');
  });
});

describe('compensation of a recovered run', () => {
  const fanOut = defineChain({
    name: 'fan_out_recovered',
    input: z.object({ n: z.number() }),
    timeoutMs: 60_000,
    steps: [
      { id: 'reserve', tool: reserve, input: {}, compensate: { tool: release, input: { id: ref('reserve', 'id') } } },
      { id: 'find', tool: list, input: { n: ref('input', 'n') } },
      {
        id: 'done',
        forEach: { over: ref('find', 'items'), chain: saveOne, input: { id: ref('item', 'id') }, concurrency: 2 },
      },
      { id: 'fail', tool: boom, input: () => ({}) },
    ],
  });

  it('a forEach finished before the crash: a later failure after recovery undoes its items (newest first, once each)', async () => {
    const r = await crashThenFail(fanOut, { n: 3 }, 'boom');
    expect(r.before).toEqual(['reserve', 'save t0', 'save t1', 'save t2']);
    expect(r.result?.status).toBe('failed');
    if (r.result?.status !== 'failed') return;
    expect(r.result.error).toMatchObject({ step: 'fail' });
    expect(r.result.compensated).toEqual(['done/2/save', 'done/1/save', 'done/0/save', 'reserve']);
    expect(r.after).toEqual(['unsave t2', 'unsave t1', 'unsave t0', 'release r1']);
  });

  it('recovered mid-forEach: the items finished before the crash are undone with those finished after it', async () => {
    // Items 0, 1 and 3 finish before the crash; item 2 dies in its read, its write journaled (not called again).
    const r = await crashThenFail(fanOut, { n: 4 }, 'check t2');
    expect(r.before).toEqual(['reserve', 'save t0', 'save t1', 'save t2', 'save t3']);
    expect(r.result?.status).toBe('failed');
    if (r.result?.status !== 'failed') return;
    expect(r.result.compensated).toEqual(['done/3/save', 'done/2/save', 'done/1/save', 'done/0/save', 'reserve']);
    expect(r.after).toEqual(['unsave t3', 'unsave t2', 'unsave t1', 'unsave t0', 'release r1']);
  });

  it('killed while undoing the items: the next owner undoes the rest, the undo in flight again, none done twice', async () => {
    const r = await crashThenFail(fanOut, { n: 3 }, 'unsave t1');
    expect(r.before).toEqual(['reserve', 'save t0', 'save t1', 'save t2', 'unsave t2']);
    expect(r.result?.status).toBe('failed');
    if (r.result?.status !== 'failed') return;
    expect(r.result.compensated).toEqual(['done/2/save', 'done/1/save', 'done/0/save', 'reserve']);
    expect(r.after).toEqual(['unsave t1', 'unsave t0', 'release r1']);
  });

  it('a collected item that failed before the crash undid its own steps then: recovery does not undo them again', async () => {
    const c = defineChain({
      name: 'collect_recovered',
      input: z.object({}),
      timeoutMs: 60_000,
      steps: [
        { id: 'find', tool: list, input: { n: 3 } },
        {
          id: 'done',
          forEach: {
            over: ref('find', 'items'),
            chain: saveOne,
            input: { id: ref('item', 'id') },
            onItemError: 'collect',
          },
        },
        { id: 'fail', tool: boom, input: () => ({}) },
      ],
    });
    const r = await crashThenFail(c, {}, 'boom', ['t1']);
    expect(r.before).toEqual(['save t0', 'save t1', 'unsave t1', 'save t2']);
    expect(r.result?.status).toBe('failed');
    if (r.result?.status !== 'failed') return;
    expect(r.result.compensated).toEqual(['done/2/save', 'done/0/save']);
    expect(r.after).toEqual(['unsave t2', 'unsave t0']);
    // Killed in the middle of the run's own undos: the heir finishes them, and reports them as its owner would.
    const live = await runChain(c, {}, { invoker: tools(['t1']).invoker });
    const mid = await crashThenFail(c, {}, 'unsave t0', ['t1']);
    const report = (x: RunResult | undefined) =>
      x?.status === 'failed' && [
        x.compensated,
        x.trace.steps.filter((e) => e.status === 'compensated').map((e) => e.id),
      ];
    expect(report(mid.result)).toEqual(report(live));
    expect([...mid.before, ...mid.after]).toEqual([
      'save t0',
      'save t1',
      'unsave t1',
      'save t2',
      'unsave t2',
      'unsave t0',
    ]);
  });

  it('recovered mid-loop: the iterations finished before the crash are undone with those run after it', async () => {
    const c = defineChain({
      name: 'loop_recovered',
      input: z.object({}),
      timeoutMs: 60_000,
      steps: [
        {
          id: 'poll',
          loop: { chain: saveOne, input: { id: 'l' }, until: (_out: unknown, n: number) => n === 3, max: 5 },
        },
        { id: 'fail', tool: boom, input: () => ({}) },
      ],
    } as never);
    // Iteration 1 finishes before the crash; iteration 2 dies in its read, its write journaled.
    const r = await crashThenFail(c as never, {}, 'check l#2');
    expect(r.before).toEqual(['save l', 'save l']);
    expect(r.result?.status).toBe('failed');
    if (r.result?.status !== 'failed') return;
    expect(r.result.compensated).toEqual(['poll/3/save', 'poll/2/save', 'poll/1/save']);
    expect(r.after).toEqual(['save l', 'unsave l', 'unsave l', 'unsave l']);
  });

  it('`chain`, `branch` and `loop` steps finished before the crash: a later failure after recovery undoes their steps', async () => {
    const inner = defineChain({
      name: 'inner_recovered',
      input: z.object({}),
      steps: [
        { id: 'find', tool: list, input: { n: 2 } },
        { id: 'each', forEach: { over: ref('find', 'items'), chain: saveOne, input: { id: ref('item', 'id') } } },
      ],
    });
    const one = (id: string) =>
      defineChain({
        name: `one_recovered_${id}`,
        input: z.object({ n: z.number() }),
        steps: [
          { id: 'save', tool: save, input: { id }, compensate: { tool: unsave, input: { id: ref('save', 'id') } } },
        ],
      });
    const c = defineChain({
      name: 'nested_recovered',
      input: z.object({ kind: z.enum(['a', 'b']) }),
      timeoutMs: 60_000,
      steps: [
        { id: 'audit', chain: inner, input: {} },
        {
          id: 'pick',
          branch: {
            on: (s: { input: { kind: string } }) => s.input.kind,
            cases: { a: { chain: one('a'), input: () => ({ n: 1 }) }, b: { chain: one('b'), input: () => ({ n: 1 }) } },
          },
        },
        {
          id: 'poll',
          loop: { chain: one('l'), input: () => ({ n: 1 }), until: (_out: unknown, n: number) => n === 2, max: 5 },
        },
        { id: 'fail', tool: boom, input: () => ({}) },
      ],
    } as never);
    const r = await crashThenFail(c as never, { kind: 'b' }, 'boom');
    expect(r.before).toEqual(['save t0', 'save t1', 'save b', 'save l', 'save l']);
    expect(r.result?.status).toBe('failed');
    if (r.result?.status !== 'failed') return;
    expect(r.result.compensated).toEqual([
      'poll/2/save',
      'poll/1/save',
      'pick/save',
      'audit/each/1/save',
      'audit/each/0/save',
    ]);
    expect(r.after).toEqual(['unsave l', 'unsave l', 'unsave b', 'unsave t1', 'unsave t0']);
  });
});
