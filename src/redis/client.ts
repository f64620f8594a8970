// The ioredis client chainkit/redis takes, as a structural type: ioredis 5 and 6 `Redis` classes are
// not assignable to each other (protected members, own option types), though what chainkit calls is the same.
import type { Redis } from 'ioredis';

/** What {@link RedisClient.multi} returns, as far as chainkit chains it. */
export interface RedisTransaction {
  /** Queues an RPUSH. */
  rpush(key: string, ...values: string[]): RedisTransaction;
  /** Queues an LTRIM. */
  ltrim(key: string, start: number, stop: number): RedisTransaction;
  /** Sends the queued commands as one transaction. */
  exec(): Promise<unknown>;
}

/**
 * An ioredis client, v5 or v6 (`new Redis(…)` from `ioredis`): the commands chainkit/redis sends,
 * typed by the installed ioredis, and `duplicate()` (the run events' own connection: their subscriber).
 *
 * @example
 * ```ts
 * import Redis from 'ioredis';
 * const redis: RedisClient = new Redis('redis://127.0.0.1:6379');
 * const stores = redisStores(redis, { prefix: 'myapp' });
 * ```
 */
export interface RedisClient extends Pick<
  Redis,
  'eval' | 'evalsha' | 'get' | 'set' | 'exists' | 'del' | 'hmget' | 'lrange' | 'zrem'
> {
  /** Starts a transaction (MULTI … EXEC): the learning store appends in one. */
  multi(): RedisTransaction;
  /** A new connection with the same options: the run events' subscriber. */
  duplicate(override?: { lazyConnect?: boolean }): unknown;
}
