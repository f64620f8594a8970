// The Redis run store keeps the run-store contract, on real Redis; and a recovered run takes over
// the idempotency claim its dead owner left.
import Redis from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisRunStore, redisStores } from 'chainkit/redis';
import {
  entry,
  record,
  runEventsContract,
  runStoreContract,
  takeOverContract,
  watchAcrossRunnersContract,
  cancelAcrossRunnersContract,
  decideAcrossRunnersContract,
  type RunEventsSetup,
} from '../stores/run-store-contract.js';
import type { RunStore } from '../../src/stores/run-store.js';

// Real Redis on 127.0.0.1:6379; every key lives under this file's prefix and is deleted afterwards.
const prefix = `chainkit-test-runs:${process.pid}:${Date.now()}`;
const connect = async (): Promise<Redis> => {
  const client = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true, maxRetriesPerRequest: 1 });
  await client.connect();
  return client;
};
let redis: Redis;
const opened: Redis[] = [];
beforeAll(async () => {
  redis = await connect();
});
afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length) await redis.del(...keys);
  for (const client of [...opened, redis]) client.disconnect();
});

let n = 0;
runStoreContract('redis', async () => {
  const p = `${prefix}:${++n}`;
  const { runs, idempotency } = redisStores(redis, { prefix: p, pollMs: 5 });
  return {
    runs,
    idempotency,
    peers: async (count) =>
      Promise.all(
        Array.from({ length: count }, async () => {
          const client = await connect();
          opened.push(client);
          return redisRunStore(client, { prefix: p });
        }),
      ),
  };
});

const eventStores: RunStore[] = [];
afterAll(async () => {
  for (const store of eventStores) await store.close?.();
});
const eventsSetup = async (): Promise<RunEventsSetup> => {
  const p = `${prefix}:${++n}`;
  const runs = redisRunStore(redis, { prefix: p, maxEventsPerRun: 50 });
  eventStores.push(runs);
  return {
    runs,
    maxEventsPerRun: 50,
    peers: async (count) =>
      Promise.all(
        Array.from({ length: count }, async () => {
          const client = await connect();
          opened.push(client);
          const peer = redisRunStore(client, { prefix: p });
          eventStores.push(peer);
          return peer;
        }),
      ),
  };
};
runEventsContract('redis', eventsSetup);
watchAcrossRunnersContract('redis', eventsSetup);
cancelAcrossRunnersContract('redis', eventsSetup);

takeOverContract('redis', async () => redisStores(redis, { prefix: `${prefix}:${++n}`, pollMs: 5 }).idempotency);

describe('redis run store', () => {
  it('sends one command per operation: a journal write with its idempotency result is one script call', async () => {
    const monitor = await (await connect()).monitor();
    const p = `${prefix}:${++n}`;
    const sent: string[][] = [];
    monitor.on('monitor', (_t: string, args: string[], source: string) => {
      if (source !== 'lua' && args.some((a) => a.startsWith(p))) sent.push(args); // what clients send, not what scripts call
    });
    const { runs, idempotency } = redisStores(redis, { prefix: p });
    const rec = record('A', Date.now() + 60_000);
    const count = async (op: () => Promise<unknown>): Promise<number> => {
      await op();
      await new Promise((r) => setTimeout(r, 30)); // MONITOR reports asynchronously
      const k = sent.length;
      sent.length = 0;
      return k;
    };
    expect(await count(() => runs.create(rec, Date.now()))).toBe(1);
    expect(await count(() => runs.journal(rec.runId, 'A', [entry('s1', 1)], { key: `${p}-k`, value: 1 }))).toBe(1);
    expect(await count(() => runs.renew('A', [rec.runId], Date.now() + 90_000))).toBe(1);
    expect(await count(() => runs.get(rec.runId))).toBe(1);
    expect(await count(() => runs.finish(rec.runId, 'A', 'completed', {}, 60_000))).toBe(1);
    expect(await idempotency.begin(`${p}-k`)).toEqual({ status: 'done', value: 1 });
    monitor.disconnect();
  });

  it('keeps a run in flight with no expiry and an ended one for its retention, journal included', async () => {
    const p = `${prefix}:${++n}`;
    const runs = redisRunStore(redis, { prefix: p });
    const rec = record('A', Date.now() + 60_000);
    await runs.create(rec, Date.now());
    await runs.journal(rec.runId, 'A', [entry('s1', 1)]);
    expect(await redis.pttl(`${p}:run:${rec.runId}`)).toBe(-1);
    expect(await redis.pttl(`${p}:run-j:${rec.runId}`)).toBe(-1);
    await runs.finish(rec.runId, 'A', 'completed', {}, 50_000);
    for (const key of [`${p}:run:${rec.runId}`, `${p}:run-j:${rec.runId}`]) {
      const ttl = await redis.pttl(key);
      expect(ttl).toBeGreaterThan(40_000);
      expect(ttl).toBeLessThanOrEqual(50_000);
    }
    expect(await redis.zscore(`${p}:runs:live`, rec.runId)).toBeNull();
  });

  it('fails with store_unavailable when Redis refuses, naming the operation', async () => {
    const closed = new Redis({
      host: '127.0.0.1',
      port: 6379,
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
    });
    const runs = redisRunStore(closed, { prefix: `${prefix}:${++n}` });
    await expect(runs.get('r')).rejects.toMatchObject({
      info: { category: 'unavailable', code: 'store_unavailable' },
      message: /run \(get\)/,
    });
    closed.disconnect();
  });

  it('refuses an empty prefix', () => {
    expect(() => redisRunStore(redis, { prefix: '' })).toThrow(/prefix/);
  });
});

decideAcrossRunnersContract('redis', async () => {
  const p = `${prefix}:${++n}`;
  return {
    stores: async (count) =>
      Promise.all(
        Array.from({ length: count }, async () => {
          const client = await connect();
          opened.push(client);
          const { runs, checkpoints } = redisStores(client, { prefix: p, pollMs: 5 });
          eventStores.push(runs);
          return { runs, checkpoints };
        }),
      ),
  };
});
