// Rate limits per tool: fixed windows (at most `limit` attempts start per `intervalMs`, windows
// counted from the limiter's creation), per tool or per user, with `maxConcurrent` and a bounded queue.
// Written by hand for the in-process case: bottleneck passes every job through several
// setTimeout(0) hops (measured here: ~4.5 ms per job, 23 s for 10,000 concurrent jobs), which is
// far above what chainkit may add to a call. Shared limits across processes plug in as a LimiterStore.
import type { RateLimitSpec, Tool } from '../define/tool.js';
import { RunAbortReason, ToolFailure } from '../errors/classify.js';
import { abortAtDeadline, type AbortScope } from '../run/abort.js';
import type { CallContext, Policy } from '../run/pipeline.js';

/** A slot was granted; call `release` when the attempt ends. */
export type Release = () => void;

/** One limiter: grants slots for attempts. */
export interface Limiter {
  /**
   * Grants a slot now (returns a `Release`), later (a promise of one; rejects with the scope's reason
   * if it aborts first), or refuses: `queue_full`, or `wait` when the slot cannot come before `deadlineAt`.
   */
  acquire(scope: AbortScope, deadlineAt: number, onWait?: () => void): Release | Promise<Release> | { refused: 'queue_full' } | { refused: 'wait'; waitMs: number };
}

/** Where limiters live. The default keeps them in this process; a shared store (e.g. Redis) returns its own. */
export interface LimiterStore {
  /**
   * The limiter for one tool (`id`), and for one user of it when the limit is `per: 'user'`
   * (`user`: the context's `userId`, or `'anonymous'`).
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

/** Options of the rate-limit policy. */
export interface RateLimitPolicyOptions {
  now: () => number;
  store?: LimiterStore;
  /** Called when an attempt has to wait for a slot (for logs). */
  onWait?: (ctx: CallContext) => void;
}

interface Waiter {
  resolve: (release: Release) => void;
  reject: (reason: unknown) => void;
  off: () => void;
  cancelDeadline: () => void;
}

/** A fixed-window limiter in this process. */
class WindowLimiter implements Limiter {
  private windowStart: number;
  private used = 0;
  private running = 0;
  private readonly queue: Waiter[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  lastActive: number;

  constructor(readonly spec: RateLimitSpec, private readonly now: () => number) {
    this.windowStart = this.lastActive = now();
  }

  get idle(): boolean {
    return this.queue.length === 0 && this.running === 0;
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
    return this.used < this.spec.limit && (this.spec.maxConcurrent === undefined || this.running < this.spec.maxConcurrent);
  }

  acquire(scope: AbortScope, deadlineAt: number, onWait?: () => void): ReturnType<Limiter['acquire']> {
    const t = this.now();
    this.lastActive = t;
    this.refresh(t);
    if (this.queue.length === 0 && this.free()) {
      this.used++;
      this.running++;
      return this.release;
    }
    if (this.spec.maxQueue !== undefined && this.queue.length >= this.spec.maxQueue) return { refused: 'queue_full' };
    // Blocked by the window (no concurrency cap): waiter number p gets a slot 1 + ⌊p / limit⌋ windows on.
    if (this.spec.maxConcurrent === undefined && this.used >= this.spec.limit) {
      const grantAt = this.windowStart + this.spec.intervalMs * (1 + Math.floor(this.queue.length / this.spec.limit));
      if (grantAt >= deadlineAt) return { refused: 'wait', waitMs: grantAt - t };
    }
    onWait?.();
    return new Promise<Release>((resolve, reject) => {
      const waiter: Waiter = { resolve, reject, off: () => {}, cancelDeadline: () => {} };
      const drop = (reason: unknown): void => {
        const i = this.queue.indexOf(waiter);
        if (i >= 0) this.queue.splice(i, 1);
        waiter.cancelDeadline();
        waiter.off();
        reject(reason);
        if (this.queue.length === 0) this.stopTimer();
      };
      waiter.off = scope.onAbort(drop);
      // The deadline still holds while waiting for a slot.
      waiter.cancelDeadline = abortAtDeadline(scope, deadlineAt, this.now, 'The deadline passed while waiting for a rate-limit slot.');
      this.queue.push(waiter);
      this.schedule();
    });
  }

  private drain(): void {
    this.refresh(this.now());
    while (this.queue.length > 0 && this.free()) {
      const w = this.queue.shift()!;
      w.cancelDeadline();
      w.off();
      this.used++;
      this.running++;
      w.resolve(this.release);
    }
    if (this.queue.length === 0) this.stopTimer();
    else this.schedule();
  }

  /** Wakes up at the next window when waiters are blocked by the window (not by concurrency). */
  private schedule(): void {
    if (this.timer || this.used < this.spec.limit) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.drain();
    }, Math.max(0, this.windowStart + this.spec.intervalMs - this.now()));
  }

  private stopTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  close(reason: unknown): void {
    this.stopTimer();
    for (const w of this.queue.splice(0)) {
      w.cancelDeadline();
      w.off();
      w.reject(reason);
    }
  }
}

/**
 * Limiters in this process (the default); per-user limiters idle for two windows (at least a
 * minute) are dropped, so memory stays bounded with many users.
 *
 * @example
 * ```ts
 * const runner = createRunner({ invoker, tools, stores: { limiter: memoryLimiterStore() } });
 * ```
 */
export function memoryLimiterStore(now: () => number = Date.now): MemoryLimiterStore {
  const limiters = new Map<string, WindowLimiter>();
  let created = 0;
  const sweep = (): void => {
    const t = now();
    for (const [id, l] of limiters) {
      if (l.idle && t - l.lastActive > Math.max(2 * l.spec.intervalMs, 60_000)) limiters.delete(id);
    }
  };
  return {
    limiter(id, spec, user) {
      const key = user === undefined ? id : `${id}:${user}`; // tool names hold no ':', so keys cannot collide
      let l = limiters.get(key);
      if (!l) {
        if (++created % 1024 === 0) sweep(); // amortised: memory stays bounded with many users
        limiters.set(key, (l = new WindowLimiter(spec, now)));
      }
      return l;
    },
    async close() {
      const reason = new RunAbortReason('closed', 'The runner was closed.');
      for (const l of limiters.values()) l.close(reason);
      limiters.clear();
    },
    size: () => limiters.size,
  };
}

const ANONYMOUS = 'anonymous';

/**
 * Takes one slot per attempt (the downstream API counts every attempt) before the timeout starts,
 * so time queued is not charged to the tool. A full queue fails at once with `queue_full`; a slot
 * that cannot come before the deadline fails at once with `rate_limited` and `retryAfterMs`.
 */
export function rateLimitPolicy(options: RateLimitPolicyOptions): { policy: Policy; close(): Promise<void> } {
  const store = options.store ?? memoryLimiterStore(options.now);
  const ids = new WeakMap<Tool, string>();
  const limiterFor = (ctx: CallContext, spec: RateLimitSpec): Limiter => {
    let id = ids.get(ctx.tool);
    if (id === undefined) ids.set(ctx.tool, (id = `chainkit:${ctx.tool.name}`));
    if (spec.per !== 'user') return store.limiter(id, spec);
    const user = ctx.context.userId;
    return store.limiter(id, spec, typeof user === 'string' && user !== '' ? user : ANONYMOUS);
  };

  const policy: Policy = (next) => (ctx) => {
    const spec = ctx.tool.rateLimit;
    if (!spec) return next(ctx);
    if (ctx.run.aborted) return Promise.reject(ctx.run.reason);
    const slot = limiterFor(ctx, spec).acquire(ctx.run, ctx.deadlineAt, options.onWait && (() => options.onWait!(ctx)));
    if (typeof slot === 'function') return runWith(slot);
    if (slot instanceof Promise) return slot.then(runWith);
    return Promise.reject(slot.refused === 'queue_full'
      ? new ToolFailure({ category: 'queue_full', code: 'queue_full', message: `Too many calls to ${ctx.tool.name} are waiting (maxQueue ${spec.maxQueue}); the call was not queued.`, retryAfterMs: spec.intervalMs })
      : new ToolFailure({ category: 'rate_limited', code: 'rate_limit_wait', message: `The next ${ctx.tool.name} slot (limit ${spec.limit} per ${spec.intervalMs} ms) comes after the deadline.`, retryAfterMs: slot.waitMs }));

    function runWith(release: Release): Promise<unknown> {
      return next(ctx).then(
        (value) => {
          release();
          return value;
        },
        (error: unknown) => {
          release();
          throw error;
        },
      );
    }
  };

  return { policy, close: async () => store.close?.() };
}
