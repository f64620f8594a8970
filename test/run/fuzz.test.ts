// Fuzz: random (and hostile) tool answers, thrown values and error codes through the whole runner.
// Every run must settle with a result within its deadline, and nothing may reject unhandled.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, ref, type RunResult, type ToolCall } from 'chainkit';

/** mulberry32: a small seeded generator, so a failing case can be replayed from its seed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PROTO_NAMES = [
  ...Object.getOwnPropertyNames(Object.prototype),
  'prototype',
  '__proto__',
  'then',
  'length',
  'name',
];
const DEADLINE_MS = 2_000;
const STATUSES = new Set(['completed', 'awaiting_confirmation', 'declined', 'failed']);

function hostileObject(pick: <T>(xs: readonly T[]) => T): unknown {
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = cyclic;
  return pick([
    cyclic,
    new Proxy(
      {},
      {
        get() {
          throw new Error('proxy get trap');
        },
        ownKeys() {
          throw new Error('proxy ownKeys trap');
        },
      },
    ),
    Object.defineProperty({}, 'message', {
      get() {
        throw new Error('getter');
      },
      enumerable: true,
    }),
    Object.create(null),
    { toString: 'not a function', valueOf: 42, constructor: 'x' },
    { then: (resolve: (v: unknown) => void) => resolve({ ok: true }) },
    { then: 'not callable' },
  ]);
}

function randomValue(r: () => number, depth = 0): unknown {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  switch (Math.floor(r() * 12)) {
    case 0:
      return undefined;
    case 1:
      return null;
    case 2:
      return pick([0, -1, NaN, Infinity, -Infinity, 2 ** 53, 1e308]);
    case 3:
      return pick(['', 'x'.repeat(10_000), pick(PROTO_NAMES), 'password=hunter2', '\u0000\uffff']);
    case 4:
      return BigInt(7);
    case 5:
      return Symbol('s');
    case 6:
      return () => 1;
    case 7:
      return hostileObject(pick);
    case 8:
      return depth > 2 ? {} : Array.from({ length: Math.floor(r() * 3) }, () => randomValue(r, depth + 1));
    case 9:
      return depth > 2 ? {} : { [pick(PROTO_NAMES)]: randomValue(r, depth + 1), v: randomValue(r, depth + 1) };
    case 10:
      return {
        status: 'error',
        error: pick([...PROTO_NAMES, 'rate_limit_exceeded', 'invalid_task_id', 42, null]),
        message: randomValue(r, 3),
        retry_after: pick([-1, NaN, Infinity, '5', 1e12, 0.5, undefined]),
      };
    default:
      return { v: Math.floor(r() * 10) };
  }
}

function randomThrown(r: () => number): unknown {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  switch (Math.floor(r() * 6)) {
    case 0:
      return Object.assign(new Error(pick(['boom', 'connection reset', 'HTTP 404', 'password=hunter2'])), {
        code: pick(PROTO_NAMES),
      });
    case 1:
      return Object.assign(new Error('status'), {
        status: pick([429, 503, 0, -1, NaN, '500', 1e9, Infinity]),
        headers: { 'retry-after': pick(['1', 'soon', '-5', '1e20']) },
      });
    case 2:
      return pick(PROTO_NAMES);
    case 3:
      return randomValue(r);
    case 4: {
      const e = new Error('getter message');
      Object.defineProperty(e, 'code', {
        get() {
          throw new Error('code getter');
        },
      });
      return e;
    }
    default:
      return Object.assign(Object.create(null), { code: pick(PROTO_NAMES), message: pick(PROTO_NAMES) });
  }
}

const anyOut = (name: string, effect: 'read' | 'write' | 'destructive') =>
  defineTool({
    name,
    description: name,
    input: z.object({ v: z.any() }),
    output: z.any(),
    effect,
    timeoutMs: 300,
    retry: { retries: 2, minDelayMs: 10, maxDelayMs: 50 },
  });
const shaped = defineTool({
  name: 'shaped',
  description: 'shaped',
  input: z.object({ v: z.any() }),
  output: z.object({ v: z.number() }),
  effect: 'read',
  timeoutMs: 300,
});
const reader = anyOut('reader', 'read');
const writer = anyOut('writer', 'write');
const destroyer = anyOut('destroyer', 'destructive');

const chain = defineChain({
  name: 'fuzzed',
  input: z.object({ seed: z.number() }),
  context: z.object({ userId: z.string() }),
  timeoutMs: DEADLINE_MS,
  steps: [
    { id: 'a', tool: reader, input: { v: ref('input', 'seed') } },
    { id: 'b', tool: shaped, input: { v: ref('input', 'seed') } },
    { id: 'c', tool: writer, input: (s) => ({ v: s.results.b.v }), compensate: { tool: writer, input: { v: 0 } } },
    {
      id: 'pick',
      select: { from: ref('a'), where: (item: unknown) => Boolean(item), expect: 'first' },
      when: (s) => Array.isArray(s.results.a),
    },
    { id: 'd', tool: destroyer, input: { v: 1 }, confirm: false },
  ],
  output: (s) => ({ a: s.results.a, d: s.results.d }),
});

describe('fuzz: hostile tool answers never crash the host', () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
  beforeEach(() => {
    unhandled.length = 0;
    process.on('unhandledRejection', onUnhandled);
  });
  afterEach(() => {
    process.off('unhandledRejection', onUnhandled);
    vi.useRealTimers();
  });

  for (const detail of ['summary', 'full'] as const) {
    it(`400 seeded runs settle within the deadline (traceDetail: ${detail})`, async () => {
      vi.useFakeTimers();
      const r = prng(detail === 'full' ? 7 : 11);
      const answer = (call: ToolCall): Promise<unknown> => {
        const roll = r();
        if (roll < 0.1) return new Promise(() => {}); // hangs, ignoring its signal
        if (roll < 0.45) return Promise.reject(randomThrown(r));
        if (roll < 0.5) throw randomThrown(r); // a synchronous throw from the invoker itself
        const value = call.tool === 'shaped' && r() < 0.5 ? { v: 1 } : randomValue(r);
        return r() < 0.3
          ? new Promise((res) => setTimeout(() => res(value), Math.floor(r() * 400)))
          : Promise.resolve(value);
      };
      const logged: unknown[] = [];
      const log = (obj: object): void => void logged.push(obj);
      const runner = createRunner({
        invoker: answer,
        traceDetail: detail,
        logger: { debug: log, info: log, warn: log, error: log },
        breaker: { threshold: 1_000, openMs: 1_000 },
        random: r,
      });
      const settled: (RunResult | undefined)[] = [];
      const runs = Array.from({ length: 400 }, (_, i) =>
        runner
          .run(chain, { seed: i }, { context: { userId: `u${i % 7}` }, runId: `run${i}` })
          .then((res) => (settled[i] = res)),
      );
      await vi.advanceTimersByTimeAsync(DEADLINE_MS + 1);
      const unsettled = [...Array(400).keys()].filter((i) => !settled[i]).map((i) => `run${i}`);
      expect(unsettled).toEqual([]); // run ids name the seeds to replay
      await Promise.all(runs);
      for (const res of settled) {
        expect(STATUSES.has(res!.status)).toBe(true);
        expect(() =>
          JSON.stringify(res!.status === 'failed' ? res!.error : res!.trace.steps.map((s) => s.status)),
        ).not.toThrow();
        if (res!.status === 'failed') {
          expect(typeof res!.error.message).toBe('string');
          expect(res!.error.message).not.toContain('hunter2');
        }
      }
      const statuses = new Set(settled.map((s) => s!.status));
      expect(statuses.has('completed') && statuses.has('failed')).toBe(true); // the fuzz reaches both ends
      await runner.close();
      expect(unhandled).toEqual([]);
    });
  }

  it('every Object.prototype name as an in-band code, a thrown code and a thrown value', async () => {
    const runner = createRunner({ invoker: async () => undefined });
    for (const name of PROTO_NAMES) {
      for (const make of [
        () => Promise.resolve({ status: 'error', error: name, message: name }),
        () => Promise.reject(Object.assign(new Error(name), { code: name })),
        () => Promise.reject(name),
        () => Promise.reject(Object.assign(Object.create(null), { code: name, status: name })),
      ]) {
        const once = createRunner({ invoker: make, breaker: { threshold: 1_000, openMs: 1_000 } });
        const res = await once.run(chain, { seed: 1 }, { context: { userId: 'u' } });
        expect(res.status).toBe('failed');
        if (res.status === 'failed') expect(typeof res.error.category).toBe('string');
        await once.close();
      }
    }
    await runner.close();
    expect(unhandled).toEqual([]);
  });
});
