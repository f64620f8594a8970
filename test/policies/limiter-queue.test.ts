// The memory limiter's queue of waiting calls: first come, first served; a call that leaves it (cancel,
// deadline) and a call granted from it cost O(1) however long the queue; a call that is cancelled while
// it queues never takes a slot.
import { afterEach, describe, expect, it } from 'vitest';
import { memoryLimiterStore, type RateLimitSpec } from 'chainkit';
import { AbortScope } from '../../src/policies/abort.js';

type Release = () => void;
const HOUR = 3_600_000;

// Elements the array methods a queue could use step over, on arrays long enough to matter.
const METHODS = ['indexOf', 'splice', 'shift', 'filter', 'slice'] as const;
const originals = new Map<string, (...args: unknown[]) => unknown>();
let stepped = 0;
function countArrayWork(): void {
  const proto = Array.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const name of METHODS) {
    const original = proto[name]!;
    originals.set(name, original);
    proto[name] = function (this: unknown[], ...args: unknown[]) {
      if (this.length > 1_000) stepped += this.length;
      return original.apply(this, args);
    };
  }
}
afterEach(() => {
  const proto = Array.prototype as unknown as Record<string, unknown>;
  for (const [name, original] of originals) proto[name] = original;
  originals.clear();
});

describe('the memory limiter queue', () => {
  it('grants in arrival order and lets calls leave it in O(1), however long it is', async () => {
    const n = 20_000;
    const spec: RateLimitSpec = { limit: 1_000_000, intervalMs: 1_000, per: 'global', maxConcurrent: 1, maxQueue: n };
    const limiter = memoryLimiterStore().limiter('queue', spec);
    const first = limiter.acquire(new AbortScope(), Date.now() + HOUR) as Release;
    const scopes: AbortScope[] = [];
    const granted: number[] = [];
    const releases = new Map<number, Release>();
    const settled: Promise<unknown>[] = [];
    countArrayWork();
    for (let i = 0; i < n; i++) {
      const scope = new AbortScope();
      scopes.push(scope);
      const slot = limiter.acquire(scope, Date.now() + HOUR) as Promise<Release>;
      settled.push(
        slot.then(
          (release) => {
            granted.push(i);
            releases.set(i, release);
          },
          () => undefined,
        ),
      );
    }
    // The newest half leaves, newest first (the worst case for a search from the front).
    for (let i = n - 1; i >= n / 2; i--) scopes[i]!.abort(new Error('gone'));
    // The rest are granted one at a time, each released as it comes.
    first();
    for (let i = 0; i < n / 2; i++) {
      await Promise.resolve();
      await Promise.resolve();
      releases.get(i)!();
    }
    await Promise.all(settled);
    const work = stepped;
    expect(granted).toEqual(Array.from({ length: n / 2 }, (_, i) => i));
    // A search or a shift per call would step over ~150,000,000 elements; compacting, a few times n.
    expect(work).toBeLessThan(10 * n);
    // Empty again: a new call is granted at once.
    expect(typeof limiter.acquire(new AbortScope(), Date.now() + HOUR)).toBe('function');
  });

  it('a call whose run is cancelled while it starts to wait never takes a slot', async () => {
    const spec: RateLimitSpec = { limit: 100, intervalMs: 1_000, per: 'global', maxConcurrent: 1 };
    const limiter = memoryLimiterStore().limiter('cancelled', spec);
    const held = limiter.acquire(new AbortScope(), Date.now() + HOUR) as Release;
    const scope = new AbortScope();
    // The onWait hook (the runner's logging hook) cancels the run before the call is queued.
    const waiting = limiter.acquire(scope, Date.now() + HOUR, () => scope.abort(new Error('cancelled')));
    await expect(waiting).rejects.toThrow('cancelled');
    held();
    const next = limiter.acquire(new AbortScope(), Date.now() + HOUR);
    expect(typeof next).toBe('function'); // before the fix the cancelled call held the only slot
    (next as Release)();
  });
});
