// The memory stores' caps (one mechanism, trimOldest in src/util/bounded.ts): past `maxEntries` the
// oldest go first, expired ones go whatever the count, and a claim in flight is never evicted.
import { describe, expect, it } from 'vitest';
import { memoryCheckpointStore, memoryIdempotencyStore } from 'chainkit';
import type { Checkpoint } from 'chainkit/stores';
import { trimOldest } from '../../src/util/bounded.js';

const checkpoint = (id: string, contextHash: string, expiresAt: number): Checkpoint => ({
  v: 1,
  id,
  runId: `run-${id}`,
  traceId: 't',
  chain: 'c',
  fingerprint: 'f',
  input: {},
  contextHash,
  results: {},
  done: [],
  gate: 'g',
  startedAt: 0,
  createdAt: 0,
  expiresAt,
  trace: [],
});

describe('trimOldest', () => {
  it('drops expired entries and the oldest past the cap from the front, passing over kept ones, and stops at the first fresh one', () => {
    const map = new Map([
      ['a', 1],
      ['b', 2],
      ['c', 3],
      ['d', 4],
      ['e', 5],
      ['f', 6],
    ]);
    const dropped: string[] = [];
    trimOldest(
      map,
      3,
      (v) => v === 4 || v === 6,
      (k) => {
        dropped.push(k);
        map.delete(k);
      },
      (v) => v === 1,
    );
    // a is kept; b and c go for the cap; d has expired; e is fresh with the map at its cap: the pass ends there.
    expect(dropped).toEqual(['b', 'c', 'd']);
    expect([...map.keys()]).toEqual(['a', 'e', 'f']);
  });
});

describe('the memory checkpoint store at its cap', () => {
  it('keeps the newest maxEntries checkpoints: the oldest one is missing', async () => {
    const now = 1_000;
    const store = memoryCheckpointStore({ maxEntries: 3, now: () => now });
    for (const id of ['c1', 'c2', 'c3', 'c4']) await store.save(checkpoint(id, `ctx-${id}`, now + 60_000));
    expect((await store.peek('c1')).status).toBe('missing');
    for (const id of ['c2', 'c3', 'c4']) expect((await store.peek(id)).status).toBe('taken');
  });
});

describe('a context at its maxPerContext', () => {
  it('does not walk its checkpoints on every save, and still lets the expired ones go before the oldest live one', async () => {
    // Steps through any Set counted (a context's checkpoints are a Set): a walk per save would take ~2,000,000.
    const setIterator = Object.getPrototypeOf(new Set().values()) as { next: () => unknown };
    const next = setIterator.next;
    let steps = 0;
    let t = 1_000_000;
    const store = memoryCheckpointStore({ maxPerContext: 1_000, maxEntries: 100_000, now: () => t });
    await store.save(checkpoint('long', 'ctx', t + 10_000_000)); // the oldest, and the last to expire
    setIterator.next = function (this: unknown) {
      steps++;
      return next.call(this);
    };
    try {
      for (let i = 0; i < 3_000; i++) await store.save(checkpoint(`c${i}`, 'ctx', t + 60_000 + i));
    } finally {
      setIterator.next = next;
    }
    expect(steps).toBeLessThan(20_000);
    expect((await store.peek('long')).status).toBe('missing'); // the oldest went for the cap: none had expired
    expect((await store.peek('c1999')).status).toBe('missing');
    expect((await store.peek('c2000')).status).toBe('taken');

    // Another context: its oldest checkpoint lives longest; once the others have expired, they go, not it.
    await store.save(checkpoint('long2', 'ctx2', t + 10_000_000));
    for (let i = 0; i < 999; i++) await store.save(checkpoint(`d${i}`, 'ctx2', t + 60_000));
    t += 70_000;
    await store.save(checkpoint('last', 'ctx2', t + 60_000));
    expect((await store.peek('long2')).status).toBe('taken');
    expect((await store.peek('last')).status).toBe('taken');
  });
});

describe('the memory idempotency store at its cap', () => {
  it('evicts finished entries oldest first and never a claim in flight', () => {
    const store = memoryIdempotencyStore({ maxEntries: 2 });
    expect(store.begin('inflight')).toMatchObject({ status: 'new' }); // never completed
    expect(store.begin('done-1')).toMatchObject({ status: 'new' });
    store.complete('done-1', { v: 1 });
    expect(store.begin('done-2')).toMatchObject({ status: 'new' }); // over the cap: done-1 goes, inflight stays
    expect(store.begin('inflight')).toMatchObject({ status: 'pending' });
    expect(store.begin('done-1')).toMatchObject({ status: 'new' }); // gone: a fresh claim
  });

  it('past a cap of 10 or more drops down to 90 % at once, so a full store does not walk its map on every insert', () => {
    const store = memoryIdempotencyStore({ maxEntries: 100 });
    for (let i = 0; i <= 100; i++) {
      store.begin(`k${i}`);
      store.complete(`k${i}`, i);
    }
    for (let i = 100; i >= 11; i--) expect(store.begin(`k${i}`)).toMatchObject({ status: 'done', value: i }); // the newest 90
    expect(store.begin('k10')).toMatchObject({ status: 'new' });
  });
});

describe('the memory idempotency store full of claims in flight', () => {
  it('does not walk its map on every insert while claims fill it past its cap, and trims once they finish', () => {
    // The store reads its clock once per claim and once per trim: the reads count the trims.
    let reads = 0;
    const store = memoryIdempotencyStore({
      maxEntries: 100,
      now: () => {
        reads++;
        return 1_000;
      },
    });
    for (let i = 0; i < 2_000; i++) expect(store.begin(`k${i}`)).toMatchObject({ status: 'new' });
    // 2,000 claims, none evictable: a trim per insert past the cap would read the clock ~3,900 times.
    expect(reads).toBeLessThan(2_100);
    for (let i = 0; i < 2_000; i++) expect(store.begin(`k${i}`)).toMatchObject({ status: 'pending' }); // none evicted
    for (let i = 0; i < 2_000; i++) store.complete(`k${i}`, i);
    // Finished, they are evictable again: the store is back under its cap, the newest kept.
    store.begin('next');
    expect(store.begin('k0')).toMatchObject({ status: 'new' });
    expect(store.begin('k1999')).toMatchObject({ status: 'done', value: 1999 });
  });
});

describe('the memory idempotency store and a call in flight past its ttlMs', () => {
  it("holds the claim until the call's deadline (holdUntil): a duplicate waits, it does not run the write again", () => {
    let t = 1_000_000;
    const store = memoryIdempotencyStore({ ttlMs: 1_000, now: () => t });
    expect(store.begin('k', undefined, t + 5_000)).toMatchObject({ status: 'new' });
    t += 2_000; // past ttlMs, before the deadline
    expect(store.begin('k', undefined, t + 5_000)).toMatchObject({ status: 'pending' });
    t += 3_001; // past the deadline: a claim nobody completed lapses
    expect(store.begin('k')).toMatchObject({ status: 'new' });
  });
});
