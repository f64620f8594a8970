// A partition between a durable runner and Redis (the network stops passing bytes: no error, no
// reset), made by a proxy this test owns; the shared server is never stopped.
import Redis from 'ioredis';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { redisStores } from 'chainkit/redis';
import { freezableProxy, type FreezableProxy } from '../helpers/proxy.js';
import { DEADLINE_MS, paid, paidLater, partitionScenario } from '../helpers/partition.js';

const prefix = `partition:${process.pid}:${Date.now() % 1_000_000}`;
let proxy: FreezableProxy;
const direct = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true });
const clients: Redis[] = [];
beforeAll(async () => {
  proxy = await freezableProxy({ host: '127.0.0.1', port: 6379 });
  await direct.connect();
});
afterAll(async () => {
  proxy.thaw();
  for (const c of clients) c.disconnect();
  let cursor = '0';
  do {
    const [next, keys] = await direct.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
    cursor = next;
    if (keys.length > 0) await direct.del(...keys);
  } while (cursor !== '0');
  direct.disconnect();
  await proxy.close();
});

describe('chainkit/redis behind a partition', () => {
  it("with the client's defaults: the run fails store_unavailable at its deadline, close() returns within 5 s, another runner ends the run", async () => {
    const proxied = new Redis({ host: '127.0.0.1', port: proxy.port, lazyConnect: true });
    clients.push(proxied);
    proxied.on('error', () => {}); // an app listens for its client's errors (here: command timeouts)
    await proxied.connect();
    await partitionScenario(proxy, redisStores(proxied, { prefix }), redisStores(direct, { prefix }), {
      chain: paid,
      failsWithinMs: DEADLINE_MS + 500,
      closesWithinMs: 5_000,
      recovered: 'deadline_exceeded',
    });
  });

  it('with commandTimeout: it fails sooner, and another runner completes the run', async () => {
    const proxied = new Redis({ host: '127.0.0.1', port: proxy.port, lazyConnect: true, commandTimeout: 1_000 });
    clients.push(proxied);
    proxied.on('error', () => {}); // an app listens for its client's errors (here: command timeouts)
    await proxied.connect();
    await partitionScenario(proxy, redisStores(proxied, { prefix }), redisStores(direct, { prefix }), {
      chain: paidLater,
      failsWithinMs: 2_500,
      closesWithinMs: 5_000,
      recovered: 'completed',
      shutdown: async () => proxied.disconnect(),
    });
  });
});
