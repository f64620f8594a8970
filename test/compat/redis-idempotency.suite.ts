// Waiting on another process's in-flight idempotent call, on real Redis: bounded by the deadline,
// stopped by close(). A suite run with each supported ioredis major: test/redis/idempotency.test.ts
// (ioredis 5) and test/compat/ioredis-6.test.ts (ioredis 6). Every key lives under the run's prefix.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineTool } from 'chainkit';
import { createMockInvoker } from 'chainkit/testing';
import { redisStores } from 'chainkit/redis';
import { idempotencyStoreKey } from '../../src/run/call-context.js';
import type { MonitorClient, SuiteClient, SuiteOptions } from './redis-client.js';
import { expectedAfterUndo, retriedAfterUndo, undoneMarkContract } from '../helpers/undone-retry.js';

/** Registers the idempotency-wait tests for one client. */
export function redisIdempotencySuite({ label, client }: SuiteOptions): void {
  const prefix = `chainkit-test-idem:${label}:${process.pid}:${Date.now()}`;
  let redis: SuiteClient; // the stores' connection
  let other: SuiteClient; // "another process": claims keys
  let monitor: MonitorClient; // MONITOR: every command the stores send
  const sent: string[][] = [];

  const write = defineTool({
    name: 'pay',
    description: 'pay',
    input: z.object({}),
    output: z.object({ ok: z.boolean() }),
    effect: 'write',
    timeoutMs: 5000,
  });
  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
  /** Where the store keeps `key` of a call of `tool` without a context: scoped per tool and caller. */
  const stored = (key: string, tool = 'pay') => `${prefix}:idem:${idempotencyStoreKey(tool, {}, key)}`;
  const polls = (key: string) => sent.filter((a) => a[0]?.toLowerCase() === 'get' && a[1] === stored(key)).length;
  /** Claims `key` as in flight, as another process mid-call would. */
  const claimElsewhere = (key: string) => other.set(stored(key), '{"s":"p"}', 'PX', 60_000);

  describe(`redis idempotency: waiting for a call in flight elsewhere (${label})`, () => {
    beforeAll(async () => {
      redis = client();
      other = client();
      await Promise.all([redis.connect(), other.connect()]);
      monitor = await client().monitor();
      monitor.on('monitor', (_time: string, args: string[]) => {
        if (args.some((a) => a.startsWith(prefix))) sent.push(args);
      });
    });
    afterAll(async () => {
      monitor.disconnect();
      const keys = await other.keys(`${prefix}*`);
      if (keys.length) await other.del(...keys);
      redis.disconnect();
      other.disconnect();
    });

    it('ends at the call deadline with deadline_exceeded, not after pendingWaitMs, and stops polling', async () => {
      await claimElsewhere('k1');
      const invoker = createMockInvoker({ pay: { ok: { ok: true } } });
      const runner = createRunner({
        invoker,
        tools: [write],
        stores: redisStores(redis, { prefix, pollMs: 10, pendingWaitMs: 3000 }),
      });
      const r = await runner.invoke('pay', {}, { idempotencyKey: 'k1', timeoutMs: 60 });
      expect(r.status === 'failed' && r.error).toMatchObject({ category: 'timeout', code: 'deadline_exceeded' });
      expect(invoker.calls).toHaveLength(0);
      expect(polls('k1')).toBeLessThanOrEqual(8); // ~60 ms / 10 ms, never 3000 / 10
      await pause(50);
      const after = polls('k1');
      await pause(50);
      expect(polls('k1')).toBe(after); // nothing polls on behalf of a call that is over
      await runner.close();
    });

    it('holds the claim of a call in flight until its deadline, past pendingTtlMs: a duplicate waits for it', async () => {
      const invoker = createMockInvoker([write], {
        pay: [async () => (await pause(400), { ok: true }), { ok: { ok: true } }],
      });
      const runners = [0, 1].map(() =>
        createRunner({
          invoker,
          tools: [write],
          stores: redisStores(redis, { prefix, pollMs: 10, pendingTtlMs: 100 }),
        }),
      );
      const first = runners[0]!.invoke('pay', {}, { idempotencyKey: 'k-held', timeoutMs: 3000 });
      await pause(250); // the call is in flight, past the store's pendingTtlMs
      const duplicate = runners[1]!.invoke('pay', {}, { idempotencyKey: 'k-held', timeoutMs: 3000 });
      const results = await Promise.all([first, duplicate]);
      expect(results.map((r) => r.status)).toEqual(['completed', 'completed']);
      expect(invoker.callsTo('pay')).toHaveLength(1);
      await Promise.all(runners.map((r) => r.close()));
    });

    it('sends no Redis command after runner.close()', async () => {
      await claimElsewhere('k2');
      const runner = createRunner({
        invoker: createMockInvoker({ pay: { ok: { ok: true } } }),
        tools: [write],
        stores: redisStores(redis, { prefix, pollMs: 10, pendingWaitMs: 3000 }),
      });
      const pending = runner.invoke('pay', {}, { idempotencyKey: 'k2', timeoutMs: 10_000 });
      while (polls('k2') < 2) await pause(10);
      await runner.close();
      const r = await pending;
      expect(r.status === 'failed' && r.error).toMatchObject({ category: 'cancelled', code: 'runner_closed' });
      await pause(30); // a GET already on the wire may still show up in MONITOR
      const count = sent.length;
      await pause(60);
      expect(sent.slice(count)).toEqual([]);
    });

    it('a duplicate that outlives pendingWaitMs before its deadline fails with conflict', async () => {
      await claimElsewhere('k3');
      const runner = createRunner({
        invoker: createMockInvoker({ pay: { ok: { ok: true } } }),
        tools: [write],
        stores: redisStores(redis, { prefix, pollMs: 10, pendingWaitMs: 40 }),
      });
      const r = await runner.invoke('pay', {}, { idempotencyKey: 'k3', timeoutMs: 10_000 });
      expect(r.status === 'failed' && r.error.category).toBe('conflict');
      await runner.close();
    });

    it('returns the result the other process keeps', async () => {
      await claimElsewhere('k4');
      const invoker = createMockInvoker({ pay: { ok: { ok: false } } });
      const runner = createRunner({ invoker, tools: [write], stores: redisStores(redis, { prefix, pollMs: 10 }) });
      const pending = runner.invoke('pay', {}, { idempotencyKey: 'k4', timeoutMs: 10_000 });
      await pause(30);
      await other.set(stored('k4'), JSON.stringify({ s: 'd', v: { ok: true } }), 'PX', 60_000);
      const r = await pending;
      expect(r.status === 'completed' && r.output).toEqual({ ok: true });
      expect(r.trace.steps[0]!.status).toBe('cached');
      expect(invoker.calls).toHaveLength(0);
      await runner.close();
    });
    it('keeps the key of a write whose outcome is unknown: a duplicate in another process gets that failure, the tool runs once', async () => {
      const drop = defineTool({
        name: 'drop',
        description: 'drop',
        input: z.object({}),
        output: z.object({ ok: z.boolean() }),
        effect: 'destructive',
        timeoutMs: 40,
      });
      const invoker = createMockInvoker({ drop: [() => new Promise(() => {}), { ok: { ok: true } }] }); // hangs, ignoring its signal
      const a = createRunner({ invoker, tools: [drop], stores: redisStores(redis, { prefix, pollMs: 10 }) });
      const b = createRunner({ invoker, tools: [drop], stores: redisStores(redis, { prefix, pollMs: 10 }) });
      const first = a.invoke('drop', {}, { idempotencyKey: 'k5', timeoutMs: 2000 });
      await pause(10);
      const duplicate = b.invoke('drop', {}, { idempotencyKey: 'k5', timeoutMs: 2000 }); // waits for the call in flight
      const results = [
        await first,
        await duplicate,
        await b.invoke('drop', {}, { idempotencyKey: 'k5', timeoutMs: 2000 }),
      ];
      for (const r of results)
        expect(r.status === 'failed' && r.error).toMatchObject({ category: 'timeout', retryable: false });
      expect(results[2]!.status === 'failed' && results[2]!.error.message).toMatch(/outcome is unknown/);
      expect(invoker.calls).toHaveLength(1);
      const ttl = await other.pttl(stored('k5', 'drop'));
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000); // the pending marker's TTL, not a kept result's 24 h
      await Promise.all([a.close(), b.close()]);
    });

    it('keeps an undone mark in place of the result, and only over one', async () => {
      await undoneMarkContract(redisStores(redis, { prefix }).idempotency, `mark-${Date.now()}`);
    });

    it('a write undone after a failed run is done again when the run is retried on another replica', async () => {
      const runId = `undo-${Date.now()}`;
      const got = await retriedAfterUndo(() => redisStores(redis, { prefix }).idempotency, runId);
      expect(got).toEqual(expectedAfterUndo(runId));
    });
  });
}
