// What results share to keep runs in flight light (docs/ARCHITECTURE.md, Hot-path rules): the shared
// pieces must never let one caller's change reach another result, and must read as before.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, functionInvoker, ref } from '../../src/index.js';
import { iso } from '../../src/run/execution.js';
import { newId } from '../../src/run/ids.js';
import { idempotencyStoreKey } from '../../src/run/call-context.js';
import { nullRecord } from '../../src/util/record.js';

const get = defineTool({
  name: 'get_thing',
  description: 'Gets a thing.',
  effect: 'read',
  input: z.object({ id: z.string() }),
  output: z.object({ id: z.string() }),
});
const put = defineTool({
  name: 'put_thing',
  description: 'Puts a thing.',
  effect: 'write',
  input: z.object({ id: z.string() }),
  output: z.object({ ok: z.boolean() }),
});
const chain = defineChain({
  name: 'get_and_put',
  input: z.object({ id: z.string() }),
  steps: [
    { id: 'get', tool: get, input: { id: ref('input', 'id') } },
    { id: 'put', tool: put, input: { id: ref('get', 'id') } },
  ],
});
const runner = () =>
  createRunner({
    invoker: functionInvoker({ get_thing: (i: { id: string }) => ({ id: i.id }), put_thing: () => ({ ok: true }) }),
    tools: [get, put],
  });

describe('shared empty metadata arrays', () => {
  it('are frozen: a caller that pushes into one result’s empty advice changes no other result', async () => {
    const r = runner();
    const a = await r.run(chain, { id: 'a' });
    const b = await r.run(chain, { id: 'b' });
    expect(a.metadata.advice).toEqual([]);
    expect(Object.isFrozen(a.metadata.advice)).toBe(true);
    expect(() => (a.metadata.advice as string[]).push('mine')).toThrow(TypeError);
    expect(b.metadata.advice).toEqual([]);
    // Non-empty arrays stay each result's own and mutable.
    expect(a.metadata.suggestions.relevantChains).toEqual([expect.objectContaining({ chain: 'get_and_put' })]);
    expect(Object.isFrozen(a.metadata.suggestions.relevantChains)).toBe(false);
    expect(a.metadata.suggestions.relevantChains).not.toBe(b.metadata.suggestions.relevantChains);
    // Read as plain data: JSON and structuredClone see an empty array, and a clone is a caller's own.
    expect(JSON.parse(JSON.stringify(a.metadata))).toMatchObject({ advice: [], context: { chain: 'get_and_put' } });
    const clone = structuredClone(a.metadata);
    (clone.advice as string[]).push('mine');
    expect(b.metadata.advice).toEqual([]);
    await r.close();
  });

  it('an invoke’s metadata shares them too, with its tool in the context', async () => {
    const r = runner();
    const one = await r.invoke('get_thing', { id: 'x' });
    expect(one.metadata.advice).toEqual([]);
    expect(Object.isFrozen(one.metadata.advice)).toBe(true);
    expect(one.metadata.context).toEqual({ tool: 'get_thing' });
    await r.close();
  });

  it('a run’s context names its chain and counts its tool steps, in that order', async () => {
    const r = runner();
    const a = await r.run(chain, { id: 'a' });
    expect(Object.keys(a.metadata.context)).toEqual(['chain', 'toolCount']);
    expect(a.metadata.context).toEqual({ chain: 'get_and_put', toolCount: 2 });
    await r.close();
  });
});

describe('timestamps and ids', () => {
  it('iso gives the same text for the same millisecond, and the right text for every one', () => {
    const t = Date.UTC(2026, 10, 28, 9, 0, 0, 123);
    expect(iso(t)).toBe('2026-11-28T09:00:00.123Z');
    expect(iso(t)).toBe(iso(t));
    // Another millisecond in the same slot of the table replaces it, and is formatted right.
    expect(iso(t + 4096)).toBe(new Date(t + 4096).toISOString());
    expect(iso(t)).toBe('2026-11-28T09:00:00.123Z');
    for (const ms of [0, 1, -1, 8.5e15, t + 0.5]) expect(iso(ms)).toBe(new Date(ms).toISOString());
    expect(() => iso(Number.NaN)).toThrow(RangeError);
  });

  it('newId makes 21 characters of the URL-safe alphabet, all different', () => {
    const ids = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const id = newId();
      expect(id).toMatch(/^[A-Za-z0-9_-]{21}$/);
      ids.add(id);
    }
    expect(ids.size).toBe(1000);
  });

  it('an idempotency store key reads as the joined text', () => {
    const key = idempotencyStoreKey('put_thing', { userId: 'u1' }, 'run-1:put');
    expect(key).toMatch(/^put_thing:[0-9a-f]{64}:run-1:put$/);
    expect(idempotencyStoreKey('put_thing', { userId: 'u1' }, 'run-1:put')).toBe(key);
  });
});

describe('run results records', () => {
  it('nullRecord: no prototype, no inherited key, __proto__ an own key like any other', () => {
    const r = nullRecord<unknown>();
    expect(Object.getPrototypeOf(r)).toBeNull();
    expect('toString' in r).toBe(false);
    expect(r.constructor).toBeUndefined();
    r.__proto__ = 1;
    expect(Object.hasOwn(r, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(r)).toBeNull();
    expect(Object.keys(r)).toEqual(['__proto__']);
  });

  it('a step whose id names an Object.prototype key reads its own result', async () => {
    const r = runner();
    const named = defineChain({
      name: 'named_like_prototype_keys',
      input: z.object({ id: z.string() }),
      steps: [
        { id: 'constructor', tool: get, input: { id: ref('input', 'id') } },
        { id: 'toString', tool: get, input: { id: ref('constructor', 'id') } },
      ],
      output: (s) => [s.results.constructor, s.results.toString],
    });
    const res = await r.run(named, { id: 'a' });
    expect(res.status === 'completed' && res.output).toEqual([{ id: 'a' }, { id: 'a' }]);
    await r.close();
  });
});

describe('context hashes', () => {
  it('hashContext (kept by text, flat contexts made without the general walk) is the SHA-256 of stableStringify', async () => {
    const { stableStringify, hashContext } = await import('../../src/run/checkpoint.js');
    const { sha256, toHex } = await import('../../src/util/sha256.js');
    const contexts: object[] = [
      { userId: 'u1' },
      { b: 2, a: 'x', c: true, d: undefined },
      { 'we"ird': 'q"uote', n: -0.5 },
      {},
      { nan: Number.NaN },
      { nested: { a: 1 } },
      Object.assign(Object.create(null) as object, { userId: 'u1' }),
    ];
    for (const c of contexts) {
      const reference = toHex(sha256(stableStringify(c)));
      expect(hashContext(c)).toBe(reference);
      expect(hashContext(c)).toBe(reference); // the second time from the cache
      expect(idempotencyStoreKey('t', c, 'k')).toBe(`t:${reference}:k`);
    }
    expect(hashContext('a string')).toBe(toHex(sha256(stableStringify('a string'))));
    expect(idempotencyStoreKey('t', { a: 1, b: 2 }, 'k')).toBe(idempotencyStoreKey('t', { b: 2, a: 1 }, 'k'));
  });
});
