import { describe, expect, it } from 'vitest';
import Redis from 'ioredis';
import pg from 'pg';
import {
  DefinitionError,
  httpInvoker,
  memoryCheckpointStore,
  memoryIdempotencyStore,
  memoryLimiterStore,
  memoryRunStore,
  MetricsCollector,
} from 'chainkit';
import { postgresStores } from 'chainkit/postgres';
import { redisLimiterStore, redisStores } from 'chainkit/redis';

describe('store options out of range are refused when the store is made', () => {
  it.each([Infinity, NaN, -1, 0])('the memory idempotency store refuses ttlMs %s', (ttlMs) => {
    expect(() => memoryIdempotencyStore({ ttlMs })).toThrow(/ttlMs/);
  });

  it.each([0, 1.5, Infinity])('the memory checkpoint store refuses maxPerContext %s', (maxPerContext) => {
    expect(() => memoryCheckpointStore({ maxPerContext })).toThrow(/maxPerContext/);
  });

  it.each([
    ['idempotencyTtlMs', Infinity],
    ['idempotencyTtlMs', 1.5],
    ['pendingTtlMs', -5],
    ['pendingWaitMs', 2 ** 31],
    ['pollMs', NaN],
  ] as const)('redisStores refuses %s: %s', (name, value) => {
    const redis = new Redis({ lazyConnect: true }); // never connects: the options fail first
    expect(() => redisStores(redis, { prefix: 'p', [name]: value })).toThrow(new RegExp(name));
    redis.disconnect();
  });
});

// Every store, the HTTP invoker and the metrics collector check options the way createRunner does:
// one DefinitionError listing every problem, each with its path, rather than a TypeError for the first.
describe('option checks list every problem at once', () => {
  const paths = (fn: () => unknown): string[] => {
    try {
      fn();
    } catch (error) {
      expect(error).toBeInstanceOf(DefinitionError);
      return (error as DefinitionError).issues.map((i) => i.path);
    }
    throw new Error('expected a DefinitionError');
  };

  it('the memory stores', () => {
    expect(paths(() => memoryCheckpointStore({ maxEntries: 0, maxPerContext: 1.5 }))).toEqual([
      'maxEntries',
      'maxPerContext',
    ]);
    expect(paths(() => memoryIdempotencyStore({ maxEntries: -1, ttlMs: Infinity, pendingTtlMs: NaN }))).toEqual([
      'maxEntries',
      'ttlMs',
      'pendingTtlMs',
    ]);
    expect(paths(() => memoryRunStore({ maxEnded: 0, maxEventsPerRun: 'many' as never }))).toEqual([
      'maxEnded',
      'maxEventsPerRun',
    ]);
    expect(paths(() => memoryLimiterStore(Date.now, { maxLimiters: 0 }))).toEqual(['maxLimiters']);
  });

  it('redisStores, with the message of each', () => {
    const redis = new Redis({ lazyConnect: true });
    try {
      expect(() =>
        redisStores(redis, { prefix: '', pendingTtlMs: -5, pollMs: 2 ** 31, maxPendingPerContext: 0 }),
      ).toThrow(
        /Invalid redisStores options \(4 problems\):\n {2}- prefix: Expected a non-empty `prefix`\.\n {2}- pendingTtlMs: .*\n {2}- pollMs: .*below 2\^31\.\n {2}- maxPendingPerContext: Expected `maxPendingPerContext` to be a positive integer\./,
      );
      expect(paths(() => redisStores(redis, undefined as never))).toEqual(['']);
      expect(paths(() => redisLimiterStore(redis, { prefix: '', maxLimiters: 1.5 }))).toEqual([
        'prefix',
        'maxLimiters',
      ]);
    } finally {
      redis.disconnect();
    }
  });

  it('postgresStores', async () => {
    const pool = new pg.Pool({ max: 1 }); // never connects: the options fail first
    try {
      expect(
        paths(() =>
          postgresStores(pool, {
            schema: '1bad',
            idempotencyTtlMs: 1.5,
            sweepIntervalMs: 0,
            preparedStatements: 'no' as never,
          }),
        ),
      ).toEqual(['schema', 'idempotencyTtlMs', 'sweepIntervalMs', 'preparedStatements']);
    } finally {
      await pool.end();
    }
  });

  it('httpInvoker and MetricsCollector', () => {
    expect(paths(() => httpInvoker({ baseUrl: 'ftp://x', maxBodyBytes: 0 }))).toEqual(['baseUrl', 'maxBodyBytes']);
    expect(paths(() => new MetricsCollector({ capacity: 0, minSuccessRate: 2 }))).toEqual([
      'capacity',
      'minSuccessRate',
    ]);
  });
});
