import { describe, expect, it } from 'vitest';
import { memoryLimiterStore } from 'chainkit';
import { AbortScope } from '../../src/policies/abort.js';
import { BoundedLru } from '../../src/util/lru.js';

// The one cap mechanism behind the memory and Redis limiter stores' per-key limiters.
describe('BoundedLru', () => {
  const keys = <V>(lru: BoundedLru<string, V>) => [...lru.entries()].map(([k]) => k);

  it('keeps at most max entries, dropping the least recently added unread one, and tells onEvict', () => {
    const evicted: string[] = [];
    const lru = new BoundedLru<string, number>(3, { onEvict: (_, key) => evicted.push(key) });
    for (const k of ['a', 'b', 'c', 'd', 'e']) lru.set(k, 0);
    expect(lru.size).toBe(3);
    expect(keys(lru)).toEqual(['c', 'd', 'e']);
    expect(evicted).toEqual(['a', 'b']);
  });

  it('gives an entry read since it was added a second chance: the next unread one goes instead', () => {
    const lru = new BoundedLru<string, number>(3);
    for (const k of ['a', 'b', 'c']) lru.set(k, 0);
    expect(lru.get('a')).toBe(0);
    lru.set('d', 0);
    expect(keys(lru)).toEqual(['c', 'd', 'a']); // a moved to the back, b dropped
    lru.set('e', 0);
    expect(keys(lru)).toEqual(['d', 'a', 'e']);
  });

  it('never drops an entry that is not evictable, nor the one just added; past the cap it waits for a tenth of its size more before the next pass', () => {
    let free = false;
    let looked = 0;
    const lru = new BoundedLru<string, number>(20, {
      evictable: () => {
        looked++;
        return free;
      },
    });
    for (let i = 0; i < 20; i++) lru.set(`b${i}`, i);
    lru.set('x1', 0); // everything else busy: nothing can go, and the newcomer never does
    expect([lru.size, looked]).toEqual([21, 20]);
    lru.set('x2', 0); // a tenth of 21, rounded down, is 2: no pass before size 24 (past 23)
    lru.set('x3', 0);
    expect([lru.size, looked]).toEqual([23, 20]);
    lru.set('x4', 0);
    expect([lru.size, looked]).toEqual([24, 43]);
    free = true;
    lru.set('x5', 0);
    lru.set('x6', 0);
    expect(lru.size).toBe(26);
    lru.set('x7', 0);
    expect(lru.size).toBe(20);
    expect(lru.get('x7')).toBe(0);
  });

  it('evicts as a plain reference model does over 20,000 random sets, reads, deletes and clears', () => {
    // The model: an array in order, oldest first; a pass takes from its front as the class documents.
    type Slot = { value: number; used: boolean };
    const model: [string, Slot][] = [];
    let trimAt = 10;
    const busy = (v: number) => v % 7 === 0;
    const evicted: string[] = [];
    const modelEvicted: string[] = [];
    const lru = new BoundedLru<string, number>(10, { evictable: (v) => !busy(v), onEvict: (_v, k) => evicted.push(k) });
    let seed = 42; // mulberry32: the same sequence on every run
    const random = (n: number): number => {
      let t = (seed = (seed + 0x6d2b79f5) | 0);
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) % n;
    };
    for (let step = 0; step < 20_000; step++) {
      const key = `k${random(40)}`;
      const op = random(100);
      const at = model.findIndex(([k]) => k === key);
      if (op < 55) {
        const value = random(1_000);
        lru.set(key, value);
        if (at >= 0) model.splice(at, 1);
        model.push([key, { value, used: false }]);
        if (at < 0 && model.length > trimAt) {
          for (let left = model.length; model.length > 10 && left > 0; left--) {
            const [k, slot] = model.shift()!;
            if (slot.used || k === key || busy(slot.value)) {
              slot.used = false;
              model.push([k, slot]);
            } else modelEvicted.push(k);
          }
          trimAt = model.length > 10 ? model.length + Math.floor(model.length / 10) : 10;
        }
      } else if (op < 90) {
        expect(lru.get(key)).toBe(at >= 0 ? model[at]![1].value : undefined);
        if (at >= 0) model[at]![1].used = true;
      } else if (op < 99) {
        expect(lru.delete(key)).toBe(at >= 0);
        if (at >= 0) model.splice(at, 1);
        if (model.length <= 10) trimAt = 10;
      } else {
        lru.clear();
        model.length = 0;
        trimAt = 10;
      }
      expect(keys(lru)).toEqual(model.map(([k]) => k));
    }
    expect(evicted).toEqual(modelEvicted);
    expect(evicted.length).toBeGreaterThan(1_000);
  });

  it('full of busy entries far past its cap, looks at each entry a bounded number of times per insert', () => {
    let looked = 0;
    const lru = new BoundedLru<string, number>(10, {
      evictable: () => {
        looked++;
        return false;
      },
    });
    for (let i = 0; i < 3_000; i++) lru.set(`b${i}`, i);
    // A pass per tenth of the cap (one per insert here) would look ~4.5 million times.
    expect(looked / 3_000).toBeLessThan(15);
    expect(lru.size).toBe(3_000);
  });

  it('moves a replaced entry to the back with its new value; has() does not count as a read', () => {
    const lru = new BoundedLru<string, number>(2);
    lru.set('a', 1);
    lru.set('b', 2);
    lru.set('a', 3); // replaced: now the most recent
    expect(keys(lru)).toEqual(['b', 'a']);
    expect(lru.get('a')).toBe(3);
    expect(lru.has('b')).toBe(true); // not a read: b stays the first to go
    lru.set('c', 4);
    expect(keys(lru)).toEqual(['a', 'c']);
  });

  it('refuses a cap that is not a positive integer; keys such as __proto__ are ordinary keys', () => {
    expect(() => new BoundedLru(0)).toThrow(TypeError);
    expect(() => new BoundedLru(1.5)).toThrow(TypeError);
    const lru = new BoundedLru<string, number>(2);
    lru.set('__proto__', 1);
    lru.set('constructor', 2);
    expect([lru.get('__proto__'), lru.get('constructor'), lru.get('toString')]).toEqual([1, 2, undefined]);
  });
});

describe('the memory limiter store keeps its cap through the shared LRU', () => {
  const spec = { limit: 10, intervalMs: 60_000, per: 'user' as const };

  it('holds exactly maxLimiters past the cap (no batch trim below it) and keeps a limiter in use', () => {
    const store = memoryLimiterStore(() => 0, { maxLimiters: 10 });
    const scope = new AbortScope();
    const held = store.limiter('chainkit:t', spec, 'held');
    const release = held.acquire(scope, Infinity) as () => void;
    for (let u = 0; u < 30; u++) (store.limiter('chainkit:t', spec, `u${u}`).acquire(scope, Infinity) as () => void)();
    expect(store.size()).toBe(10);
    expect(store.limiter('chainkit:t', spec, 'held')).toBe(held);
    release();
  });

  it('keeps a limiter read since it was made over one that was not', () => {
    const store = memoryLimiterStore(() => 0, { maxLimiters: 3 });
    const first = store.limiter('chainkit:t', spec, 'first');
    store.limiter('chainkit:t', spec, 'second');
    store.limiter('chainkit:t', spec, 'third');
    expect(store.limiter('chainkit:t', spec, 'first')).toBe(first); // read: a second chance
    store.limiter('chainkit:t', spec, 'fourth');
    expect(store.size()).toBe(3);
    expect(store.limiter('chainkit:t', spec, 'first')).toBe(first);
  });
});
