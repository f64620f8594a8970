import { describe, expect, it } from 'vitest';
import Redis from 'ioredis';
import { memoryCheckpointStore, memoryIdempotencyStore } from 'chainkit';
import { redisStores } from 'chainkit/redis';

describe('store options out of range are refused when the store is made', () => {
  it.each([Infinity, NaN, -1, 0])('the memory idempotency store refuses ttlMs %s', (ttlMs) => {
    expect(() => memoryIdempotencyStore({ ttlMs })).toThrow(/ttlMs/);
  });

  it.each([0, 1.5, Infinity])('the memory checkpoint store refuses maxPerContext %s', (maxPerContext) => {
    expect(() => memoryCheckpointStore({ maxPerContext })).toThrow(/maxPerContext/);
  });

  it.each([
    ['idempotencyTtlMs', Infinity], ['idempotencyTtlMs', 1.5], ['pendingTtlMs', -5], ['pendingWaitMs', 2 ** 31], ['pollMs', NaN],
  ] as const)('redisStores refuses %s: %s', (name, value) => {
    const redis = new Redis({ lazyConnect: true }); // never connects: the options fail first
    expect(() => redisStores(redis, { prefix: 'p', [name]: value })).toThrow(new RegExp(name));
    redis.disconnect();
  });
});
