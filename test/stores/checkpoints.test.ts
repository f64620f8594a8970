// Checkpoint stores: one serialization for memory and Redis, refusals before a token exists, and a
// per-user bound so one user's gates never evict another's.
import Redis from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, memoryCheckpointStore, ref } from 'chainkit';
import { type Checkpoint, type CheckpointStore } from 'chainkit/stores';
import { redisStores } from 'chainkit/redis';
import { CheckpointEncodeError, decodeCheckpoint, encodeCheckpoint } from '../../src/stores/serialize.js';

// Real Redis on 127.0.0.1:6379; every key lives under this run's prefix and is deleted afterwards.
const prefix = `chainkit-test-cp:${process.pid}:${Date.now()}`;
let redis: Redis;
beforeAll(async () => {
  redis = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
});
afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

let n = 0;
const stores: [string, (options?: { perContext?: number }) => CheckpointStore][] = [
  ['memory', (o) => memoryCheckpointStore({ maxPerContext: o?.perContext })],
  ['redis', (o) => redisStores(redis, { prefix: `${prefix}:${++n}`, maxPendingPerContext: o?.perContext }).checkpoints],
];

/** A value with everything the codec keeps beyond JSON, and keys that look like its own tags. */
function richValue(): Record<string, unknown> {
  const value: Record<string, unknown> = {
    at: new Date('2024-05-06T07:08:09.010Z'),
    invalidDate: new Date(NaN),
    big: 2n ** 70n,
    negBig: -5n,
    list: [1, undefined, 'two', null, Infinity, -Infinity, NaN, { deep: [new Date(0)] }],
    nothing: undefined,
    negZero: -0,
    looksTagged: { $ck: 'date', v: 0 },
    nullProto: Object.assign(Object.create(null) as object, { a: 1 }),
    text: 'emoji 🙂 and "quotes"\n',
  };
  Object.defineProperty(value, '__proto__', {
    value: { polluted: true },
    enumerable: true,
    writable: true,
    configurable: true,
  });
  return value;
}

function checkpoint(id: string, over: Partial<Checkpoint> = {}): Checkpoint {
  const now = Date.now();
  return {
    v: 1,
    id,
    runId: `run-${id}`,
    traceId: 't',
    chain: 'c',
    fingerprint: 'f',
    input: {},
    contextHash: 'ctx-a',
    results: {},
    done: [],
    gate: 'g',
    startedAt: now,
    createdAt: now,
    expiresAt: now + 60_000,
    trace: [],
    ...over,
  };
}

describe('the checkpoint codec', () => {
  it('round-trips JSON plus Date, BigInt, undefined, non-finite numbers and -0, and keeps tag-like user data as data', () => {
    const cp = checkpoint('c1', {
      results: Object.assign(Object.create(null) as Record<string, unknown>, { get: richValue() }),
    });
    const back = decodeCheckpoint(encodeCheckpoint(cp));
    const got = back.results.get as Record<string, unknown>;
    expect(got).toEqual({ ...richValue(), nullProto: { a: 1 } });
    expect(got.at).toBeInstanceOf(Date);
    expect(typeof got.big).toBe('bigint');
    expect(Object.is(got.negZero, -0)).toBe(true);
    expect(Object.hasOwn(got, 'nothing')).toBe(true);
    expect(Object.hasOwn(got, '__proto__') && Object.getPrototypeOf(got)).toBe(Object.prototype); // an own key, not a prototype
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(got.looksTagged).toEqual({ $ck: 'date', v: 0 });
  });

  it.each([
    ['a function', { cb: () => 1 }, 'results.get.cb is a function'],
    ['a symbol', { s: Symbol('x') }, 'results.get.s is a symbol'],
    ['a Map', { m: new Map() }, 'results.get.m is an instance of Map'],
    [
      'a class instance',
      {
        e: new (class Money {
          cents = 1;
        })(),
      },
      'results.get.e is an instance of Money',
    ],
    ['symbol keys', { o: { [Symbol('k')]: 1 } }, 'results.get.o has symbol keys'],
    ['a function in an array', { list: [1, () => 2] }, 'results.get.list[1] is a function'],
  ])('refuses %s, naming where it is', (_, value, message) => {
    const cp = checkpoint('c1', { results: { get: value } });
    expect(() => encodeCheckpoint(cp)).toThrow(CheckpointEncodeError);
    expect(() => encodeCheckpoint(cp)).toThrow(message);
  });

  it('refuses cycles, 3,000-deep values and throwing getters with a clear error (never a crash)', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(() => encodeCheckpoint(checkpoint('c', { results: { get: cyclic } }))).toThrow(
      'results.get.self refers back to itself',
    );
    let deep: unknown = 1;
    for (let i = 0; i < 3000; i++) deep = { d: deep };
    expect(() => encodeCheckpoint(checkpoint('c', { results: { get: deep } }))).toThrow(/nested deeper than 1000/);
    const getter = Object.defineProperty({}, 'boom', {
      enumerable: true,
      get: () => {
        throw new Error('no');
      },
    });
    expect(() => encodeCheckpoint(checkpoint('c', { results: { get: getter } }))).toThrow(CheckpointEncodeError);
    const shared = { x: 1 };
    expect(decodeCheckpoint(encodeCheckpoint(checkpoint('c', { results: { a: shared, b: shared } }))).results).toEqual({
      a: { x: 1 },
      b: { x: 1 },
    });
  });

  it('refuses with category validation and code checkpoint_unserializable', () => {
    try {
      encodeCheckpoint(checkpoint('c', { results: { get: { cb: () => 1 } } }));
      expect.unreachable();
    } catch (error) {
      expect((error as CheckpointEncodeError).info).toMatchObject({
        category: 'validation',
        code: 'checkpoint_unserializable',
      });
    }
  });
});

describe.each(stores)('the %s checkpoint store', (_, make) => {
  it('keeps what the codec keeps, identically, and refuses what it cannot keep on save', async () => {
    const store = make();
    const results = { get: richValue() };
    await store.save(checkpoint('rich', { results, input: { when: new Date(5), n: 7n } }));
    const peeked = await store.peek('rich');
    const taken = await store.take('rich');
    const expected = { ...richValue(), nullProto: { a: 1 } };
    for (const r of [peeked, taken]) {
      if (r.status !== 'taken') throw new Error(r.status);
      expect(r.checkpoint.results.get).toEqual(expected);
      expect(r.checkpoint.input).toEqual({ when: new Date(5), n: 7n });
    }
    expect((await store.take('rich')).status).toBe('used');
    await expect(store.save(checkpoint('bad', { results: { get: { cb: () => 1 } } }))).rejects.toBeInstanceOf(
      CheckpointEncodeError,
    );
    expect((await store.peek('bad')).status).toBe('missing');
  });

  it('a checkpoint read is a copy: changing it changes nothing stored', async () => {
    const store = make();
    const results = { get: { n: 1 } };
    await store.save(checkpoint('copy', { results }));
    results.get.n = 2; // after save
    const r = await store.peek('copy');
    if (r.status !== 'taken') throw new Error(r.status);
    (r.checkpoint.results.get as { n: number }).n = 3;
    expect(await store.take('copy')).toMatchObject({ checkpoint: { results: { get: { n: 1 } } } });
  });

  it('bounds the pending checkpoints of one context; another context keeps its own', async () => {
    const store = make({ perContext: 5 });
    await store.save(checkpoint('a-1', { contextHash: 'ctx-a' }));
    const t = Date.now();
    for (let i = 0; i < 12; i++)
      await store.save(checkpoint(`b-${i}`, { contextHash: 'ctx-b', createdAt: t + i, expiresAt: t + 60_000 + i }));
    expect((await store.peek('a-1')).status).toBe('taken');
    const b = await Promise.all(Array.from({ length: 12 }, (_, i) => store.peek(`b-${i}`).then((r) => r.status)));
    expect(b).toEqual([...Array<string>(7).fill('missing'), ...Array<string>(5).fill('taken')]); // its own oldest went first
  });

  it('a taken checkpoint frees its slot', async () => {
    const store = make({ perContext: 3 });
    const t = Date.now();
    for (let i = 0; i < 3; i++)
      await store.save(checkpoint(`t-${i}`, { contextHash: 'ctx-t', createdAt: t + i, expiresAt: t + 60_000 + i }));
    expect((await store.take('t-1')).status).toBe('taken');
    await store.save(checkpoint('t-3', { contextHash: 'ctx-t', createdAt: t + 3, expiresAt: t + 60_003 }));
    expect(await Promise.all(['t-0', 't-1', 't-2', 't-3'].map((id) => store.peek(id).then((r) => r.status)))).toEqual([
      'taken',
      'used',
      'taken',
      'taken',
    ]);
  });
});

describe('the memory checkpoint store bound', () => {
  it('lets expired checkpoints of a context go before its pending ones', async () => {
    let t = 1_000_000;
    const store = memoryCheckpointStore({ maxPerContext: 2, now: () => t });
    await store.save(checkpoint('old', { createdAt: t, expiresAt: t + 10 }));
    await store.save(checkpoint('live', { createdAt: t, expiresAt: t + 1000 }));
    t += 100;
    await store.save(checkpoint('new', { createdAt: t, expiresAt: t + 1000 }));
    expect((await store.peek('live')).status).toBe('taken');
    expect((await store.peek('new')).status).toBe('taken');
    expect(() => memoryCheckpointStore({ maxPerContext: 0 })).toThrow(/maxPerContext/);
  });
});

// A chain whose first step's result carries a Date and a BigInt into a gated step.
const calls: { tool: string; input: unknown }[] = [];
let answer: () => unknown = () => ({});
const getThing = defineTool({
  name: 'get_thing',
  description: 'Reads a thing',
  input: z.object({}),
  output: z.unknown(),
  effect: 'read',
});
const removeThing = defineTool({
  name: 'remove_thing',
  description: 'Removes a thing',
  input: z.object({ thing: z.unknown() }),
  output: z.unknown(),
  effect: 'destructive',
});
const chain = defineChain({
  name: 'remove_a_thing',
  input: z.object({}),
  context: z.object({ userId: z.string() }),
  steps: [
    { id: 'get', tool: getThing, input: {} },
    { id: 'remove', tool: removeThing, input: { thing: ref('get') }, confirm: { prompt: 'Remove it?' } },
  ],
  output: (s) => s.results.remove,
});
const invoker = async (call: { tool: string; input: unknown }): Promise<unknown> => {
  calls.push({ tool: call.tool, input: call.input });
  return call.tool === 'get_thing' ? answer() : { removed: true };
};
const runnerOn = (checkpoints: CheckpointStore) =>
  createRunner({
    invoker,
    tools: [getThing, removeThing],
    chains: [chain],
    secret: 'checkpoint-test-secret',
    stores: { checkpoints },
  });

describe('a chain through a gate', () => {
  it('carries a Date and a BigInt through the gate identically on memory and on Redis', async () => {
    answer = () => ({
      at: new Date('2024-01-02T03:04:05.006Z'),
      big: 12345678901234567890123n,
      tags: ['a', undefined],
    });
    const seen: unknown[] = [];
    for (const [, make] of stores) {
      const runner = runnerOn(make());
      const gate = await runner.run(chain, {}, { context: { userId: 'u1' } });
      if (gate.status !== 'awaiting_confirmation') throw new Error(JSON.stringify(gate));
      calls.length = 0;
      const done = await runner.resume(gate.resumeToken, { approved: true }, { context: { userId: 'u1' } });
      expect(done.status).toBe('completed');
      expect(calls).toHaveLength(1);
      seen.push(calls[0]!.input);
      await runner.close();
    }
    expect(seen[0]).toEqual({ thing: answer() });
    expect(seen[1]).toEqual(seen[0]);
    const thing = (seen[1] as { thing: { at: unknown; big: unknown } }).thing;
    expect(thing.at).toBeInstanceOf(Date);
    expect(typeof thing.big).toBe('bigint');
  });

  it.each(stores)('on %s, refuses a result holding a function before a token is handed out', async (_, make) => {
    answer = () => ({ id: 1, callback: () => 'x' });
    const runner = runnerOn(make());
    calls.length = 0;
    const r = await runner.run(chain, {}, { context: { userId: 'u1' } });
    expect(r.status).toBe('failed');
    expect('resumeToken' in r).toBe(false);
    expect(r.status === 'failed' && r.error.message).toMatch(/results\.get\.callback is a function/);
    expect(r.status === 'failed' && r.error).toMatchObject({
      category: 'validation',
      code: 'checkpoint_unserializable',
      step: 'remove',
    });
    expect(calls.map((c) => c.tool)).toEqual(['get_thing']);
    await runner.close();
  });

  it.each(stores)(
    "on %s, one user's 10,000 gates do not evict another user's pending confirmation",
    async (_, make) => {
      answer = () => ({ id: 1 });
      const runner = runnerOn(make());
      const a = await runner.run(chain, {}, { context: { userId: 'alice' } });
      if (a.status !== 'awaiting_confirmation') throw new Error(a.status);
      const tokens: string[] = [];
      for (let i = 0; i < 10_000; i++) {
        const b = await runner.run(chain, {}, { context: { userId: 'mallory' } });
        if (b.status !== 'awaiting_confirmation') throw new Error(b.status);
        if (i === 0 || i === 9_999) tokens.push(b.resumeToken);
      }
      expect((await runner.resume(a.resumeToken, { approved: true }, { context: { userId: 'alice' } })).status).toBe(
        'completed',
      );
      const oldest = await runner.resume(tokens[0]!, { approved: true }, { context: { userId: 'mallory' } });
      expect(oldest.status === 'failed' && oldest.error.code).toBe('invalid_token'); // mallory's own oldest went first
      expect((await runner.resume(tokens[1]!, { approved: true }, { context: { userId: 'mallory' } })).status).toBe(
        'completed',
      );
      await runner.close();
    },
    60_000,
  );
});
