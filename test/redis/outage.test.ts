import { spawnSync } from 'node:child_process';
import Redis from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AbortScope, createRunner, findAndDelete, taskTools } from 'chainkit';
import { redisLimiterStore, redisStores } from 'chainkit/redis';
import { addOne, limited, TASK, workerInvoker } from '../fixtures/redis-worker.js';

// A Redis of this test's own, on another port, so it can be stopped and restarted.
const PORT = 16_390 + (process.pid % 500);
const start = (): void => {
  spawnSync('redis-server', [
    '--port',
    String(PORT),
    '--bind',
    '127.0.0.1',
    '--daemonize',
    'yes',
    '--save',
    '',
    '--appendonly',
    'no',
  ]);
};
const stop = (): void => {
  spawnSync('redis-cli', ['-p', String(PORT), 'shutdown', 'nosave']);
};
const until = async (check: () => boolean, ms = 5000): Promise<void> => {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
};

let redis: Redis;
beforeAll(async () => {
  start();
  // Fail fast while disconnected (no offline queue), reconnect quickly when Redis is back.
  redis = new Redis({
    host: '127.0.0.1',
    port: PORT,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => 50,
    lazyConnect: true,
  });
  redis.on('error', () => {}); // connection errors are expected here
  await until(() =>
    spawnSync('redis-cli', ['-p', String(PORT), 'ping'])
      .stdout?.toString()
      .includes('PONG'),
  );
  await redis.connect();
});
afterAll(() => {
  redis.disconnect();
  stop();
});

describe('chainkit/redis when Redis goes away', () => {
  it('fails with store_unavailable at once, never runs an unclaimed write or an unconfirmed delete, and recovers', async () => {
    const invoker = workerInvoker();
    const runner = createRunner({
      invoker,
      tools: [...taskTools],
      chains: [findAndDelete, addOne],
      stores: redisStores(redis, { prefix: `outage:${process.pid}` }),
    });
    const context = { userId: TASK.user_id };
    const before = await runner.run(addOne, { title: 'before' }, { context });
    expect(before.status === 'failed' ? before.error : before.status).toBe('completed');
    const gate = await runner.run(findAndDelete, { match: 'groceries' }, { context });
    expect(gate.status).toBe('awaiting_confirmation');

    stop();
    await until(() => redis.status !== 'ready');
    const t0 = Date.now();
    const down = await runner.run(addOne, { title: 'during' }, { context });
    expect(down.status === 'failed' && down.error).toMatchObject({
      category: 'unavailable',
      code: 'store_unavailable',
      retryable: true,
    });
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(invoker.callsTo('add_task')).toHaveLength(1); // the write was not attempted without its claim
    const resumed =
      gate.status === 'awaiting_confirmation'
        ? await runner.resume(gate.resumeToken, { approved: true }, { context })
        : gate;
    expect(resumed.status === 'failed' && resumed.error.code).toBe('store_unavailable');
    const gated = await runner.run(findAndDelete, { match: 'groceries' }, { context });
    expect(gated.status === 'failed' && gated.error.code).toBe('store_unavailable'); // no checkpoint, no token
    expect(invoker.callsTo('delete_task')).toHaveLength(0);

    start();
    await until(() => redis.status === 'ready');
    const back = await runner.run(addOne, { title: 'after' }, { context });
    expect(back.status === 'failed' ? back.error : back.status).toBe('completed');
    await runner.close();
  }, 20_000);

  it('a rate limit whose Redis stops answering fails as a store failure by the deadline, never hangs', async () => {
    const store = redisLimiterStore(redis, { prefix: `outage-silent:${process.pid}` });
    const limiter = store.limiter('chainkit:t', { limit: 10, intervalMs: 1_000 });
    await until(() => redis.status === 'ready');
    const ok = await limiter.acquire(new AbortScope(), Date.now() + 1_000);
    expect(typeof ok).toBe('function');
    const info = spawnSync('redis-cli', ['-p', String(PORT), 'info', 'server']).stdout.toString();
    const pid = Number(/process_id:(\d+)/.exec(info)![1]);
    process.kill(pid, 'SIGSTOP'); // up, but silent
    try {
      const t0 = Date.now();
      await expect(limiter.acquire(new AbortScope(), Date.now() + 500)).rejects.toMatchObject({
        info: { category: 'unavailable', code: 'store_unavailable' },
      });
      expect(Date.now() - t0).toBeLessThan(1_500);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    await store.close!();
  });

  it('a rate limit whose state Redis lost (a restart) starts afresh, with nothing unhandled', async () => {
    const runner = createRunner({
      invoker: workerInvoker(),
      tools: [limited],
      stores: redisStores(redis, { prefix: `outage-limit:${process.pid}` }),
    });
    const context = { userId: TASK.user_id };
    await until(() => redis.status === 'ready');
    const first = await runner.invoke('limited', { i: 1 }, { context });
    expect(first.status).toBe('completed');
    spawnSync('redis-cli', ['-p', String(PORT), 'flushall']); // the limiter's windows are gone, as after a restart
    const second = await runner.invoke('limited', { i: 2 }, { context });
    expect(second.status === 'failed' ? second.error : second.status).toBe('completed');
    await runner.close();
  });
});
