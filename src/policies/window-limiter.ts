// The limiter under the rate-limit policy (rate-limit.ts): its contract (`Limiter`, `LimiterStore`)
// and the in-process store, fixed windows (at most `limit` attempts start per `intervalMs`, windows
// counted from the limiter's creation) with `maxConcurrent` and a bounded queue. Written by hand:
// a general-purpose limiter (bottleneck) passes every job through several setTimeout(0) hops,
// milliseconds per job. Shared limits across processes plug in as a LimiterStore (redis/limiter.ts).
import type { RateLimitSpec } from '../define/tool.js';
import { RunAbortReason, ToolFailure } from '../errors/failure.js';
import { abortAtDeadline, type AbortScope } from './abort.js';
import { BoundedLru } from '../util/lru.js';
import { checkOptions, fn, integer } from '../define/options.js';
import { z } from 'zod';

/** Waiting calls a limiter holds when the tool sets no `maxQueue` (docs/guides/policies.md). */
const DEFAULT_MAX_QUEUE = 50;
/** Limiters a store keeps at once by default; beyond, the least recently used idle ones are dropped. */
export const DEFAULT_MAX_LIMITERS = 10_000;

/**
 * chainkit's own limiter did not let the attempt through: a full queue, a slot that comes after the
 * deadline, or a wait that the deadline, a cancel or `close()` ended. The tool was never reached,
 * so the circuit breaker does not count it (a remote 429 is a plain failure and does count).
 */
export class LimiterRefusal extends ToolFailure {}

/** The queue bound of a limit: its own `maxQueue`, else {@link DEFAULT_MAX_QUEUE}. */
export function maxQueueOf(spec: Readonly<RateLimitSpec>): number {
  return spec.maxQueue ?? DEFAULT_MAX_QUEUE;
}

/**
 * When the next slot can come at the earliest, or `undefined` if it may come in the current window.
 * `available`: slots left in the window that starts at `windowStart`; `ahead`: calls already
 * waiting. Waiter number p past the window's slots gets one `1 + ⌊p / limit⌋` windows on; a
 * concurrency cap can only make it later, so this is a lower bound.
 *
 * @example
 * ```ts
 * earliestSlot({ limit: 2, intervalMs: 1000, per: 'global' }, 0, 0, 3); // 2000: two windows on
 * ```
 */
function earliestSlot(
  spec: Readonly<RateLimitSpec>,
  windowStart: number,
  available: number,
  ahead: number,
): number | undefined {
  const past = ahead - Math.max(0, available);
  return past < 0 ? undefined : windowStart + spec.intervalMs * (1 + Math.floor(past / spec.limit));
}

/** A slot was granted; call `release` when the attempt ends. */
export type Release = () => void;

/** A limiter's refusal: its queue is full, or the slot would come `waitMs` from now, after the deadline. */
export type Refusal = { refused: 'queue_full' } | { refused: 'wait'; waitMs: number };

/** One limiter: grants slots for attempts. */
export interface Limiter {
  /**
   * Grants a slot now (returns a `Release`), later (a promise of one; rejects with the scope's reason
   * if it aborts first), or refuses — at once or, for a limiter that must ask a shared store first, as
   * what the promise resolves to: `queue_full`, or `wait` when the slot cannot come before `deadlineAt`.
   */
  acquire(scope: AbortScope, deadlineAt: number, onWait?: () => void): Release | Promise<Release | Refusal> | Refusal;
}

/** Where limiters live. The default keeps them in this process; a shared store (e.g. Redis) returns its own. */
export interface LimiterStore {
  /**
   * The limiter for one tool (`id`), and for one key of it when the limit is per key (`user`: what
   * the spec's `key` returned, the context's `userId` for `per: 'user'`, or `'anonymous'` without one).
   */
  limiter(id: string, spec: RateLimitSpec, user?: string): Limiter;
  /** Releases timers and connections. */
  close?(): Promise<void>;
}

/** The in-process limiter store. */
export interface MemoryLimiterStore extends LimiterStore {
  /** How many limiters are kept right now. */
  size(): number;
}

interface Waiter {
  resolve: (release: Release) => void;
  reject: (reason: unknown) => void;
  off: () => void;
  cancelDeadline: () => void;
  /** Left the queue (cancelled or past its deadline): skipped when its turn comes. */
  gone: boolean;
}

/** A fixed-window limiter in this process. */
class WindowLimiter implements Limiter {
  private windowStart: number;
  private used = 0;
  private running = 0;
  // Waiters in arrival order from `head`; one that leaves is marked gone and skipped, so leaving and
  // granting cost O(1) however long the queue (a splice or shift per call is O(queue)). `waiting` counts
  // the live ones; the array is compacted once the dead make up half of it.
  private queue: Waiter[] = [];
  private head = 0;
  private waiting = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly maxQueue: number;
  lastActive: number;

  constructor(
    readonly spec: RateLimitSpec,
    private readonly now: () => number,
  ) {
    this.windowStart = this.lastActive = now();
    this.maxQueue = maxQueueOf(spec);
  }

  get idle(): boolean {
    return this.waiting === 0 && this.running === 0;
  }

  private readonly release: Release = () => {
    this.running--;
    this.drain();
  };

  private refresh(t: number): void {
    const { intervalMs } = this.spec;
    if (t >= this.windowStart + intervalMs) {
      this.windowStart += Math.floor((t - this.windowStart) / intervalMs) * intervalMs;
      this.used = 0;
    }
  }

  private free(): boolean {
    return (
      this.used < this.spec.limit && (this.spec.maxConcurrent === undefined || this.running < this.spec.maxConcurrent)
    );
  }

  acquire(scope: AbortScope, deadlineAt: number, onWait?: () => void): ReturnType<Limiter['acquire']> {
    const t = this.now();
    this.lastActive = t;
    this.refresh(t);
    if (this.waiting === 0 && this.free()) {
      this.used++;
      this.running++;
      return this.release;
    }
    if (this.waiting >= this.maxQueue) return { refused: 'queue_full' };
    // The earliest the slot can come; blocked only by concurrency it cannot be known, and the deadline ends the wait.
    const grantAt = earliestSlot(this.spec, this.windowStart, this.spec.limit - this.used, this.waiting);
    if (grantAt !== undefined && grantAt >= deadlineAt) return { refused: 'wait', waitMs: grantAt - t };
    try {
      onWait?.();
    } catch {
      // a logging hook that throws must not lose the call
    }
    return new Promise<Release>((resolve, reject) => {
      if (scope.aborted) return reject(scope.reason); // aborted by onWait: never queued, so never granted
      const waiter: Waiter = { resolve, reject, off: () => {}, cancelDeadline: () => {}, gone: false };
      const drop = (reason: unknown): void => {
        waiter.gone = true;
        this.waiting--;
        waiter.cancelDeadline();
        waiter.off();
        reject(reason);
        if (this.waiting === 0) this.stopTimer();
        this.compact();
      };
      waiter.off = scope.onAbort(drop);
      // The deadline still holds while waiting for a slot.
      waiter.cancelDeadline = abortAtDeadline(
        scope,
        deadlineAt,
        this.now,
        'The deadline passed while waiting for a rate-limit slot.',
      );
      this.queue.push(waiter);
      this.waiting++;
      this.schedule();
    });
  }

  private drain(): void {
    this.refresh(this.now());
    while (this.waiting > 0 && this.free()) {
      const w = this.queue[this.head++]!;
      if (w.gone) continue;
      this.waiting--;
      w.cancelDeadline();
      w.off();
      this.used++;
      this.running++;
      w.resolve(this.release);
    }
    this.compact();
    if (this.waiting === 0) this.stopTimer();
    else this.schedule();
  }

  /** Drops the granted and gone waiters from the array once they are half of it (amortised O(1)). */
  private compact(): void {
    const dead = this.queue.length - this.waiting;
    if (dead < 32 || dead * 2 < this.queue.length) return;
    this.queue = this.queue.filter((w, i) => i >= this.head && !w.gone);
    this.head = 0;
  }

  /** Wakes up at the next window when waiters are blocked by the window (not by concurrency). */
  private schedule(): void {
    if (this.timer || this.used < this.spec.limit) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.drain();
      },
      Math.max(0, this.windowStart + this.spec.intervalMs - this.now()),
    );
  }

  private stopTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  close(reason: unknown): void {
    this.stopTimer();
    const queue = this.queue.slice(this.head).filter((w) => !w.gone);
    this.queue = [];
    this.head = this.waiting = 0;
    for (const w of queue) {
      w.cancelDeadline();
      w.off();
      w.reject(reason);
    }
  }
}

/** Options of {@link memoryLimiterStore}. */
export interface MemoryLimiterOptions {
  /**
   * Most limiters kept at once (default 10,000). Past it the least recently used idle ones are
   * dropped (a dropped user starts a fresh window); one with calls waiting or in flight never is.
   */
  maxLimiters?: number;
}

const MEMORY_LIMITER_OPTIONS = z.object(
  { now: fn('now'), maxLimiters: integer('maxLimiters', 1).optional() },
  { error: 'Expected memoryLimiterStore options to be an object.' },
);

/**
 * Limiters in this process (the default). Per-user limiters idle for two windows (at least a
 * minute) are dropped, and at most `maxLimiters` are kept, so memory stays bounded with many users.
 *
 * @example
 * ```ts
 * const runner = createRunner({
 *   invoker,
 *   tools,
 *   stores: { limiter: memoryLimiterStore(Date.now, { maxLimiters: 50_000 }) },
 * });
 * ```
 */
export function memoryLimiterStore(
  now: () => number = Date.now,
  options: MemoryLimiterOptions = {},
): MemoryLimiterStore {
  const max = options.maxLimiters ?? DEFAULT_MAX_LIMITERS;
  checkOptions('memoryLimiterStore options', MEMORY_LIMITER_OPTIONS, { ...options, now });
  // Keyed by tool id (and key): a Map inside, so a user id such as `__proto__` is just another key.
  // Past the cap the least recently used idle limiter goes (a dropped user starts a fresh window).
  const limiters = new BoundedLru<string, WindowLimiter>(max, { evictable: (l) => l.idle });
  let created = 0;
  const sweep = (): void => {
    const t = now();
    for (const [id, l] of limiters.entries()) {
      if (l.idle && t - l.lastActive > Math.max(2 * l.spec.intervalMs, 60_000)) limiters.delete(id);
    }
  };
  return {
    limiter(id, spec, user) {
      const key = user === undefined ? id : `${id}:${user}`; // tool names hold no ':', so keys cannot collide
      const known = limiters.get(key);
      if (known) return known;
      if (++created % 1024 === 0) sweep(); // amortised: idle limiters expire, memory stays bounded with many users
      return limiters.set(key, new WindowLimiter(spec, now));
    },
    async close() {
      const reason = new RunAbortReason('closed', 'The runner was closed.');
      for (const l of limiters.values()) l.close(reason);
      limiters.clear();
    },
    size: () => limiters.size,
  };
}
