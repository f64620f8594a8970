// Rate limits shared across processes on Redis: the memory limiter's fixed windows, concurrency cap and
// queue bound (window-limiter.ts), kept in Redis by chainkit's own scripts (cluster-limiter.ts), and a
// bounded number of local limiters.
import type { RedisClient } from './client.js';
import { ClusterLimiter } from './cluster-limiter.js';
import { BoundedLru } from '../util/lru.js';
import { checkOptions, fn, integer, nonEmpty } from '../define/options.js';
import { z } from 'zod';
import { RunAbortReason } from '../errors/failure.js';
import { DEFAULT_MAX_LIMITERS, type LimiterStore } from '../policies/window-limiter.js';

/** Options of {@link redisLimiterStore}. */
export interface RedisLimiterOptions {
  /** Namespace of the limits' keys in Redis. */
  prefix: string;
  /** Clock the calls' deadlines are read on. Default `Date.now`. Windows follow Redis's own clock. */
  now?: () => number;
  /**
   * Most limiters this process keeps at once (default 10,000). Past it the least recently used idle
   * one is dropped; its windows stay in Redis. One with calls waiting or in flight never is.
   */
  maxLimiters?: number;
}

/** The Redis limiter store. */
export interface RedisLimiterStore extends LimiterStore {
  /** How many limiters this process keeps right now. */
  size(): number;
}

const REDIS_LIMITER_OPTIONS = z.object(
  { prefix: nonEmpty('prefix'), maxLimiters: integer('maxLimiters', 1).optional(), now: fn('now').optional() },
  { error: 'Expected redisLimiterStore options { prefix, … }.' },
);

/**
 * Rate limits shared by every process on the same Redis: the same fixed windows, concurrency cap
 * and order for all. A call takes its window slot when it asks, so, as with the memory store, one
 * whose slot would come after its deadline is refused at once (`rate_limit_wait`), and at most
 * `maxQueue` (default 50) calls wait per process. A call that gives up (its run cancelled or past its
 * deadline) gives its slot back. Keys derive from `prefix`; each limit's keys expire once idle.
 * It sends its scripts on `redis` and opens no connection of its own.
 *
 * @example
 * ```ts
 * const runner = createRunner({
 *   invoker,
 *   tools,
 *   stores: { ...redisStores(redis, { prefix: 'myapp' }), limiter: redisLimiterStore(redis, { prefix: 'myapp' }) },
 * });
 * ```
 */
export function redisLimiterStore(redis: RedisClient, options: RedisLimiterOptions): RedisLimiterStore {
  checkOptions('redisLimiterStore options', REDIS_LIMITER_OPTIONS, options);
  const max = options.maxLimiters ?? DEFAULT_MAX_LIMITERS;
  const now = options.now ?? Date.now;
  // Keyed by tool id, or tool id and user: a Map inside, so a user id such as `__proto__` is just
  // another key. Past the cap, the least recently used idle one is dropped (its windows stay in Redis).
  const limiters = new BoundedLru<string, ClusterLimiter>(max, { evictable: (l) => l.idle });
  return {
    limiter(id, spec, user) {
      const key = user === undefined ? id : `${id}\n${user}`;
      const known = limiters.get(key);
      if (known) return known;
      // `:` cannot occur in a tool name, so tool `a` + user `b-c` never shares a window with tool `a-b` + user `c`.
      const bid = user === undefined ? `${options.prefix}:${id}` : `${options.prefix}:${id}:${user}`;
      return limiters.set(key, new ClusterLimiter(redis, now, bid, spec));
    },
    async close() {
      const reason = new RunAbortReason('closed', 'The runner was closed.');
      const all = [...limiters.values()];
      limiters.clear();
      await Promise.all(all.map((l) => l.close(reason)));
    },
    size: () => limiters.size,
  };
}
