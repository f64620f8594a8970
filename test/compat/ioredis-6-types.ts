// Type-only: an ioredis 6 client (the `ioredis-6` npm alias) is accepted wherever chainkit/redis takes a
// client, next to ioredis 5 (whose `Redis` class ioredis 6's is not assignable to). Checked by `tsc --noEmit`.
import Redis5 from 'ioredis';
import Redis6 from 'ioredis-6';
import { redisLearningStore, redisLimiterStore, redisRunStore, redisStores, type RedisClient } from 'chainkit/redis';

export function withIoredis6(): void {
  const redis = new Redis6({ lazyConnect: true });
  void redisStores(redis, { prefix: 'p' });
  void redisLimiterStore(redis, { prefix: 'p' });
  void redisLearningStore(redis, { prefix: 'p' });
  void redisRunStore(redis, { prefix: 'p' });
}

export function withIoredis5(): void {
  const redis = new Redis5({ lazyConnect: true });
  void redisStores(redis, { prefix: 'p' });
  void redisLimiterStore(redis, { prefix: 'p' });
  void redisLearningStore(redis, { prefix: 'p' });
  void redisRunStore(redis, { prefix: 'p' });
}

// ioredis 6's RESP3 reply mapping is another `Redis<'resp3'>` type: accepted too.
export function withIoredis6Resp3(): void {
  const redis = new Redis6({ lazyConnect: true, protocol: 3, replyMapping: 'resp3' });
  void redisStores(redis, { prefix: 'p' });
}

// @ts-expect-error -- not a Redis client: the structural type still checks what chainkit calls
export const notAClient: RedisClient = { get: async () => null };
