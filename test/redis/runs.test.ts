// The Redis run store keeps the run-store contract, on real Redis; and a recovered run takes over
// the idempotency claim its dead owner left.
import { setMaxListeners } from 'node:events';
import Redis, { type RedisOptions } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisRunStore, redisStores } from 'chainkit/redis';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, functionInvoker, ref } from 'chainkit';
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
import { encodeRunValue } from '../../src/stores/run-codec.js';

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
    expect(await idempotency.begin(`${p}-k`)).toEqual({ status: 'done', at: expect.any(Number), value: 1 });
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

describe('redis run events: waiting readers', () => {
  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const event = (i: number): string =>
    encodeRunValue({ at: Date.now(), type: 'step:progress', step: 's', data: { i } });
  // The store's client, counting the connections the log opens of its own.
  const counted = async (options: RedisOptions = {}, storePrefix = `${prefix}:${++n}`) => {
    const client = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true, maxRetriesPerRequest: 1, ...options });
    await client.connect();
    opened.push(client);
    const own: Redis[] = [];
    const duplicate = client.duplicate.bind(client);
    client.duplicate = (...args: Parameters<Redis['duplicate']>) => {
      const conn = duplicate(...args);
      own.push(conn);
      return conn;
    };
    const runs = redisRunStore(client, { prefix: storePrefix });
    eventStores.push(runs);
    const channel = (runId: string): string => `${storePrefix}:run-e:${runId}`;
    const stream = `${storePrefix}:run-e:`;
    const writer = redisRunStore(redis, { prefix: storePrefix }).events!;
    return { log: runs.events!, own, channel, stream, writer, client, storePrefix };
  };

  it('readers of many runs wait on one connection, each woken by its own run’s events only', async () => {
    const { log, own, writer, channel } = await counted();
    const ids = Array.from({ length: 40 }, (_, i) => `many-${i}`);
    const woken = new Set<string>();
    const stop = new AbortController();
    setMaxListeners(50, stop.signal); // one signal for all 42 readers
    const waits = [...ids, 'many-0', 'many-0'].map((id) =>
      log.wait(id, 0, 20_000, stop.signal).then(() => void woken.add(id)),
    );
    await pause(150);
    expect(woken.size).toBe(0);
    await writer.append('many-7', [event(1)]);
    await writer.append('many-0', [event(1)]);
    for (let i = 0; i < 100 && woken.size < 2; i++) await pause(10);
    await pause(50);
    expect([...woken].sort()).toEqual(['many-0', 'many-7']);
    // A reader behind the log is woken at once; one up to date waits.
    let t = Date.now();
    await log.wait('many-7', 0, 20_000);
    expect(Date.now() - t).toBeLessThan(500);
    const current = log.wait('many-7', 1, 150);
    t = Date.now();
    await current;
    expect(Date.now() - t).toBeGreaterThanOrEqual(100);
    stop.abort();
    await Promise.all(waits);
    expect(own).toHaveLength(1); // 42 readers: one subscriber connection, no blocking read each
    const subscribers = async () => (await redis.pubsub('NUMSUB', channel('many-3')))[1];
    expect(await subscribers()).toBe(1);
    await pause(4_500); // a run nobody waits for is unsubscribed within two idle periods
    expect(await subscribers()).toBe(0);
  });

  it('a reader waiting while the connection breaks is woken by an event appended before it is back', async () => {
    const { log, own, writer } = await counted();
    await writer.append('broken', [event(1)]);
    await log.wait('broken', 0, 1_000); // connected and subscribed
    const waiting = log.wait('broken', 1, 20_000);
    await pause(50);
    (own[0] as unknown as { stream: { destroy(): void } }).stream.destroy(); // ioredis reconnects after ~50 ms
    await writer.append('broken', [event(2)]); // published to nobody
    const t = Date.now();
    await waiting;
    expect(Date.now() - t).toBeLessThan(3_000);
    // Subscribed again: a later event wakes the next reader.
    const next = log.wait('broken', 2, 20_000);
    await pause(100);
    await writer.append('broken', [event(3)]);
    const t2 = Date.now();
    await next;
    expect(Date.now() - t2).toBeLessThan(1_000);
    expect(own).toHaveLength(1);
  });

  it('a log gone while its run is watched (retention passed) is waited on, not returned from at once', async () => {
    const { log, writer, stream } = await counted();
    await writer.append('gone', [event(1), event(2), event(3)], 60_000);
    const stop = new AbortController();
    const held = log.wait('gone', 3, 20_000, stop.signal); // a watcher up to date keeps the channel subscribed
    await pause(100);
    await redis.del(`${stream}gone`);
    let returns = 0;
    const t = Date.now();
    while (Date.now() - t < 300) {
      await log.wait('gone', 0, 1_000);
      returns++;
    }
    expect(returns).toBe(1); // before: thousands of returns with nothing to read
    await writer.append('gone', [event(1)]); // begins again at seq 1: readers from 0 are woken
    stop.abort();
    await held;
    const t2 = Date.now();
    await log.wait('gone', 0, 5_000);
    expect(Date.now() - t2).toBeLessThan(500);
  });

  it('wakes readers of a store whose client has a keyPrefix (ioredis prefixes keys, not channels)', async () => {
    const { log } = await counted({ keyPrefix: 'kp:' });
    await log.append('k', [event(1)]);
    const waiting = log.wait('k', 1, 5_000);
    await pause(150);
    const t = Date.now();
    await log.append('k', [event(2)]); // the same store: its own keys, under kp:
    await waiting;
    expect(Date.now() - t).toBeLessThan(1_000); // before: woken by its timeout only
    const keys = await redis.keys(`kp:${prefix}*`);
    expect(keys).toHaveLength(1);
    await redis.del(...keys);
  });

  it('replaces a subscriber that ended for good (ioredis gave up reconnecting): wake-ups and announces come back', async () => {
    const { log, own, writer } = await counted({ retryStrategy: () => null });
    const heard: string[] = [];
    const off = log.onAnnounce((id) => heard.push(id));
    await writer.append('ended', [event(1)]);
    await log.wait('ended', 0, 1_000);
    (own[0] as unknown as { stream: { destroy(): void } }).stream.destroy(); // dropped once, never reconnected
    await pause(200);
    const waiting = log.wait('ended', 1, 5_000);
    await pause(150);
    const t = Date.now();
    await writer.append('ended', [event(2)]);
    await waiting;
    expect(Date.now() - t).toBeLessThan(1_000);
    for (let i = 0; i < 40 && heard.length === 0; i++) {
      await writer.announce('someone');
      await pause(25);
    }
    off();
    expect(heard).toContain('someone');
    expect(own).toHaveLength(2);
  });

  it('a store shared by two runners: one closing leaves the other hearing announces', async () => {
    const { log, writer } = await counted();
    const heard: string[] = [];
    log.onAnnounce((id) => heard.push(id)); // the runner that stays
    const offA = log.onAnnounce(() => undefined); // the runner that closes
    const hear = async (id: string) => {
      for (let i = 0; i < 40 && !heard.includes(id); i++) {
        await writer.announce(id);
        await pause(25);
      }
      return heard.includes(id);
    };
    expect(await hear('before')).toBe(true);
    offA();
    await log.close!(); // what runner.close() does to the run store
    await pause(200);
    expect(await hear('after')).toBe(true); // before: never heard again (nor a cancel of its runs)
  });

  it("namespaces by ioredis keyPrefix on one Redis and chainkit prefix hear none of each other's announces", async () => {
    const shared = `${prefix}:${++n}`;
    const a = await counted({ keyPrefix: 'tenant-a:' }, shared);
    const b = await counted({ keyPrefix: 'tenant-b:' }, shared);
    const heardB: string[] = [];
    b.log.onAnnounce((id) => heardB.push(id));
    const heardA: string[] = [];
    a.log.onAnnounce((id) => heardA.push(id));
    for (let i = 0; i < 40 && !heardA.includes('order-1'); i++) {
      await a.log.announce('order-1'); // a cancel of run order-1 travels the same way
      await pause(25);
    }
    expect(heardA).toContain('order-1');
    expect(heardB).toEqual([]);
  });

  it('a runner closed while its run is being recorded starts nothing and leaves no connection open', async () => {
    const { client, own, storePrefix } = await counted();
    const tool = defineTool({
      name: 't',
      description: 't',
      input: z.object({ n: z.number() }),
      output: z.object({ n: z.number() }),
      effect: 'read',
    });
    let called = 0;
    const runner = createRunner({
      invoker: functionInvoker([tool], { t: async ({ n }) => (called++, { n }) }),
      stores: { runs: redisRunStore(client, { prefix: storePrefix }) },
    });
    const chain = defineChain({
      name: 'closing',
      input: z.object({ n: z.number() }),
      steps: [{ id: 'a', tool, input: { n: ref('input', 'n') } }],
    });
    const running = runner.run(chain, { n: 1 }); // its record is being created
    await runner.close();
    const r = await running;
    expect(r.status === 'failed' && r.error.code).toBe('runner_closed'); // recorded in flight: recovered elsewhere
    expect(called).toBe(0);
    await pause(300);
    expect(own.filter((c) => c.status !== 'end')).toEqual([]); // before: a subscriber opened after close, for good
  });
});

describe('redis: the context index after retention', () => {
  const find = defineTool({
    name: 'find',
    description: 'f',
    input: z.object({ n: z.number() }),
    output: z.object({ n: z.number() }),
    effect: 'read',
  });
  const owned = defineChain({
    name: 'owned',
    input: z.object({ n: z.number() }),
    context: z.object({ userId: z.string() }),
    steps: [{ id: 'find', tool: find, input: { n: ref('input', 'n') } }],
  });

  it('keeps no member of an expired run in a context’s indexes, with instances whose clocks differ', async () => {
    const p = `${prefix}:skew`;
    const make = (now: () => number) =>
      createRunner({
        invoker: functionInvoker([find], { find: async ({ n }) => ({ n }) }),
        stores: { runs: redisStores(redis, { prefix: p }).runs },
        chains: [owned],
        retention: { completedMs: 200, failedMs: 200 },
        now,
      });
    const a = make(() => Date.now());
    const b = make(() => Date.now() + 300); // an instance whose clock runs 300 ms ahead
    await a.run(owned, { n: 1 }, { context: { userId: 'alice' }, runId: 'skew-1' });
    await b.run(owned, { n: 2 }, { context: { userId: 'carol' }, runId: 'skew-2' }); // its finish looks at skew-1 early
    await new Promise((resolve) => setTimeout(resolve, 400)); // both records expired
    await a.run(owned, { n: 3 }, { context: { userId: 'dave' }, runId: 'skew-3' });
    await new Promise((resolve) => setTimeout(resolve, 400));
    await a.run(owned, { n: 4 }, { context: { userId: 'erin' }, runId: 'skew-4' }); // prunes what is due
    const members = (await Promise.all((await redis.keys(`${p}*cx:*`)).map((k) => redis.zrange(k, 0, -1)))).flat();
    expect(members).not.toContain('skew-1');
    expect(members).not.toContain('skew-2');
    await a.close();
    await b.close();
  });
});

describe('redis: runs waiting out a retry', () => {
  it('a listing of running runs finds one behind many runs waiting out a retry', async () => {
    const runs = redisRunStore(redis, { prefix: `${prefix}:retrying` });
    const t0 = Date.now();
    await runs.create(record('o', t0 + 60_000, { runId: 'plain', startedAt: t0 }), t0);
    for (let i = 1; i <= 45; i++) {
      await runs.create(record('o', t0 + 60_000, { runId: `r${i}`, startedAt: t0 + i }), t0);
      expect(await runs.markRetrying!(`r${i}`, 'o', t0 + 60_000)).toBe(true);
    }
    const all = { since: -Infinity, until: Infinity, limit: 1 };
    expect((await runs.listRuns!({ ...all, statuses: ['running'] })).runs.map((r) => r.runId)).toEqual(['plain']);
    expect((await runs.listRuns!({ ...all, statuses: ['retrying'] })).runs.map((r) => r.runId)).toEqual(['r45']);
    // The mark cleared, or the run claimed by another owner after its lease: running again, in that listing.
    expect(await runs.markRetrying!('r45', 'o', null)).toBe(true);
    const [claimed] = await runs.claimExpired('p', t0 + 120_000, t0 + 180_000, 1);
    expect(claimed?.runId).toBe('plain');
    expect(await runs.markRetrying!('r44', 'o', t0 + 60_000)).toBe(true);
    const taken = await runs.claimExpired('p', t0 + 120_000, t0 + 180_000, 50);
    expect(taken.map((r) => r.runId)).toContain('r44');
    const running = await runs.listRuns!({ ...all, limit: 50, statuses: ['running'] });
    expect(running.runs.map((r) => r.runId)).toEqual(expect.arrayContaining(['r45', 'r44', 'plain']));
    expect((await runs.listRuns!({ ...all, limit: 50, statuses: ['retrying'] })).runs).toEqual([]);
  });
});
