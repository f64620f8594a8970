// The key the idempotency store keeps a call under: its key scoped to its tool and its caller.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, memoryIdempotencyStore, ref, type ToolCall } from 'chainkit';
import { createMockInvoker } from 'chainkit/testing';
import { hashContext } from '../../src/run/checkpoint.js';
import { idempotencyStoreKey } from '../../src/run/call-context.js';

describe('idempotencyStoreKey', () => {
  it('is tool:hash of the validated context:key, the same hash a run id and a checkpoint are bound by', () => {
    const alice = { userId: 'alice', roles: ['admin'] };
    expect(idempotencyStoreKey('transfer', alice, 'req-1')).toBe(`transfer:${hashContext(alice)}:req-1`);
    expect(idempotencyStoreKey('transfer', alice, 'req-1')).toMatch(/^transfer:[0-9a-f]{64}:req-1$/);
    // Equal contexts in another key order, or another object, give the same key (kept hashes included).
    expect(idempotencyStoreKey('transfer', { roles: ['admin'], userId: 'alice' }, 'req-1')).toBe(
      idempotencyStoreKey('transfer', alice, 'req-1'),
    );
    const long = { userId: 'alice', note: 'x'.repeat(5_000) }; // past the cached text length: hashed each time, same answer
    expect(idempotencyStoreKey('t', long, 'k')).toBe(`t:${hashContext(long)}:k`);
    expect(idempotencyStoreKey('t', { ...long }, 'k')).toBe(`t:${hashContext(long)}:k`);
  });

  it('differs for another user, another tool, another key, and an empty context', () => {
    const keys = [
      idempotencyStoreKey('transfer', { userId: 'alice' }, 'k'),
      idempotencyStoreKey('transfer', { userId: 'bob' }, 'k'),
      idempotencyStoreKey('close_account', { userId: 'alice' }, 'k'),
      idempotencyStoreKey('transfer', { userId: 'alice' }, 'k2'),
      idempotencyStoreKey('transfer', {}, 'k'),
    ];
    expect(new Set(keys).size).toBe(keys.length);
  });
});

class Principal {
  readonly #id: string;
  constructor(id: string) {
    this.#id = id;
  }
  get id(): string {
    return this.#id;
  }
}

describe('the context hash of values JSON has no spelling for', () => {
  const key = (context: object): string => idempotencyStoreKey('t', context, 'k');

  it('tells Dates, Maps, Sets, BigInts and non-finite numbers apart by their value', () => {
    expect(key({ asOf: new Date(1) })).not.toBe(key({ asOf: new Date(2) }));
    expect(key({ asOf: new Date(1) })).toBe(key({ asOf: new Date(1) }));
    expect(key({ asOf: new Date(1) })).not.toBe(key({ asOf: {} }));
    expect(key({ user: new Map([['id', 'alice']]) })).not.toBe(key({ user: new Map([['id', 'bob']]) }));
    expect(
      key({
        user: new Map([
          ['a', 1],
          ['b', 2],
        ]),
      }),
    ).toBe(
      key({
        user: new Map([
          ['b', 2],
          ['a', 1],
        ]),
      }),
    );
    expect(key({ roles: new Set(['admin']) })).not.toBe(key({ roles: new Set(['viewer']) }));
    expect(key({ roles: new Set(['a', 'b']) })).toBe(key({ roles: new Set(['b', 'a']) }));
    expect(key({ roles: new Set(['a']) })).not.toBe(key({ roles: ['a'] }));
    expect(key({ n: 1n })).not.toBe(key({ n: 2n }));
    expect(key({ n: 1n })).not.toBe(key({ n: '1n' }));
    expect(key({ n: Number.NaN })).not.toBe(key({ n: null }));
  });

  it('never gives two class instances the same key, and the same instance the same key', () => {
    const alice = new Principal('alice');
    expect(key({ user: alice })).not.toBe(key({ user: new Principal('bob') }));
    expect(key({ user: alice })).not.toBe(key({ user: new Principal('alice') })); // scoped per object: private fields cannot be read
    expect(key({ user: alice })).toBe(key({ user: alice }));
  });

  it('leaves out keys whose value is undefined: the same caller', () => {
    expect(key({ userId: 'a', org: undefined })).toBe(key({ userId: 'a' }));
    expect(hashContext({ userId: 'a', org: undefined })).toBe(hashContext({ userId: 'a' }));
  });

  it('keeps the hash of plain JSON data as it was (stored run ids and checkpoints stay bound)', () => {
    // The SHA-256 of '{"roles":["admin"],"userId":"alice"}', the text plain data has always hashed as.
    expect(hashContext({ userId: 'alice', roles: ['admin'] })).toBe(
      '3df78354bf333ab5c5a3312a883daceae74bd22a26d5f1cdc45c52e6bc902de3',
    );
  });
});

const moved = z.object({ by: z.string(), amount: z.number() });
const transfer = defineTool({
  name: 'transfer',
  description: 'moves money',
  input: z.object({ amount: z.number() }),
  output: moved,
  effect: 'write',
});

describe('through a runner', () => {
  it("another caller held as a class instance never gets the first caller's result", async () => {
    const act = ({ amount }: { amount: number }, call: ToolCall) => ({
      by: (call.context.user as Principal).id,
      amount,
    });
    const pay = defineChain({
      name: 'pay',
      input: z.object({ amount: z.number() }),
      context: z.object({ user: z.instanceof(Principal) }),
      steps: [{ id: 'pay', tool: transfer, input: { amount: ref('input', 'amount') }, confirm: false }],
    });
    const invoker = createMockInvoker({ transfer: act });
    const runner = createRunner({
      invoker,
      tools: [transfer],
      chains: [pay],
      stores: { idempotency: memoryIdempotencyStore() },
    });
    const a = await runner.run(pay, { amount: 10 }, { runId: 'order-1', context: { user: new Principal('alice') } });
    const b = await runner.run(pay, { amount: 99 }, { runId: 'order-1', context: { user: new Principal('bob') } });
    expect(a.status === 'completed' && a.output).toEqual({ by: 'alice', amount: 10 });
    expect(b.status === 'completed' && b.output).toEqual({ by: 'bob', amount: 99 });
    await runner.close();
  });

  it('the same caller with `org: undefined` and without it writes once', async () => {
    const pay = defineChain({
      name: 'pay2',
      input: z.object({ amount: z.number() }),
      context: z.object({ userId: z.string(), org: z.string().optional() }),
      steps: [{ id: 'pay', tool: transfer, input: { amount: ref('input', 'amount') }, confirm: false }],
    });
    const invoker = createMockInvoker({ transfer: ({ amount }: { amount: number }) => ({ by: 'a', amount }) });
    const runner = createRunner({
      invoker,
      tools: [transfer],
      chains: [pay],
      stores: { idempotency: memoryIdempotencyStore() },
    });
    const first = await runner.run(pay, { amount: 10 }, { runId: 'r-1', context: { userId: 'a', org: undefined } });
    const again = await runner.run(pay, { amount: 10 }, { runId: 'r-1', context: { userId: 'a' } });
    expect(first.status).toBe('completed');
    expect(again.status === 'completed' && again.trace.steps[0]!.status).toBe('cached');
    expect(invoker.callsTo('transfer')).toHaveLength(1);
    await runner.close();
  });
});
