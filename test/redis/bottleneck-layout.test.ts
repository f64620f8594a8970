// The Redis limiter reads bottleneck's own keys for its wait estimate (LIMITER_STATE in
// src/redis/cluster-limiter.ts), so bottleneck is pinned to one exact version, and this test fails if that
// version or its key layout differs from what the script reads.
import { createRequire } from 'node:module';
import Redis from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Release } from 'chainkit';
import { redisLimiterStore } from 'chainkit/redis';
import { AbortScope } from '../../src/policies/abort.js';

const prefix = `chainkit-bottleneck-layout:${process.pid}:${Date.now()}`;
let redis: Redis;

beforeAll(async () => {
  redis = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
});
afterAll(async () => {
  const keys = await redis.keys(`b_${prefix}*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

describe('bottleneck, whose Redis keys the limiter reads', () => {
  it('is the exact version package.json pins', () => {
    const installed = (createRequire(import.meta.url)('bottleneck/package.json') as { version: string }).version;
    const pinned = (createRequire(import.meta.url)('../../package.json') as { dependencies: Record<string, string> })
      .dependencies.bottleneck;
    expect(pinned).toBe('2.19.5'); // exact: a range would let its key layout change under the Lua script
    expect(installed).toBe(pinned);
  });

  it('keeps the fields the wait estimate reads where the script reads them', async () => {
    const store = redisLimiterStore(redis, { prefix });
    const limiter = store.limiter('layout', { limit: 3, intervalMs: 60_000, maxConcurrent: 2 });
    const scope = new AbortScope();
    const release = (await limiter.acquire(scope, Date.now() + 5_000)) as Release;
    expect(typeof release).toBe('function');
    try {
      const settings = await redis.hgetall(`b_${prefix}:layout_settings`);
      // One slot held: the reservoir went from 3 to 2, one job running, the cap as given.
      expect(settings).toMatchObject({ reservoir: '2', running: '1', maxConcurrent: '2' });
      expect(Number(settings.lastReservoirRefresh)).toBeGreaterThan(Date.now() - 60_000);
      expect(await redis.type(`b_${prefix}:layout_client_num_queued`)).toBe('hash');
      for (const n of await redis.hvals(`b_${prefix}:layout_client_num_queued`))
        expect(Number.isInteger(Number(n))).toBe(true);
    } finally {
      release();
      await store.close?.();
    }
  });
});
