// In-process stores: the defaults, bounded by TTL and a maximum count (oldest evicted first).
import { decodeCheckpoint, encodeCheckpoint } from './serialize.js';
import { checkOptions, finiteMs, integer } from '../define/options.js';
import { trimOldest } from '../util/bounded.js';
import { z } from 'zod';
import { holdMs, unknownClaim, unknownOutcomeInfo } from './pending.js';
import type { Classified } from '../errors/failure.js';
import type {
  BreakerChange,
  BreakerDecision,
  BreakerStore,
  CheckpointStore,
  IdempotencyClaim,
  IdempotencyStore,
  TakeResult,
} from './types.js';

/** Options of the memory stores. */
export interface MemoryStoreOptions {
  /** Maximum entries kept; the oldest are evicted first. Default 10 000. */
  maxEntries?: number;
  /** How long entries live (idempotency results). Default 24 h. */
  ttlMs?: number;
  /** Clock, for tests. Default `Date.now`. */
  now?: () => number;
}

/** Options of {@link memoryCheckpointStore}. */
export interface MemoryCheckpointStoreOptions extends MemoryStoreOptions {
  /**
   * Pending checkpoints kept per trusted context (per user); past it, that context's own oldest is
   * evicted, so one user's gates never push out another's. Default 100.
   */
  maxPerContext?: number;
}

interface Entry {
  data: string | undefined; // the encoded checkpoint; undefined once taken: a tombstone that answers 'used'
  expiresAt: number;
  contextHash: string;
}

/** One context's pending checkpoints: their ids, oldest first, and a time none of them expires before. */
interface Pending {
  ids: Set<string>;
  soonest: number;
}

const CHECKPOINT_OPTIONS = z.object(
  { maxEntries: integer('maxEntries', 1).optional(), maxPerContext: integer('maxPerContext', 1).optional() },
  { error: 'Expected memoryCheckpointStore options to be an object.' },
);

/**
 * A checkpoint store in memory: one process only. Checkpoints are kept encoded (the same codec as
 * the Redis store, so both keep and refuse the same values) and every read is a fresh copy. Taken
 * checkpoints leave a tombstone until they expire, so a reused token says `already_used` rather
 * than `invalid_token`. Bounded in total (`maxEntries`, oldest evicted first) and per context
 * (`maxPerContext` pending, that context's oldest evicted first).
 *
 * @example
 * ```ts
 * const runner = createRunner({ invoker, stores: { checkpoints: memoryCheckpointStore({ maxEntries: 1000 }) } });
 * ```
 */
export function memoryCheckpointStore(options: MemoryCheckpointStoreOptions = {}): CheckpointStore {
  const max = options.maxEntries ?? 10_000;
  const perContext = options.maxPerContext ?? 100;
  checkOptions('memoryCheckpointStore options', CHECKPOINT_OPTIONS, options);
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry>(); // insertion order = age
  const pending = new Map<string, Pending>(); // context hash → its pending checkpoints

  const unlist = (id: string, e: Entry): void => {
    if (e.data === undefined) return;
    const p = pending.get(e.contextHash);
    p?.ids.delete(id);
    if (p?.ids.size === 0) pending.delete(e.contextHash);
  };
  const drop = (id: string, e: Entry): void => {
    unlist(id, e);
    entries.delete(id);
  };
  // Expired entries and the oldest past the cap, from the front (used ones are tombstones until they expire).
  const sweep = (): void => {
    const t = now();
    trimOldest(entries, max, (e) => e.expiresAt <= t, drop);
  };
  // One context over its bound: its expired checkpoints go, then its own oldest. Expiry is not insertion
  // order (gates have their own TTLs), so finding the expired ones walks them all: only once the clock
  // has reached `soonest`, which no checkpoint of the context expires before (each walk makes it exact
  // again): a context at its cap is walked when one of its checkpoints may have expired, not on every save.
  const trim = (p: Pending): void => {
    const t = now();
    if (t >= p.soonest) {
      let soonest = Infinity;
      for (const id of p.ids) {
        const e = entries.get(id)!;
        if (e.expiresAt <= t) drop(id, e);
        else soonest = Math.min(soonest, e.expiresAt);
      }
      p.soonest = soonest;
    }
    for (const id of p.ids) {
      if (p.ids.size <= perContext) break;
      drop(id, entries.get(id)!);
    }
  };

  return {
    async save(checkpoint) {
      const data = encodeCheckpoint(checkpoint); // refuses what it cannot keep, before anything is stored
      const old = entries.get(checkpoint.id);
      if (old) drop(checkpoint.id, old);
      entries.set(checkpoint.id, { data, expiresAt: checkpoint.expiresAt, contextHash: checkpoint.contextHash });
      let p = pending.get(checkpoint.contextHash);
      if (!p) pending.set(checkpoint.contextHash, (p = { ids: new Set(), soonest: Infinity }));
      p.ids.add(checkpoint.id);
      p.soonest = Math.min(p.soonest, checkpoint.expiresAt);
      if (p.ids.size > perContext) trim(p);
      if (entries.size > max) sweep();
    },
    async peek(id): Promise<TakeResult> {
      const e = entries.get(id);
      if (!e || e.expiresAt <= now()) return { status: 'missing' };
      return e.data === undefined ? { status: 'used' } : { status: 'taken', checkpoint: decodeCheckpoint(e.data) };
    },
    async take(id): Promise<TakeResult> {
      const e = entries.get(id);
      if (!e || e.expiresAt <= now()) return { status: 'missing' };
      if (e.data === undefined) return { status: 'used' };
      const data = e.data;
      unlist(id, e);
      e.data = undefined; // synchronous: no other take can interleave
      return { status: 'taken', checkpoint: decodeCheckpoint(data) };
    },
  };
}

/** Options of {@link memoryIdempotencyStore}. */
export interface MemoryIdempotencyStoreOptions extends MemoryStoreOptions {
  /**
   * How long the key of a write whose outcome is unknown (timed out, connection lost) stays
   * claimed after its failure, unless its late answer comes first (then the key keeps that answer):
   * duplicates get that failure instead of running it again. Default 60 s.
   */
  pendingTtlMs?: number;
}

const UNDONE: IdempotencyClaim = Object.freeze({ status: 'undone' });

interface IdempotencyEntry {
  expiresAt: number;
  done: boolean;
  value?: unknown;
  /** When the result was kept (`IdempotencyClaim`'s `at`). */
  at?: number;
  /** Done, then undone (`markUndone`): no value. */
  undone?: true;
  /** The failure of a write whose outcome is unknown: the key stays claimed and answers with it. */
  unknown?: Classified;
  /** While pending: settles waiters with the claimant's outcome. */
  waiters?: { promise: Promise<unknown>; resolve: (v: unknown) => void; reject: (e: unknown) => void };
  /** The durable run (and its owner) that claimed the key. */
  run?: { runId: string; owner: string };
}

const IDEMPOTENCY_OPTIONS = z.object(
  {
    maxEntries: integer('maxEntries', 1).optional(),
    ttlMs: finiteMs('ttlMs').optional(),
    pendingTtlMs: finiteMs('pendingTtlMs').optional(),
  },
  { error: 'Expected memoryIdempotencyStore options to be an object.' },
);

/**
 * An idempotency store in memory: one process only, bounded by TTL (default 24 h) and a maximum
 * count (oldest evicted first). Concurrent duplicates of an in-flight call wait for its outcome; the
 * key of a write whose outcome is unknown stays claimed for `pendingTtlMs` after its failure, or
 * until its late answer comes (`completeLate`: kept like a result).
 *
 * @example
 * ```ts
 * const runner = createRunner({ invoker, stores: { idempotency: memoryIdempotencyStore({ ttlMs: 3_600_000 }) } });
 * ```
 */
export function memoryIdempotencyStore(options: MemoryIdempotencyStoreOptions = {}): IdempotencyStore {
  const max = options.maxEntries ?? 10_000;
  const ttl = options.ttlMs ?? 24 * 3_600_000;
  const pendingTtl = options.pendingTtlMs ?? 60_000;
  checkOptions('memoryIdempotencyStore options', IDEMPOTENCY_OPTIONS, options);
  const now = options.now ?? Date.now;
  const entries = new Map<string, IdempotencyEntry>(); // insertion order = age
  // Past this size the next insert trims: above the cap while claims in flight fill it (trimOldest).
  let trimAt = max;

  // Expired and finished entries, oldest first, down to the cap; a claim in flight is never evicted.
  const evict = (): void => {
    const t = now();
    trimAt = trimOldest(
      entries,
      max,
      (e) => e.expiresAt <= t,
      (key) => entries.delete(key),
      (e) => !e.done && e.expiresAt > t,
    );
  };

  const complete = (key: string, value: unknown, ttlMs?: number): void => {
    const e = entries.get(key);
    entries.delete(key);
    const t = now();
    entries.set(key, { expiresAt: t + (ttlMs ?? ttl), done: true, value, at: t });
    e?.waiters?.resolve(value);
    // One entry more may go now: while claims hold the store over its cap, the next trim comes that much sooner.
    if (trimAt > max) trimAt--;
    if (entries.size > trimAt) evict(); // a late answer may come for a key already gone
  };

  return {
    begin(key, run, holdUntil): IdempotencyClaim {
      const t = now();
      const e = entries.get(key);
      if (e && e.expiresAt > t) {
        if (e.done) return e.undone ? UNDONE : { status: 'done', value: e.value, at: e.at! };
        if (e.unknown) return unknownClaim(e.unknown, pendingTtl);
        // A recovered run takes over the claim its dead owner left (waiters get the new owner's outcome).
        if (run?.takeOver && e.run?.runId === run.runId && e.run.owner !== run.owner) {
          e.run = { runId: run.runId, owner: run.owner };
          return { status: 'new' };
        }
        if (!e.waiters) {
          let resolve!: (v: unknown) => void;
          let reject!: (e: unknown) => void;
          const promise = new Promise<unknown>((res, rej) => {
            resolve = res;
            reject = rej;
          });
          e.waiters = { promise, resolve, reject };
        }
        return { status: 'pending', settled: e.waiters.promise };
      }
      entries.delete(key);
      // Claimed while the call may be in flight: up to its deadline when that is further off than the TTL.
      const expiresAt = t + holdMs(ttl, holdUntil, t);
      entries.set(
        key,
        run ? { expiresAt, done: false, run: { runId: run.runId, owner: run.owner } } : { expiresAt, done: false },
      );
      if (entries.size > trimAt) evict();
      return { status: 'new' };
    },
    complete,
    markUndone(key, ttlMs, at) {
      const e = entries.get(key);
      if (!e || !e.done || e.expiresAt <= now() || (at !== undefined && !e.undone && e.at !== at)) return;
      entries.delete(key);
      entries.set(key, { expiresAt: now() + (ttlMs ?? ttl), done: true, undone: true });
      if (entries.size > trimAt) evict();
    },
    completeLate(key, value, ttlMs) {
      const e = entries.get(key);
      // A result, or the claim of a call in flight since the unknown marker lapsed, stays as it is.
      if (e && e.expiresAt > now() && e.unknown === undefined) return;
      complete(key, value, ttlMs);
    },
    fail(key, error, outcomeUnknown, run) {
      const e = entries.get(key);
      // Only a claim in flight ends, never a kept result (this call's claim lapsed and another completed the
      // write); a durable call's only while it is its own, not a successor's after a take-over.
      if (!e || e.done || (run && !(e.run?.runId === run.runId && e.run.owner === run.owner))) return;
      if (outcomeUnknown) {
        // The call may still take effect: keep the key claimed (not the 24 h of a result) and answer with its failure.
        e.unknown = unknownOutcomeInfo(error);
        e.expiresAt = now() + pendingTtl;
      } else {
        entries.delete(key);
      }
      e.waiters?.reject(error);
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
    release(tool) {
      const s = state.get(tool);
      if (s) s.probing = false;
    },
    isOpen(tool, now) {
      const s = state.get(tool);
      return s !== undefined && s.openUntil !== 0 && (now < s.openUntil || s.probing);
    },
  };
}

const CLOSED: BreakerDecision = { status: 'closed' };
const PROBE: BreakerDecision = { status: 'probe' };
