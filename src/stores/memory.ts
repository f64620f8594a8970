// In-process stores: the defaults, bounded by TTL and a maximum count (oldest evicted first).
import { evictOldest } from './bounded.js';
import type { BreakerChange, BreakerDecision, BreakerStore, Checkpoint, CheckpointStore, IdempotencyClaim, IdempotencyStore, TakeResult } from './types.js';

/** Options of the memory stores. */
export interface MemoryStoreOptions {
  /** Maximum entries kept; the oldest are evicted first. Default 10 000. */
  maxEntries?: number;
  /** How long entries live (idempotency results). Default 24 h. */
  ttlMs?: number;
  /** Clock, for tests. Default `Date.now`. */
  now?: () => number;
}

interface Entry {
  checkpoint: Checkpoint | undefined; // undefined once taken: a tombstone that answers 'used'
  expiresAt: number;
}

/**
 * A checkpoint store in memory: one process only. Taken checkpoints leave a tombstone until they
 * expire, so a reused token says `already_used` rather than `invalid_token`.
 *
 * @example
 * ```ts
 * const runner = createRunner({ invoker, stores: { checkpoints: memoryCheckpointStore({ maxEntries: 1000 }) } });
 * ```
 */
export function memoryCheckpointStore(options: MemoryStoreOptions = {}): CheckpointStore {
  const max = options.maxEntries ?? 10_000;
  if (!(Number.isInteger(max) && max > 0)) throw new TypeError('Expected `maxEntries` to be a positive integer.');
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry>(); // insertion order = age

  const sweep = (): void => {
    const t = now();
    for (const [id, e] of entries) {
      if (e.expiresAt <= t) entries.delete(id);
    }
    if (entries.size > max) evictOldest(entries, max);
  };

  return {
    async save(checkpoint) {
      entries.set(checkpoint.id, { checkpoint, expiresAt: checkpoint.expiresAt });
      if (entries.size > max) sweep();
    },
    async peek(id): Promise<TakeResult> {
      const e = entries.get(id);
      if (!e || e.expiresAt <= now()) return { status: 'missing' };
      return e.checkpoint ? { status: 'taken', checkpoint: e.checkpoint } : { status: 'used' };
    },
    async take(id): Promise<TakeResult> {
      const e = entries.get(id);
      if (!e || e.expiresAt <= now()) return { status: 'missing' };
      if (!e.checkpoint) return { status: 'used' };
      const checkpoint = e.checkpoint;
      e.checkpoint = undefined; // synchronous: no other take can interleave
      return { status: 'taken', checkpoint };
    },
  };
}

interface IdempotencyEntry {
  expiresAt: number;
  done: boolean;
  value?: unknown;
  /** While pending: settles waiters with the claimant's outcome. */
  waiters?: { promise: Promise<unknown>; resolve: (v: unknown) => void; reject: (e: unknown) => void };
}

/**
 * An idempotency store in memory: one process only, bounded by TTL (default 24 h) and a maximum
 * count (oldest evicted first). Concurrent duplicates of an in-flight call wait for its outcome.
 *
 * @example
 * ```ts
 * const runner = createRunner({ invoker, stores: { idempotency: memoryIdempotencyStore({ ttlMs: 3_600_000 }) } });
 * ```
 */
export function memoryIdempotencyStore(options: MemoryStoreOptions = {}): IdempotencyStore {
  const max = options.maxEntries ?? 10_000;
  const ttl = options.ttlMs ?? 24 * 3_600_000;
  if (!(Number.isInteger(max) && max > 0)) throw new TypeError('Expected `maxEntries` to be a positive integer.');
  if (!(ttl > 0)) throw new TypeError('Expected `ttlMs` to be a positive number.');
  const now = options.now ?? Date.now;
  const entries = new Map<string, IdempotencyEntry>(); // insertion order = age

  // Evicts the oldest tenth at once (expired or finished entries; an in-flight claim is never evicted).
  const evict = (): void => {
    const t = now();
    const target = Math.floor(max * 0.9);
    for (const [key, e] of entries) {
      if (entries.size <= target) break;
      if (e.done || e.expiresAt <= t) entries.delete(key);
    }
  };

  return {
    begin(key): IdempotencyClaim {
      const e = entries.get(key);
      if (e && e.expiresAt > now()) {
        if (e.done) return { status: 'done', value: e.value };
        if (!e.waiters) {
          let resolve!: (v: unknown) => void;
          let reject!: (e: unknown) => void;
          const promise = new Promise<unknown>((res, rej) => { resolve = res; reject = rej; });
          e.waiters = { promise, resolve, reject };
        }
        return { status: 'pending', settled: e.waiters.promise };
      }
      entries.delete(key);
      entries.set(key, { expiresAt: now() + ttl, done: false });
      if (entries.size > max) evict();
      return { status: 'new' };
    },
    complete(key, value) {
      const e = entries.get(key);
      entries.delete(key);
      entries.set(key, { expiresAt: now() + ttl, done: true, value });
      e?.waiters?.resolve(value);
    },
    fail(key, error) {
      const e = entries.get(key);
      entries.delete(key);
      e?.waiters?.reject(error);
    },
  };
}

interface BreakerEntry {
  failures: number;
  openUntil: number;
  probing: boolean;
}

/**
 * Circuit-breaker state in memory (one process). One entry per tool.
 *
 * @example
 * ```ts
 * const runner = createRunner({ invoker, stores: { breakers: memoryBreakerStore() } });
 * ```
 */
export function memoryBreakerStore(): BreakerStore {
  const state = new Map<string, BreakerEntry>();
  return {
    acquire(tool, now): BreakerDecision {
      const s = state.get(tool);
      if (!s || s.openUntil === 0) return CLOSED;
      if (now < s.openUntil) return { status: 'open', retryAfterMs: s.openUntil - now };
      if (s.probing) return { status: 'open', retryAfterMs: 1000 }; // a probe is in flight: wait for its verdict
      s.probing = true;
      return PROBE;
    },
    success(tool): BreakerChange {
      const s = state.get(tool);
      if (!s) return undefined;
      state.delete(tool);
      return s.openUntil !== 0 ? 'closed' : undefined;
    },
    failure(tool, now, threshold, openMs): BreakerChange {
      let s = state.get(tool);
      if (!s) state.set(tool, (s = { failures: 0, openUntil: 0, probing: false }));
      s.failures++;
      if (s.probing || (s.openUntil === 0 && s.failures >= threshold)) {
        s.probing = false;
        s.openUntil = now + openMs;
        return 'opened';
      }
      return undefined;
    },
    isOpen(tool, now) {
      const s = state.get(tool);
      return s !== undefined && s.openUntil !== 0 && (now < s.openUntil || s.probing);
    },
  };
}

const CLOSED: BreakerDecision = { status: 'closed' };
const PROBE: BreakerDecision = { status: 'probe' };
