// Per-user rate limits on Redis: one user past a limit is refused fast and never blocks another.
import Redis from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AbortScope, createRunner, defineTool, type Release, type ToolCall } from 'chainkit';
import { redisLimiterStore, redisStores } from 'chainkit/redis';

// Real Redis on 127.0.0.1:6379; every key lives under this run's prefix.
const prefix = `chainkit-limits-test:${process.pid}:${Date.now()}`;
let redis: Redis;

beforeAll(async () => {
  redis = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
});
afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

const tool = (name: string, rateLimit: Parameters<typeof defineTool>[0]['rateLimit']) =>
  defineTool({
    name,
    description: 'd',
    input: z.object({ i: z.number() }),
    output: z.object({ i: z.number() }),
    effect: 'read',
    rateLimit,
  });

describe('per-user rate limits on Redis', () => {
  it('refuses a user past the limit at once with rate_limit_wait; no breaker opens and another user still completes', async () => {
    const stores = redisStores(redis, { prefix: `${prefix}:window` });
    const runner = createRunner({
      invoker: async (c: ToolCall) => c.input,
      tools: [tool('per_user', { limit: 1, intervalMs: 60_000, per: 'user' })],
      stores,
    });
    const call = (userId: string, i: number) =>
      runner.invoke('per_user', { i }, { context: { userId }, timeoutMs: 1500 });
    expect((await call('alice', 0)).status).toBe('completed');
    for (let i = 1; i <= 10; i++) {
      const r = await call('alice', i);
      expect(r.status === 'failed' && r.error).toMatchObject({
        category: 'rate_limited',
        code: 'rate_limit_wait',
        attempts: 1,
        retryAfterMs: expect.any(Number),
      });
      if (r.status === 'failed') expect(r.error.retryAfterMs).toBeGreaterThan(1500); // the next window, not a guess
    }
    expect(await stores.breakers.isOpen('per_user', Date.now())).toBe(false);
    expect((await call('bob', 0)).status).toBe('completed');
    await runner.close();
  });

  it('a deadline that passes while queued for a slot does not count for the breaker', async () => {
    const stores = redisStores(redis, { prefix: `${prefix}:queued` });
    let release: () => void = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    const invoker = async (c: ToolCall) => {
      if ((c.input as { i: number }).i === 0) await held; // alice's first call holds her only concurrent slot
      return c.input;
    };
    const runner = createRunner({
      invoker,
      tools: [tool('one_at_a_time', { limit: 100, intervalMs: 60_000, per: 'user', maxConcurrent: 1 })],
      stores,
    });
    const first = runner.invoke('one_at_a_time', { i: 0 }, { context: { userId: 'alice' }, timeoutMs: 10_000 });
    await new Promise((r) => setTimeout(r, 50)); // the first call holds the slot
    const queued = await Promise.all(
      [1, 2, 3, 4, 5].map((i) =>
        runner.invoke('one_at_a_time', { i }, { context: { userId: 'alice' }, timeoutMs: 200 }),
      ),
    );
    expect(queued.map((r) => r.status)).toEqual(Array(5).fill('failed'));
    expect(await stores.breakers.isOpen('one_at_a_time', Date.now())).toBe(false);
    const bob = await runner.invoke('one_at_a_time', { i: 9 }, { context: { userId: 'bob' }, timeoutMs: 2000 });
    expect(bob.status === 'failed' ? bob.error : bob.status).toBe('completed');
    release();
    expect((await first).status).toBe('completed');
    await runner.close();
  });

  it('gives back a probe that a user limit refused, so the next user probes and closes the breaker', async () => {
    const stores = redisStores(redis, { prefix: `${prefix}:probe` });
    let calls = 0;
    const invoker = async (c: ToolCall) => {
      if (calls++ === 0) throw Object.assign(new Error('down'), { status: 503 });
      return c.input;
    };
    const perUser = defineTool({
      name: 'probed',
      description: 'd',
      input: z.object({ i: z.number() }),
      output: z.object({ i: z.number() }),
      effect: 'read',
      retry: false,
      rateLimit: { limit: 1, intervalMs: 60_000, per: 'user' },
    });
    const runner = createRunner({ invoker, tools: [perUser], stores, breaker: { threshold: 1, openMs: 200 } });
    const changes: string[] = [];
    runner.events.on('breaker:change', (e) => changes.push(e.state));
    const call = (userId: string) => runner.invoke('probed', { i: 0 }, { context: { userId }, timeoutMs: 2000 });
    expect((await call('alice')).status).toBe('failed'); // opens the breaker, and uses alice's slot
    await new Promise((r) => setTimeout(r, 250));
    const refused = await call('alice'); // the probe, refused by alice's own limit
    expect(refused.status === 'failed' && refused.error.code).toBe('rate_limit_wait');
    await new Promise((r) => setTimeout(r, 20)); // breaker records are not awaited by the call
    expect(changes).toEqual(['open']); // the refusal says nothing about the tool: neither closed nor reopened
    const bob = await call('bob');
    expect(bob.status === 'failed' ? bob.error : bob.status).toBe('completed');
    await new Promise((r) => setTimeout(r, 20));
    expect(changes).toEqual(['open', 'closed']);
    expect(await stores.breakers.isOpen('probed', Date.now())).toBe(false);
    await runner.close();
  });

  it('treats user ids such as __proto__ and constructor as ordinary users, and keeps a bounded number of limiters', async () => {
    const store = redisLimiterStore(redis, { prefix: `${prefix}:users`, maxLimiters: 20 });
    const spec = { limit: 1, intervalMs: 60_000, per: 'user' as const };
    const scope = new AbortScope();
    const take = async (user: string): Promise<Release> => {
      const slot = await store.limiter('chainkit:limited', spec, user).acquire(scope, Date.now() + 5000);
      if (typeof slot !== 'function') throw new Error(`refused: ${JSON.stringify(slot)}`);
      return slot;
    };
    for (const user of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) (await take(user))(); // one slot each
    const heldLimiter = store.limiter('chainkit:limited', spec, 'held');
    const held = await take('held'); // in flight: never evicted
    for (let u = 0; u < 60; u++) (await take(`user-${u}`))();
    expect(store.size()).toBeLessThanOrEqual(21);
    expect(store.limiter('chainkit:limited', spec, 'held')).toBe(heldLimiter);
    held();
    const again = await store.limiter('chainkit:limited', spec, '__proto__').acquire(scope, Date.now() + 5000);
    expect(again).toMatchObject({ refused: 'wait' }); // its window is used: the state is its own, in Redis
    await store.close!();
  });

  it('gives every limiter a default maxQueue of 50 waiting calls', async () => {
    const store = redisLimiterStore(redis, { prefix: `${prefix}:queue` });
    const spec = { limit: 1000, intervalMs: 60_000, per: 'global' as const, maxConcurrent: 1 };
    const scope = new AbortScope();
    const limiter = store.limiter('chainkit:busy', spec);
    const first = await limiter.acquire(scope, Date.now() + 5000);
    expect(typeof first).toBe('function');
    const waiting = Array.from({ length: 50 }, () => limiter.acquire(scope, Date.now() + 5000));
    await new Promise((r) => setTimeout(r, 50));
    expect(await limiter.acquire(scope, Date.now() + 5000)).toEqual({ refused: 'queue_full' });
    (first as Release)();
    for (const w of waiting) ((await w) as Release)(); // each takes the slot in turn
    await store.close!();
  });

  it('lets a burst that fits the window through at once, refusing only what would wait past the deadline', async () => {
    const store = redisLimiterStore(redis, { prefix: `${prefix}:burst` });
    const spec = { limit: 80, intervalMs: 60_000, per: 'global' as const };
    const scope = new AbortScope();
    const limiter = store.limiter('chainkit:burst', spec);
    const slots = await Promise.all(Array.from({ length: 100 }, () => limiter.acquire(scope, Date.now() + 5000)));
    expect(slots.filter((s) => typeof s === 'function')).toHaveLength(80); // more than maxQueue at once: none of these waits
    expect(slots.filter((s) => typeof s !== 'function')).toEqual(
      Array(20).fill({ refused: 'wait', waitMs: expect.any(Number) }),
    );
    for (const s of slots) if (typeof s === 'function') s();
    await store.close!();
  });
});

describe('limits shared by processes on Redis', () => {
  const scope = () => new AbortScope();
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const granted = (slot: unknown): Release => {
    if (typeof slot !== 'function') throw new Error(`not granted: ${JSON.stringify(slot)}`);
    return slot as Release;
  };

  it('a call that gives up while waiting for a window hands its slot back to the next caller, in any process', async () => {
    const [a, b] = [0, 1].map(() => redisLimiterStore(redis, { prefix: `${prefix}:given-back` }));
    const spec = { limit: 1, intervalMs: 1_000, per: 'global' as const };
    granted(await a!.limiter('chainkit:t', spec).acquire(scope(), Date.now() + 5_000)); // this window's slot
    const gaveUp = [scope(), scope(), scope()];
    const waiting = gaveUp.map((s) => a!.limiter('chainkit:t', spec).acquire(s, Date.now() + 10_000));
    await sleep(50); // each holds one of the next three windows
    for (const s of gaveUp) s.abort(new Error('cancelled'));
    expect((await Promise.allSettled(waiting)).map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    await sleep(50); // the slots reach Redis again
    // Another process gets the next window, not the fourth: cancelled calls took nothing.
    const next = await b!.limiter('chainkit:t', spec).acquire(scope(), Date.now() + 1_500);
    granted(next)();
    // And close() gives back what its waiting calls held.
    const pending = a!.limiter('chainkit:t', spec).acquire(scope(), Date.now() + 10_000);
    const closed = expect(pending).rejects.toMatchObject({ kind: 'closed' });
    await sleep(50);
    await a!.close!();
    await closed;
    const after = await b!.limiter('chainkit:t', spec).acquire(scope(), Date.now() + 2_500);
    granted(after)();
    await b!.close!();
  });

  it('a burst larger than maxQueue queues the calls that wait, up to maxQueue, as the memory limiter does', async () => {
    const store = redisLimiterStore(redis, { prefix: `${prefix}:burst-queue` });
    const limiter = store.limiter('chainkit:t', { limit: 55, intervalMs: 60_000, maxQueue: 3 });
    const scopes = Array.from({ length: 60 }, () => scope());
    const outcomes: unknown[] = Array(60).fill('waiting');
    const slots = scopes.map((s, i) =>
      Promise.resolve(limiter.acquire(s, Date.now() + 120_000)).then(
        (r) => (outcomes[i] = typeof r === 'function' ? 'granted' : r),
        () => (outcomes[i] = 'gave up'),
      ),
    );
    await sleep(300);
    // 55 start in this window; 3 wait for the next (maxQueue); 2 are refused.
    expect(outcomes.filter((o) => o === 'granted')).toHaveLength(55);
    expect(outcomes.filter((o) => o === 'waiting')).toHaveLength(3);
    expect(outcomes.filter((o) => o !== 'granted' && o !== 'waiting')).toEqual([
      { refused: 'queue_full' },
      { refused: 'queue_full' },
    ]);
    for (const s of scopes) s.abort(new Error('done'));
    await Promise.all(slots);
    await store.close!();
  });

  it('a process that declares a new limit has it at once, though another set the old one', async () => {
    const [a, b] = [0, 1].map(() => redisLimiterStore(redis, { prefix: `${prefix}:respec` }));
    granted(await a!.limiter('chainkit:t', { limit: 1, intervalMs: 60_000 }).acquire(scope(), Date.now() + 1_000));
    const wider = b!.limiter('chainkit:t', { limit: 3, intervalMs: 60_000 });
    granted(await wider.acquire(scope(), Date.now() + 1_000));
    granted(await wider.acquire(scope(), Date.now() + 1_000));
    expect(await wider.acquire(scope(), Date.now() + 1_000)).toMatchObject({ refused: 'wait' }); // 3 in this window
    const narrower = b!.limiter('chainkit:t', { limit: 1, intervalMs: 60_000, maxQueue: 1 }, 'x');
    granted(await narrower.acquire(scope(), Date.now() + 1_000));
    await Promise.all([a!.close!(), b!.close!()]);
  });

  it('maxConcurrent holds across processes: a call blocked in one gets the slot another releases', async () => {
    const [a, b] = [0, 1].map(() => redisLimiterStore(redis, { prefix: `${prefix}:concurrent` }));
    const spec = { limit: 100, intervalMs: 60_000, per: 'global' as const, maxConcurrent: 1 };
    const held = granted(await a!.limiter('chainkit:t', spec).acquire(scope(), Date.now() + 5_000));
    let got = false;
    const waiting = Promise.resolve(b!.limiter('chainkit:t', spec).acquire(scope(), Date.now() + 5_000)).then((s) => {
      got = true;
      return s;
    });
    await sleep(300);
    expect(got).toBe(false); // A still holds the only slot
    const released = Date.now();
    held();
    granted(await waiting)();
    expect(Date.now() - released).toBeLessThan(1_000); // B asks again within 400 ms
    await Promise.all([a!.close!(), b!.close!()]);
  });

  it('grants a free slot with maxQueue 0, refusing only a call that would wait', async () => {
    const store = redisLimiterStore(redis, { prefix: `${prefix}:no-queue` });
    const limiter = store.limiter('chainkit:t', { limit: 1, intervalMs: 60_000, maxQueue: 0 });
    granted(await limiter.acquire(scope(), Date.now() + 120_000))();
    expect(await limiter.acquire(scope(), Date.now() + 120_000)).toEqual({ refused: 'queue_full' });
    await store.close!();
  });

  it('waits longer than a timer can hold (~24.8 days) without starting early', async () => {
    const store = redisLimiterStore(redis, { prefix: `${prefix}:long-wait` });
    const limiter = store.limiter('chainkit:t', { limit: 1, intervalMs: 2 ** 31 - 1 });
    granted(await limiter.acquire(scope(), Infinity))();
    const later = [scope(), scope()]; // one and two windows on: the second is past what setTimeout holds
    const outcomes: string[] = [];
    const waits = later.map((s) =>
      Promise.resolve(limiter.acquire(s, Infinity)).then(
        (r) => outcomes.push(typeof r === 'function' ? 'granted' : JSON.stringify(r)),
        () => outcomes.push('gave up'),
      ),
    );
    await sleep(200);
    expect(outcomes).toEqual([]);
    for (const s of later) s.abort(new Error('done'));
    await Promise.all(waits);
    expect(outcomes).toEqual(['gave up', 'gave up']);
    await store.close!();
  });

  it('refuses at once a call blocked by maxConcurrent whose window slot comes after its deadline', async () => {
    const store = redisLimiterStore(redis, { prefix: `${prefix}:blocked-wait` });
    const limiter = store.limiter('chainkit:t', { limit: 1, intervalMs: 60_000, maxConcurrent: 1 });
    const held = granted(await limiter.acquire(scope(), Date.now() + 5_000));
    const t0 = Date.now();
    expect(await limiter.acquire(scope(), Date.now() + 1_500)).toMatchObject({ refused: 'wait' });
    expect(Date.now() - t0).toBeLessThan(1_000); // computed, not sat out
    held();
    await store.close!();
  });

  it('a call that gives up after Redis lost the windows hands back nothing of the new ones', async () => {
    const store = redisLimiterStore(redis, { prefix: `${prefix}:lost` });
    const spec = { limit: 1, intervalMs: 1_000 };
    const limiter = store.limiter('chainkit:t', spec);
    granted(await limiter.acquire(scope(), Date.now() + 5_000)); // window 0
    const old = scope();
    const oldWait = limiter.acquire(old, Date.now() + 5_000); // window 1 of the old windows
    await sleep(50);
    await redis.del(...(await redis.keys(`${prefix}:lost:*`))); // lost, as after a restart
    granted(await limiter.acquire(scope(), Date.now() + 5_000)); // window 0 of the new ones
    const next = scope();
    const nextWait = limiter.acquire(next, Date.now() + 5_000); // window 1 of the new ones
    await sleep(50);
    old.abort(new Error('gave up'));
    await expect(oldWait).rejects.toThrow('gave up');
    await sleep(50);
    // Window 1 is still taken: the next call's slot is window 2, after this deadline.
    expect(await limiter.acquire(scope(), Date.now() + 1_500)).toMatchObject({ refused: 'wait' });
    next.abort(new Error('done'));
    await expect(nextWait).rejects.toThrow('done');
    await store.close!();
  });

  it('refuses at once a call behind others blocked by maxConcurrent whose window comes after its deadline', async () => {
    const store = redisLimiterStore(redis, { prefix: `${prefix}:behind` });
    const limiter = store.limiter('chainkit:t', { limit: 1, intervalMs: 60_000, maxConcurrent: 1 });
    const held = granted(await limiter.acquire(scope(), Date.now() + 5_000));
    const blocked = scope();
    const inLine = Promise.resolve(limiter.acquire(blocked, Date.now() + 120_000)).catch(() => 'gave up');
    await sleep(50); // blocked behind the call running
    const t0 = Date.now();
    expect(await limiter.acquire(scope(), Date.now() + 2_000)).toMatchObject({ refused: 'wait' });
    expect(Date.now() - t0).toBeLessThan(1_000);
    blocked.abort(new Error('done'));
    expect(await inLine).toBe('gave up');
    held();
    await store.close!();
  });

  it('slots given back before Redis lost the windows are not handed out from the new ones', async () => {
    const store = redisLimiterStore(redis, { prefix: `${prefix}:holes` });
    const limiter = store.limiter('chainkit:t', { limit: 1, intervalMs: 1_000 });
    granted(await limiter.acquire(scope(), Date.now() + 5_000)); // window 0
    const gaveUp = scope();
    const second = limiter.acquire(gaveUp, Date.now() + 5_000); // window 1
    const third = scope();
    const thirdWait = limiter.acquire(third, Date.now() + 5_000); // window 2
    await sleep(50);
    gaveUp.abort(new Error('gave up')); // window 1 is given back: a hole below the last window
    await expect(second).rejects.toThrow('gave up');
    await sleep(50);
    await redis.del(`${prefix}:holes:chainkit:t:w:1000`); // the windows alone are lost (evicted)
    granted(await limiter.acquire(scope(), Date.now() + 500)); // the new windows' first: free now
    third.abort(new Error('done'));
    await expect(thirdWait).rejects.toThrow('done');
    await store.close!();
  });

  it('takes an intervalMs and deadlines with fractions of a millisecond', async () => {
    const store = redisLimiterStore(redis, { prefix: `${prefix}:fractions` });
    const limiter = store.limiter('chainkit:t', { limit: 1, intervalMs: 250.5, maxConcurrent: 1 });
    granted(await limiter.acquire(scope(), Date.now() + 1_000.25))();
    granted(await limiter.acquire(scope(), Date.now() + 1_000.25))(); // the next window, 250.5 ms on
    await store.close!();
  });

  it('the slot of a process that died mid-call lapses after its deadline', async () => {
    const [dead, b] = [0, 1].map(() => redisLimiterStore(redis, { prefix: `${prefix}:lapsed` }));
    const spec = { limit: 100, intervalMs: 60_000, per: 'global' as const, maxConcurrent: 1 };
    granted(await dead!.limiter('chainkit:t', spec).acquire(scope(), Date.now() + 200)); // never released
    const t0 = Date.now();
    granted(await b!.limiter('chainkit:t', spec).acquire(scope(), Date.now() + 10_000))();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(4_500); // its deadline and 5 s of grace
    await b!.close!();
  }, 15_000);
});

describe('a shared breaker whose probe is lost', () => {
  it('lets another probe through once openMs has passed (the probing instance died mid-call: open ~10× openMs)', async () => {
    const { breakers } = redisStores(redis, { prefix: `${prefix}:lost-probe` });
    const openMs = 1_000;
    const t0 = Date.now();
    await breakers.failure('flaky', t0, 1, openMs); // open until t0 + 1 s
    expect(await breakers.acquire('flaky', t0 + openMs, openMs)).toEqual({ status: 'probe' }); // then its caller dies
    expect(await breakers.acquire('flaky', t0 + openMs + 200, openMs)).toEqual({ status: 'open', retryAfterMs: 800 });
    expect(await breakers.acquire('flaky', t0 + 2 * openMs, openMs)).toEqual({ status: 'probe' }); // the lost one lapsed
    expect(await breakers.success('flaky')).toBe('closed');
    expect(await breakers.acquire('flaky', t0 + 2 * openMs, openMs)).toEqual({ status: 'closed' });
  });
});

describe('a shared limit closed while Redis is silent', () => {
  it('close() rejects the call asking and leaves no timer behind (it held one until Redis answered, or 10 s)', async () => {
    const silent = new Promise<never>(() => {});
    const never = (() => silent) as never;
    const store = redisLimiterStore({ evalsha: never, eval: never, zrem: never } as never, { prefix: 'silent-close' });
    const limiter = store.limiter('chainkit:t', { limit: 10, intervalMs: 1_000 });
    const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    const asking = limiter.acquire(new AbortScope(), Date.now() + 60_000);
    expect(timers()).toBeGreaterThan(before);
    await store.close!();
    await expect(asking).rejects.toMatchObject({ kind: 'closed' });
    expect(timers()).toBe(before);
  });
});
