// Rate limits shared across processes on Redis (bottleneck clustering), with the wait computed and
// refused fast like the memory limiter's, a queue bound, and a bounded number of local limiters.
// bottleneck is kept, pinned to exactly 2.19.5, rather than replaced by a script of our own: its
// cluster mode already gives the shared queue with heartbeat retries, `maxConcurrent` across
// processes and the reclaiming of slots a dead process held, which a fixed-window script would have
// to rebuild. The price is that LIMITER_STATE (cluster-limiter.ts) reads its private keys, so the
// version is exact (2.19.5 is its last release) and test/redis/bottleneck-layout.test.ts fails if the
// version or the layout differs.
import Bottleneck from 'bottleneck';
import type { Redis } from 'ioredis';
import type { RedisClient } from './client.js';
import { ClusterLimiter, type Cluster } from './cluster-limiter.js';
import { BoundedLru } from '../util/lru.js';
import { checkOptions, fn, integer, nonEmpty } from '../define/options.js';
import { z } from 'zod';
import { DEFAULT_MAX_LIMITERS, maxQueueOf, type LimiterStore } from '../policies/window-limiter.js';

/** Options of {@link redisLimiterStore}. */
export interface RedisLimiterOptions {
  /** Namespace of the limiter ids (and so of bottleneck's keys). */
  prefix: string;
  /** Clock. Default `Date.now`. */
  now?: () => number;
  /**
   * Most limiters this process keeps at once (default 10,000): each is a bottleneck limiter with a
   * subscription and a heartbeat. Past it the least recently used idle one is dropped; its windows
   * stay in Redis. One with calls waiting or in flight never is.
   */
  maxLimiters?: number;
}

/** The Redis limiter store. */
export interface RedisLimiterStore extends LimiterStore {
  /** How many bottleneck limiters this process keeps right now. */
  size(): number;
}

// A local limiter unused this long is dropped (its state lives on in Redis): idle ones cost a heartbeat each.
const LOCAL_IDLE_MS = 15_000;
const SWEEP_MS = 5_000;

const REDIS_LIMITER_OPTIONS = z.object(
  { prefix: nonEmpty('prefix'), maxLimiters: integer('maxLimiters', 1).optional(), now: fn('now').optional() },
  { error: 'Expected redisLimiterStore options { prefix, … }.' },
);

/**
 * Rate limits shared by every process on the same Redis, through bottleneck's Redis clustering:
 * the same windows, concurrency and queue for all. As with the memory store, a call whose slot
 * would come after its deadline is refused at once (`rate_limit_wait`), and at most `maxQueue`
 * (default 50) calls wait per process. Limiter ids derive from `prefix`. It works on its own
 * duplicate of `redis` (bottleneck needs a subscriber too), closed by `runner.close()`.
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
  // Opened on first use. Eager: bottleneck waits for 'ready',
  // which a lazyConnect client (the option is copied) never emits.
  let conn: Bottleneck.IORedisConnection | undefined;
  const connection = (): Bottleneck.IORedisConnection => {
    if (!conn) {
      conn = new Bottleneck.IORedisConnection({ client: redis.duplicate({ lazyConnect: false }) });
      conn.on('error', () => {}); // surfaced per call as store_unavailable
      // bottleneck unsubscribes a dropped limiter from an async callback nobody awaits: while its subscriber is
      // reconnecting that rejects unhandled (and would end the process). A stale subscription is harmless.
      const subscriber = (conn as unknown as { subscriber: Redis }).subscriber;
      const unsubscribe = subscriber.unsubscribe.bind(subscriber) as (...channels: string[]) => Promise<unknown>;
      subscriber.unsubscribe = ((...channels: string[]) =>
        unsubscribe(...channels).catch(() => 0)) as Redis['unsubscribe'];
    }
    return conn;
  };

  const cluster: Cluster = {
    redis,
    now,
    open: (l) =>
      new Bottleneck({
        id: l.bid,
        datastore: 'ioredis',
        connection: connection(),
        clearDatastore: false, // join the windows other processes already share
        reservoir: l.spec.limit,
        reservoirRefreshAmount: l.spec.limit,
        reservoirRefreshInterval: l.spec.intervalMs,
        maxConcurrent: l.spec.maxConcurrent ?? null,
        highWater: maxQueueOf(l.spec),
        strategy: Bottleneck.strategy.OVERFLOW,
        // Queued jobs are retried on the heartbeat (5 s by default on Redis): beat a few times per window.
        heartbeatInterval: Math.max(50, Math.min(1000, Math.floor(l.spec.intervalMs / 4))),
        // Per-user state expires from Redis when idle (as a bottleneck Group's would); a tool's own does not.
        ...(l.ttlMs !== undefined && { timeout: l.ttlMs }),
      }),
  };

  // Keyed by tool id, or tool id and user: a Map inside, so a user id such as `__proto__` is just
  // another key (bottleneck's Group keeps its limiters in a plain object). Past the cap, the least
  // recently used idle one is dropped (its windows stay in Redis).
  const limiters = new BoundedLru<string, ClusterLimiter>(max, { evictable: (l) => l.idle, onEvict: (l) => l.close() });
  let sweeper: ReturnType<typeof setInterval> | undefined;
  const sweep = (): void => {
    const t = now();
    for (const [key, l] of limiters.entries()) {
      if (l.idle && t - l.lastActive > LOCAL_IDLE_MS) {
        limiters.delete(key);
        l.close();
      }
    }
    if (limiters.size === 0) {
      clearInterval(sweeper);
      sweeper = undefined;
    }
  };

  return {
    limiter(id, spec, user) {
      const key = user === undefined ? id : `${id}\n${user}`;
      const known = limiters.get(key);
      if (known) return known;
      // `:` cannot occur in a tool name, so tool `a` + user `b-c` never shares a window with tool `a-b` + user `c`.
      const l = limiters.set(
        key,
        new ClusterLimiter(
          cluster,
          user === undefined ? `${options.prefix}:${id}` : `${options.prefix}:${id}:${user}`,
          spec,
          user === undefined ? undefined : Math.max(2 * spec.intervalMs, 60_000),
        ),
      );
      if (!sweeper) {
        sweeper = setInterval(sweep, SWEEP_MS);
        sweeper.unref();
      }
      return l;
    },
    async close() {
      clearInterval(sweeper);
      sweeper = undefined;
      for (const l of [...limiters.values()]) l.close();
      limiters.clear();
      await conn?.disconnect(false);
      conn = undefined;
    },
    size: () => limiters.size,
  };
}
