// After an undo, a write's key runs again under its next generation (`key#1`): what each undo takes
// back is the generation its own write ran under — after a gate, in a sub-chain, in a durable run
// resumed from its journal — and the store's mark of an undone write is not a value a tool can return.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { chain, createRunner, defineChain, defineTool, memoryIdempotencyStore, memoryRunStore, ref } from 'chainkit';
import { createMockInvoker } from 'chainkit/testing';
import { http } from '../helpers.js';

const HOUR = 3_600_000;
const SECRET = 'a-secret-of-at-least-32-characters!!';
const add = defineTool({
  name: 'add',
  description: 'a',
  effect: 'write',
  input: z.object({ title: z.string() }),
  output: z.object({ id: z.string() }),
  idempotencyKey: (input) => `add:${input.title}`,
  idempotencyTtlMs: HOUR,
});
const remove = defineTool({
  name: 'remove',
  description: 'r',
  effect: 'destructive',
  retry: false,
  timeoutMs: 100,
  input: z.object({ id: z.string() }),
  output: z.object({ ok: z.boolean() }),
});
const charge = defineTool({
  name: 'charge',
  description: 'c',
  effect: 'write',
  retry: false,
  input: z.object({ who: z.string(), task: z.string().optional() }),
  output: z.object({ ok: z.boolean() }),
});
const Input = z.object({ title: z.string(), who: z.string() });
/**
 * add (undone by remove), then charge for the added task: declined for a `who` starting with `bad`; with
 * a gate before charge.
 */
const addThenPay = (name: string, gated: boolean) =>
  defineChain({
    name,
    input: Input,
    steps: [
      {
        id: 'add',
        tool: add,
        input: { title: ref('input', 'title') },
        compensate: { tool: remove, input: { id: ref('add', 'id') } },
      },
      {
        id: 'pay',
        tool: charge,
        input: { who: ref('input', 'who'), task: ref('add', 'id') },
        ...(gated && { confirm: { prompt: 'Pay?' } }),
      },
    ],
  });
const plain = addThenPay('plain', false);
const gated = addThenPay('gated', true);

/**
 * A task service: `add` makes a task, `remove` deletes it (the first one after `firstRemoveMs`, each one
 * after `hooks.beforeRemove` settles); `live` is what exists.
 */
const service = (firstRemoveMs = 0) => {
  let n = 0;
  let removes = 0;
  const live = new Set<string>();
  const hooks: { beforeRemove?: () => Promise<unknown> } = {};
  const invoker = createMockInvoker({
    add: () => {
      const id = `t${++n}`;
      live.add(id);
      return { id };
    },
    remove: async (i: { id: string }) => {
      if (++removes === 1 && firstRemoveMs > 0) await new Promise((r) => setTimeout(r, firstRemoveMs));
      await hooks.beforeRemove?.();
      live.delete(i.id);
      return { ok: true };
    },
    charge: (i: { who: string }) => {
      if (i.who.startsWith('bad')) throw http(402, 'declined');
      return { ok: true };
    },
  });
  return { invoker, live, hooks };
};

afterEach(() => {
  vi.useRealTimers();
});

describe('undo generations', () => {
  it('an undo after a gate takes back its own write, not a later one another run made under the next generation', async () => {
    const { invoker, live } = service();
    const runner = createRunner({ invoker, secret: SECRET });
    const r1 = await runner.run(gated, { title: 'milk', who: 'bad-1' }); // t1, parked at the gate
    if (r1.status !== 'awaiting_confirmation') throw new Error(r1.status);
    expect((await runner.run(plain, { title: 'milk', who: 'bad-2' })).status).toBe('failed'); // answered t1, undoes it
    expect((await runner.run(plain, { title: 'milk', who: 'ok' })).status).toBe('completed'); // t2 under add:milk#1
    expect((await runner.resume(r1.resumeToken, { approved: true })).status).toBe('failed'); // t1 was undone already
    expect((await runner.run(plain, { title: 'milk', who: 'ok' })).status).toBe('completed'); // answered t2
    expect(invoker.callsTo('remove').map((c) => c.input)).toEqual([{ id: 't1' }]);
    expect([...live]).toEqual(['t2']);
  });

  it('a write done again after an undo and approved past its key’s TTL is still undone, under its own generation', async () => {
    const { invoker, live } = service();
    let t = 1_000_000;
    const runner = createRunner({ invoker, confirmationTtlMs: 6 * HOUR, now: () => t, secret: SECRET });
    const first = await runner.run(gated, { title: 'milk', who: 'bad' }, { runId: 'R' });
    if (first.status !== 'awaiting_confirmation') throw new Error(first.status);
    expect((await runner.resume(first.resumeToken, { approved: true })).status).toBe('failed'); // t1 undone
    t += 60_000;
    const second = await runner.run(gated, { title: 'milk', who: 'bad' }, { runId: 'R' }); // t2 under add:milk#1
    if (second.status !== 'awaiting_confirmation') throw new Error(second.status);
    t += 2 * HOUR; // add's keys (1 h) have lapsed; the first undo's (24 h) has not
    const end = await runner.resume(second.resumeToken, { approved: true });
    expect(end.status === 'failed' && end.compensated).toEqual(['add']);
    expect(invoker.callsTo('remove').map((c) => [c.input, c.idempotencyKey])).toEqual([
      [{ id: 't1' }, 'R:add:compensate'],
      [{ id: 't2' }, 'R:add:compensate#1'],
    ]);
    expect([...live]).toEqual([]);
  });

  it('a key a caller chose with a `#` is its own, not another key’s next generation', async () => {
    const hold = defineTool({
      name: 'hold',
      description: 'h',
      effect: 'write',
      input: z.object({ ref: z.string() }),
      output: z.object({ id: z.string() }),
      idempotencyKey: (input) => input.ref, // order-7 for the whole order, order-7#1 for its line 1
    });
    const holdThenPay = defineChain({
      name: 'hold_then_pay',
      input: z.object({ ref: z.string(), who: z.string() }),
      steps: [
        {
          id: 'hold',
          tool: hold,
          input: { ref: ref('input', 'ref') },
          compensate: { tool: remove, input: { id: ref('hold', 'id') } },
        },
        { id: 'pay', tool: charge, input: { who: ref('input', 'who') } },
      ],
    });
    let n = 0;
    const invoker = createMockInvoker({
      hold: () => ({ id: `h${++n}` }),
      remove: { ok: { ok: true } },
      charge: (i: { who: string }) => {
        if (i.who === 'bad') throw http(402);
        return { ok: true };
      },
    });
    const runner = createRunner({ invoker });
    expect((await runner.run(holdThenPay, { ref: 'order-7', who: 'bad' })).status).toBe('failed');
    expect((await runner.run(holdThenPay, { ref: 'order-7', who: 'ok' })).status).toBe('completed');
    const line = await runner.run(holdThenPay, { ref: 'order-7#1', who: 'ok' });
    expect(line.trace.steps[0]!.status).toBe('success');
    // The tool does see `order-7#1` twice: the second generation of order-7, then line 1's own key.
    expect(invoker.callsTo('hold').map((c) => [c.input, c.idempotencyKey])).toEqual([
      [{ ref: 'order-7' }, 'order-7'],
      [{ ref: 'order-7' }, 'order-7#1'],
      [{ ref: 'order-7#1' }, 'order-7#1'],
    ]);
  });

  it('a tool output that looks like the undone mark is a kept result like any other', async () => {
    const proxy = defineTool({
      name: 'proxy',
      description: 'p',
      effect: 'write',
      input: z.object({}),
      output: z.looseObject({ id: z.string() }),
    });
    const once = chain('proxy_once', { input: z.object({}) })
      .tool('call', proxy, () => ({}))
      .build();
    const invoker = createMockInvoker({ proxy: { ok: { id: 'p1', s: 'x', '~chainkit/undone': true } } });
    const runner = createRunner({ invoker });
    expect((await runner.run(once, {}, { runId: 'same' })).status).toBe('completed');
    expect((await runner.run(once, {}, { runId: 'same' })).status).toBe('completed');
    expect(invoker.callsTo('proxy')).toHaveLength(1);
  });

  it('a write in a sub-chain, before a gate of its parent, is undone under its own generation after the resume', async () => {
    const addOne = chain('add_one', { input: z.object({ title: z.string() }) })
      .tool('add', add, (r) => ({ title: r('input', 'title') }), {
        compensate: { tool: remove, input: (s) => ({ id: s.results.add.id }) },
      })
      .output((s) => s.results.add);
    const parent = chain('add_via_sub', { input: Input })
      .chain('one', addOne, (r) => ({ title: r('input', 'title') }))
      .tool('pay', charge, (r) => ({ who: r('input', 'who') }), { confirm: { prompt: 'Pay?' } })
      .build();
    const { invoker, live } = service();
    const runner = createRunner({ invoker, secret: SECRET });
    expect((await runner.run(plain, { title: 'milk', who: 'bad' })).status).toBe('failed'); // t1 undone
    const gate = await runner.run(parent, { title: 'milk', who: 'bad' }, { runId: 'S' }); // t2 under add:milk#1
    if (gate.status !== 'awaiting_confirmation') throw new Error(gate.status);
    const end = await runner.resume(gate.resumeToken, { approved: true });
    expect(end.status === 'failed' && end.compensated).toEqual(['one/add']);
    expect(invoker.callsTo('remove').map((c) => [c.input, c.idempotencyKey])).toEqual([
      [{ id: 't1' }, expect.stringMatching(/:add:compensate$/)],
      [{ id: 't2' }, 'S:one/add:compensate#1'],
    ]);
    expect([...live]).toEqual([]);
    // The next add of the same title is a third task: both earlier ones were undone.
    expect((await runner.run(plain, { title: 'milk', who: 'ok' })).status).toBe('completed');
    expect([...live]).toEqual(['t3']);
  });

  it('a write in a sub-chain that parks at its own gate is undone under its own generation after the resume', async () => {
    const addAndPay = chain('add_and_pay', { input: Input })
      .tool('add', add, (r) => ({ title: r('input', 'title') }), {
        compensate: { tool: remove, input: (s) => ({ id: s.results.add.id }) },
      })
      .tool('pay', charge, (r) => ({ who: r('input', 'who') }), { confirm: { prompt: 'Pay?' } })
      .output((s) => s.results.pay);
    const parent = chain('pay_inside', { input: Input })
      .chain('inner', addAndPay, (r) => ({ title: r('input', 'title'), who: r('input', 'who') }))
      .build();
    const { invoker, live } = service();
    const runner = createRunner({ invoker, secret: SECRET });
    expect((await runner.run(plain, { title: 'milk', who: 'bad' })).status).toBe('failed'); // t1 undone
    const gate = await runner.run(parent, { title: 'milk', who: 'bad' }, { runId: 'N' }); // t2 under add:milk#1
    if (gate.status !== 'awaiting_confirmation') throw new Error(gate.status);
    const end = await runner.resume(gate.resumeToken, { approved: true });
    expect(end.status).toBe('failed');
    // The sub-chain undid its own step as it failed (in the trace; a run's `compensated` lists the undos it ran).
    const inner = end.trace.steps.find((t) => t.id === 'inner')!;
    expect(inner.children!.map((t) => [t.id, t.status])).toContainEqual(['inner/add', 'compensated']);
    expect(invoker.callsTo('remove').map((c) => c.idempotencyKey)).toEqual([
      expect.stringMatching(/:add:compensate$/),
      'N:inner/add:compensate#1',
    ]);
    expect([...live]).toEqual([]);
  });

  it('a durable run continued from its journal undoes the generation its write ran under', async () => {
    const reviewed = defineChain({
      name: 'reviewed',
      input: Input,
      timeoutMs: 60_000,
      steps: [
        {
          id: 'add',
          tool: add,
          input: { title: ref('input', 'title') },
          compensate: { tool: remove, input: { id: ref('add', 'id') } },
        },
        { id: 'review', waitFor: { signal: 'review', schema: z.object({ ok: z.boolean() }), timeoutMs: HOUR } },
        { id: 'pay', tool: charge, input: { who: ref('input', 'who') } },
      ] as const,
    });
    const idempotency = memoryIdempotencyStore();
    const runs = memoryRunStore({ idempotency });
    const { invoker, live } = service();
    const runner = createRunner({ invoker, stores: { runs, idempotency } });
    expect((await runner.run(plain, { title: 'milk', who: 'bad' })).status).toBe('failed'); // t1 undone
    const parked = await runner.run(reviewed, { title: 'milk', who: 'bad' }, { runId: 'D' }); // t2 under add:milk#1
    expect(parked.status).toBe('waiting');
    // Another instance continues it from the journal.
    const elsewhere = createRunner({ invoker, stores: { runs, idempotency }, chains: [reviewed] });
    const end = await elsewhere.signal('D', 'review', { ok: true });
    expect(end !== 'not_found' && end !== 'not_waiting' && end.status === 'failed' && end.compensated).toEqual(['add']);
    expect(invoker.callsTo('remove').map((c) => [c.input, c.idempotencyKey])).toEqual([
      [{ id: 't1' }, expect.stringMatching(/:add:compensate$/)],
      [{ id: 't2' }, 'D:add:compensate#1'],
    ]);
    expect([...live]).toEqual([]);
    await Promise.all([runner.close(), elsewhere.close()]);
  });
  it('an undo that times out and answers late still marks its write undone (a later add writes again)', async () => {
    vi.useFakeTimers();
    // The first undo answers after 500 ms (its timeout is 100 ms): it did take effect.
    const { invoker, live } = service(500);
    const runner = createRunner({ invoker });
    const first = runner.run(plain, { title: 'milk', who: 'bad' });
    await vi.advanceTimersByTimeAsync(200);
    const r1 = await first;
    expect(r1.status === 'failed' && r1.compensationFailures?.map((f) => f.step)).toEqual(['add']);
    await vi.advanceTimersByTimeAsync(400); // the undo's late answer: t1 is removed, kept as the undo's outcome
    expect([...live]).toEqual([]);
    const second = await runner.run(plain, { title: 'milk', who: 'ok' });
    expect(second.status).toBe('completed');
    expect(second.trace.steps[0]!.status).toBe('success');
    expect([...live]).toEqual(['t2']);
    await runner.close();
  });

  it('a write in a sub-chain with a narrower context schema is marked undone when its parent fails', async () => {
    const addOne = chain('add_one', {
      input: z.object({ title: z.string() }),
      context: z.object({ userId: z.string() }),
    })
      .tool('add', add, (r) => ({ title: r('input', 'title') }), {
        compensate: { tool: remove, input: (s) => ({ id: s.results.add.id }) },
      })
      .output((s) => s.results.add);
    const parent = chain('add_via_sub', {
      input: Input,
      context: z.object({ userId: z.string(), requestId: z.string() }),
    })
      .chain('one', addOne, (r) => ({ title: r('input', 'title') }))
      .tool('pay', charge, (r) => ({ who: r('input', 'who') }))
      .build();
    const { invoker, live } = service();
    const runner = createRunner({ invoker });
    const context = { userId: 'u1', requestId: 'req-1' };
    const r1 = await runner.run(parent, { title: 'milk', who: 'bad' }, { context });
    expect(r1.status === 'failed' && r1.compensated).toEqual(['one/add']);
    expect([...live]).toEqual([]);
    const r2 = await runner.run(parent, { title: 'milk', who: 'ok' }, { context: { ...context, requestId: 'req-2' } });
    expect(r2.status).toBe('completed');
    expect([...live]).toEqual(['t2']);
    await runner.close();
  });

  it('a write done again under the same runId after its undo mark lapsed is undone, not answered by the old undo record', async () => {
    let t = 1_000_000;
    const { invoker, live } = service();
    const runner = createRunner({ invoker, now: () => t });
    expect((await runner.run(plain, { title: 'milk', who: 'bad' }, { runId: 'R' })).status).toBe('failed'); // t1 undone
    t += 2 * HOUR; // add's key and its undone mark (1 h) lapse; remove's record of R:add:compensate (24 h) does not
    const again = await runner.run(plain, { title: 'milk', who: 'bad' }, { runId: 'R' }); // t2, under add:milk again
    expect(again.status === 'failed' && again.compensated).toEqual(['add']);
    expect(invoker.callsTo('remove').map((c) => c.input)).toEqual([{ id: 't1' }, { id: 't2' }]);
    expect([...live]).toEqual([]);
    await runner.close();
  });

  it('two runs answered with one write, failing together, undo it once', async () => {
    const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
    let n = 0;
    const invoker = createMockInvoker({
      add: async () => (await pause(20), { id: `t${++n}` }),
      remove: async () => (await pause(20), { ok: true }),
      charge: async () => {
        await pause(5);
        throw http(503, 'payments down');
      },
    });
    const runner = createRunner({
      invoker,
      retry: { unavailable: { retries: 0, minDelayMs: 0, factor: 1, maxDelayMs: 0 } },
    });
    // B is a duplicate of A's add (the same key, in flight): it is answered with t1. Both payments fail.
    const [a, b] = await Promise.all([
      runner.run(plain, { title: 'milk', who: 'a' }, { runId: 'A' }),
      runner.run(plain, { title: 'milk', who: 'b' }, { runId: 'B' }),
    ]);
    expect([a.status, b.status]).toEqual(['failed', 'failed']);
    expect(invoker.callsTo('add')).toHaveLength(1);
    expect(invoker.callsTo('remove').map((c) => c.input)).toEqual([{ id: 't1' }]);
    expect([a, b].map((r) => r.status === 'failed' && r.compensated)).toEqual([['add'], ['add']]);
  });

  it('an undo that ran after its write key lapsed does not answer the undo of a later write under that key', async () => {
    const { invoker, live } = service();
    let t = 1_000_000;
    const runner = createRunner({ invoker, confirmationTtlMs: 6 * HOUR, now: () => t, secret: SECRET });
    const r1 = await runner.run(gated, { title: 'milk', who: 'bad-1' }); // t1, parked
    if (r1.status !== 'awaiting_confirmation') throw new Error(r1.status);
    t += 2 * HOUR; // add's key (1 h) lapsed
    expect((await runner.resume(r1.resumeToken, { approved: true })).status).toBe('failed'); // t1 removed
    expect([...live]).toEqual([]);
    t += 60_000;
    const r2 = await runner.run(plain, { title: 'milk', who: 'bad-2' }); // a new write, t2, under the same key
    expect(r2.status).toBe('failed');
    expect(invoker.callsTo('remove').map((c) => c.input)).toEqual([{ id: 't1' }, { id: 't2' }]);
    expect([...live]).toEqual([]);
  });

  it('a write whose key ends in `:undo` is not taken for the undo of another write', async () => {
    const { invoker, live } = service();
    const runner = createRunner({ invoker });
    expect((await runner.run(plain, { title: 'milk:undo', who: 'ok' })).status).toBe('completed'); // t1
    const r = await runner.run(plain, { title: 'milk', who: 'bad' }); // t2, then undone
    expect(r.status).toBe('failed');
    expect(invoker.callsTo('remove').map((c) => c.input)).toEqual([{ id: 't2' }]);
    expect([...live]).toEqual(['t1']);
  });

  it('an undo whose write key collides the other way: the undo record answers a write', async () => {
    const { invoker, live } = service();
    const runner = createRunner({ invoker });
    expect((await runner.run(plain, { title: 'milk', who: 'bad' })).status).toBe('failed'); // t1 undone
    const r = await runner.run(plain, { title: 'milk:undo', who: 'ok' });
    expect(r.status).toBe('completed');
    expect(r.trace.steps[0]!.status).toBe('success');
    expect(invoker.callsTo('add')).toHaveLength(2);
    expect([...live]).toEqual(['t2']);
  });
});

// A write's key lapsed while its run was parked, and another run wrote under it: the key now holds
// that other write, which an undo of the first must not mark undone (a later call would write again).
describe('an undo after its write’s key lapsed and another run wrote under it', () => {
  const parkedPastTtl = async () => {
    const s = service();
    let t = 1_000_000;
    const runner = createRunner({ invoker: s.invoker, confirmationTtlMs: 6 * HOUR, now: () => t, secret: SECRET });
    const r1 = await runner.run(gated, { title: 'milk', who: 'bad-1' }); // t1, parked at the gate
    if (r1.status !== 'awaiting_confirmation') throw new Error(r1.status);
    t += 2 * HOUR; // add's key (1 h) lapsed
    return { ...s, runner, token: r1.resumeToken };
  };

  it('leaves a result kept there by the other write alone', async () => {
    const { invoker, live, runner, token } = await parkedPastTtl();
    expect((await runner.run(plain, { title: 'milk', who: 'ok' })).status).toBe('completed'); // t2, kept under add:milk
    expect((await runner.resume(token, { approved: true })).status).toBe('failed'); // t1 removed
    const again = await runner.run(plain, { title: 'milk', who: 'ok' }); // answered with t2
    expect(again.status === 'completed' && again.trace.steps[0]!.status).toBe('cached');
    expect(invoker.callsTo('add')).toHaveLength(2);
    expect(invoker.callsTo('remove').map((c) => c.input)).toEqual([{ id: 't1' }]);
    expect([...live]).toEqual(['t2']);
  });

  it('leaves alone a write the other run completes while the undo runs', async () => {
    const { invoker, live, hooks, runner, token } = await parkedPastTtl();
    let other: Promise<unknown> | undefined;
    // The undo's tool lets another run add milk (t2) before it answers.
    hooks.beforeRemove = () => (other ??= runner.run(plain, { title: 'milk', who: 'ok' }));
    expect((await runner.resume(token, { approved: true })).status).toBe('failed'); // t1 removed
    expect(await other).toMatchObject({ status: 'completed' });
    const again = await runner.run(plain, { title: 'milk', who: 'ok' }); // answered with t2
    expect(again.status === 'completed' && again.trace.steps[0]!.status).toBe('cached');
    expect(invoker.callsTo('add')).toHaveLength(2);
    expect([...live]).toEqual(['t2']);
  });

  it('a write’s record that lapses while its undo runs: the write made under the key meanwhile stays kept', async () => {
    let t = 1_000_000;
    const { invoker, live, hooks } = service();
    const runner = createRunner({ invoker, now: () => t });
    let other: Promise<unknown> | undefined;
    // The undo is slow: add's key (1 h) lapses meanwhile, and another run adds milk again (t2).
    hooks.beforeRemove = () => {
      t += 2 * HOUR;
      return (other ??= runner.run(plain, { title: 'milk', who: 'ok' }));
    };
    expect((await runner.run(plain, { title: 'milk', who: 'bad' })).status).toBe('failed'); // t1 added, then removed
    expect(await other).toMatchObject({ status: 'completed' });
    const again = await runner.run(plain, { title: 'milk', who: 'ok' }); // answered with t2
    expect(again.status === 'completed' && again.trace.steps[0]!.status).toBe('cached');
    expect([...live]).toEqual(['t2']);
  });

  it('a duplicate answered just before the key lapsed does not take the write made just after it for its own', async () => {
    const { invoker, live } = service();
    let t = 1_000_000;
    const runner = createRunner({ invoker, confirmationTtlMs: 6 * HOUR, now: () => t, secret: SECRET });
    const park = async (who: string) => {
      const r = await runner.run(gated, { title: 'milk', who });
      if (r.status !== 'awaiting_confirmation') throw new Error(r.status);
      return r;
    };
    const a = await park('bad-a'); // t1
    t += HOUR - 1_000;
    const b = await park('bad-b'); // answered with t1, 1 s before add:milk lapses
    expect(b.trace.steps[0]!.status).toBe('cached');
    t += 2_000;
    const c = await park('bad-c'); // t2, 1 s after: another write
    for (const r of [b, c, a]) expect((await runner.resume(r.resumeToken, { approved: true })).status).toBe('failed');
    expect(invoker.callsTo('remove').map((call) => call.input)).toEqual([{ id: 't1' }, { id: 't2' }]);
    expect([...live]).toEqual([]);
  });

  it('writes whose results are equal are told apart: each run’s write is undone, and the later one stays kept', async () => {
    const subscribe = defineTool({
      name: 'subscribe',
      description: 's',
      effect: 'write',
      input: z.object({ email: z.string() }),
      output: z.object({ ok: z.boolean() }),
      idempotencyKey: (input) => `sub:${input.email}`,
      idempotencyTtlMs: HOUR,
    });
    const unsubscribe = defineTool({
      name: 'unsubscribe',
      description: 'u',
      effect: 'write',
      retry: false,
      input: z.object({ email: z.string() }),
      output: z.object({ ok: z.boolean() }),
    });
    const signUp = (gated: boolean) =>
      defineChain({
        name: gated ? 'sign_up_gated' : 'sign_up',
        input: Input,
        steps: [
          {
            id: 'sub',
            tool: subscribe,
            input: { email: ref('input', 'title') },
            compensate: { tool: unsubscribe, input: { email: ref('input', 'title') } },
          },
          {
            id: 'pay',
            tool: charge,
            input: { who: ref('input', 'who'), task: ref('input', 'title') },
            ...(gated && { confirm: { prompt: 'Pay?' } }),
          },
        ],
      });
    const invoker = createMockInvoker({
      subscribe: { ok: { ok: true } },
      unsubscribe: { ok: { ok: true } },
      charge: (i: { who: string }) => {
        if (i.who.startsWith('bad')) throw http(402, 'declined');
        return { ok: true };
      },
    });
    let t = 1_000_000;
    const runner = createRunner({ invoker, confirmationTtlMs: 6 * HOUR, now: () => t, secret: SECRET });
    const a = await runner.run(signUp(true), { title: 'a@x', who: 'bad-a' }); // subscribed, parked
    if (a.status !== 'awaiting_confirmation') throw new Error(a.status);
    t += 2 * HOUR; // sub:a@x lapsed
    const b = await runner.run(signUp(true), { title: 'a@x', who: 'bad-b' }); // subscribed again: another write
    if (b.status !== 'awaiting_confirmation') throw new Error(b.status);
    expect((await runner.resume(a.resumeToken, { approved: true })).status).toBe('failed');
    expect(invoker.callsTo('unsubscribe')).toHaveLength(1); // a's own write undone; b's kept, not marked
    const c = await runner.run(signUp(false), { title: 'a@x', who: 'ok' });
    expect(c.status === 'completed' && c.trace.steps[0]!.status).toBe('cached'); // answered with b's
    expect((await runner.resume(b.resumeToken, { approved: true })).status).toBe('failed');
    expect(invoker.callsTo('unsubscribe')).toHaveLength(2); // b's undo is its own, not answered by a's
    expect(invoker.callsTo('subscribe')).toHaveLength(2);
  });
});
