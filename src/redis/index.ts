/**
 * chainkit/redis: shared stores on Redis, so any instance can resume a token, see a kept result
 * or a breaker another instance opened. Every read-modify-write is one Lua script: atomic.
 *
 * @module chainkit/redis
 */
import type { RedisClient } from './client.js';
import { checkOptions, fn, integer, integerMs, nonEmpty, timerMs } from '../define/options.js';
import { z } from 'zod';
import { decodeCheckpoint, encodeCheckpoint } from '../stores/serialize.js';
import type { LimiterStore } from '../policies/window-limiter.js';
import { redisLimiterStore } from './limiter.js';
import { redisIdempotencyStore } from './idempotency.js';
import { redisRunStore } from './runs.js';
import { redisLearningStore } from './learning.js';
import type { RunStore } from '../stores/run-store.js';
import type {
  BreakerChange,
  BreakerDecision,
  BreakerStore,
  Checkpoint,
  CheckpointStore,
  IdempotencyStore,
  LearningStore,
  TakeResult,
} from '../stores/types.js';

export type { RedisClient, RedisTransaction } from './client.js';
export { redisLimiterStore, type RedisLimiterOptions, type RedisLimiterStore } from './limiter.js';
export { redisRunStore, type RedisRunStoreOptions } from './runs.js';
export { redisLearningStore, type RedisLearningOptions } from './learning.js';
export type { IdempotencyBeginOptions } from '../stores/types.js';
export type { RunStore } from '../stores/run-store.js';

/** Options of {@link redisStores}. */
export interface RedisStoresOptions {
  /** Namespace of every key, e.g. `myapp:chainkit`. Two apps on one Redis need different prefixes. */
  prefix: string;
  /** How long kept results live. Default 24 h. */
  idempotencyTtlMs?: number;
  /**
   * How long an in-flight marker lives if its process dies mid-call (at least: a marker lives until
   * its call's deadline when that is later), and how long the key of a write whose outcome is
   * unknown stays claimed after its failure (its late answer, when it comes first, is kept as the
   * result). Default 60 s.
   */
  pendingTtlMs?: number;
  /**
   * How long a duplicate waits for the call in flight elsewhere before failing with `conflict`. Default 30 s.
   * Never past the waiting call's deadline (`timeout` / `deadline_exceeded`), its cancel or `runner.close()`.
   */
  pendingWaitMs?: number;
  /** Poll interval while waiting. Default 50 ms. */
  pollMs?: number;
  /**
   * Pending checkpoints kept per trusted context (per user); past it, that context's own oldest is
   * deleted, so one user's gates never push out another's. Default 100.
   */
  maxPendingPerContext?: number;
  /** Clock (for breaker windows). Default `Date.now`. */
  now?: () => number;
}

/** The Redis-backed stores, for `createRunner({ stores })`. */
export interface RedisStores {
  checkpoints: CheckpointStore;
  idempotency: IdempotencyStore;
  breakers: BreakerStore;
  /** What runners learn (transitions, timing samples), bounded. */
  metrics: LearningStore;
  /** Rate limits shared by every process on the same Redis (windows, concurrency, order). */
  limiter: LimiterStore;
  /**
   * Durable runs ([guide](https://github.com/chainkit-dev/chainkit/blob/main/docs/guides/durable-runs.md)):
   * `journal(…, complete)` keeps results in `idempotency`, in the same round trip.
   */
  runs: RunStore;
}

// KEYS: checkpoint, tombstone. Returns the checkpoint (and leaves a tombstone for its remaining TTL),
// 'USED' if a tombstone exists, or nil.
const TAKE = `
local v = redis.call('GET', KEYS[1])
if v then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl < 1 then ttl = 1000 end
  redis.call('DEL', KEYS[1])
  redis.call('SET', KEYS[2], '1', 'PX', ttl)
  return v
end
if redis.call('EXISTS', KEYS[2]) == 1 then return 'USED' end
return false`;

// KEYS: checkpoint, tombstone, the context's sorted set of checkpoint ids (score: createdAt).
// ARGV: encoded, ttl, id, createdAt, max pending per context, checkpoint key prefix. Saving (or
// putting back) clears the tombstone. Past the bound, ids whose checkpoint is gone (taken, expired)
// leave the set first, then the context's own oldest pending checkpoints are deleted. The checkpoint
// keys of other ids are derived here from ARGV[6]: single-node Redis, like every script here.
const SAVE = `
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('DEL', KEYS[2])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[3])
if redis.call('PTTL', KEYS[3]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[3], ARGV[2]) end
local max = tonumber(ARGV[5])
local n = redis.call('ZCARD', KEYS[3])
if n <= max then return 1 end
for _, m in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
  if n <= max then break end
  if redis.call('EXISTS', ARGV[6] .. m) == 0 then
    redis.call('ZREM', KEYS[3], m)
    n = n - 1
  end
end
while n > max do
  local oldest = redis.call('ZRANGE', KEYS[3], 0, 1)
  local victim = oldest[1]
  if victim == ARGV[3] then victim = oldest[2] end
  redis.call('ZREM', KEYS[3], victim)
  redis.call('DEL', ARGV[6] .. victim)
  n = n - 1
end
return 1`;

// KEYS: breaker hash. ARGV: now, openMs. Returns 'closed', 'probe', or the ms until it may be probed.
// 'probing' holds when the probe began ('0': none): one older than openMs is taken as lost (its instance died
// mid-call), so another may probe; the breaker no longer stays open until the hash expires (10 × openMs).
const ACQUIRE = `
local open = tonumber(redis.call('HGET', KEYS[1], 'openUntil') or '0')
if open == 0 then return 'closed' end
local now = tonumber(ARGV[1])
if now < open then return tostring(open - now) end
local probing = tonumber(redis.call('HGET', KEYS[1], 'probing') or '0') or 0
if probing > 0 and now - probing < tonumber(ARGV[2]) then return tostring(probing + tonumber(ARGV[2]) - now) end
redis.call('HSET', KEYS[1], 'probing', ARGV[1])
return 'probe'`;

// KEYS: breaker hash. Returns 'closed' if it was open.
const SUCCESS = `
local open = tonumber(redis.call('HGET', KEYS[1], 'openUntil') or '0')
redis.call('DEL', KEYS[1])
if open ~= 0 then return 'closed' end
return ''`;

// KEYS: breaker hash. Gives back a probe that never reached the tool: the next call may probe.
const RELEASE = `
if (redis.call('HGET', KEYS[1], 'probing') or '0') ~= '0' then redis.call('HSET', KEYS[1], 'probing', '0') end
return 1`;

// KEYS: breaker hash. ARGV: now, threshold, openMs. Returns 'opened' when it opens.
const FAILURE = `
local failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
local open = tonumber(redis.call('HGET', KEYS[1], 'openUntil') or '0')
local probing = (redis.call('HGET', KEYS[1], 'probing') or '0') ~= '0'
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) * 10)
if probing or (open == 0 and failures >= tonumber(ARGV[2])) then
  redis.call('HSET', KEYS[1], 'openUntil', tonumber(ARGV[1]) + tonumber(ARGV[3]), 'probing', '0')
  return 'opened'
end
return ''`;

const REDIS_STORES_OPTIONS = z.object(
  {
    prefix: nonEmpty('prefix'),
    // Redis `PX` takes integers; a timer above 2^31 ms fires at once: refused here, not at the first call.
    idempotencyTtlMs: integerMs('idempotencyTtlMs').optional(),
    pendingTtlMs: integerMs('pendingTtlMs').optional(),
    pendingWaitMs: timerMs('pendingWaitMs').optional(),
    pollMs: timerMs('pollMs').optional(),
    maxPendingPerContext: integer('maxPendingPerContext', 1).optional(),
    maxEventsPerRun: integer('maxEventsPerRun', 1).optional(),
    now: fn('now').optional(),
  },
  { error: 'Expected redisStores options { prefix, … }.' },
);

/**
 * Checkpoint, idempotency and circuit-breaker stores on Redis. The connection stays yours to close.
 *
 * @example
 * ```ts
 * import Redis from 'ioredis';
 * import { redisStores } from 'chainkit/redis';
 * const redis = new Redis('redis://127.0.0.1:6379');
 * const runner = createRunner({
 *   invoker,
 *   secret: process.env.CHAINKIT_SECRET,
 *   stores: redisStores(redis, { prefix: 'myapp' }),
 * });
 * ```
 */
export function redisStores(redis: RedisClient, options: RedisStoresOptions): RedisStores {
  checkOptions('redisStores options', REDIS_STORES_OPTIONS, options);
  const p = options.prefix;
  const idemTtl = options.idempotencyTtlMs ?? 24 * 3_600_000;
  const pendingTtl = options.pendingTtlMs ?? 60_000;
  const pendingWait = options.pendingWaitMs ?? 30_000;
  const pollMs = options.pollMs ?? 50;
  const now = options.now ?? Date.now;

  const perContext = options.maxPendingPerContext ?? 100;
  // The same codec as the memory store: Dates and BigInts survive, what cannot be kept is refused before SAVE.
  const checkpoints: CheckpointStore = {
    async save(cp: Checkpoint) {
      const data = encodeCheckpoint(cp);
      const ttl = Math.max(1, Math.ceil(cp.expiresAt - now()));
      await redis.eval(
        SAVE,
        3,
        `${p}:cp:${cp.id}`,
        `${p}:cp-used:${cp.id}`,
        `${p}:cp-ctx:${cp.contextHash}`,
        data,
        String(ttl),
        cp.id,
        String(cp.createdAt),
        String(perContext),
        `${p}:cp:`,
      );
    },
    async peek(id): Promise<TakeResult> {
      const [v, used] = await Promise.all([redis.get(`${p}:cp:${id}`), redis.exists(`${p}:cp-used:${id}`)]);
      if (v !== null) return { status: 'taken', checkpoint: decodeCheckpoint(v) };
      return used ? { status: 'used' } : { status: 'missing' };
    },
    async take(id): Promise<TakeResult> {
      const v = (await redis.eval(TAKE, 2, `${p}:cp:${id}`, `${p}:cp-used:${id}`)) as string | null;
      if (v === null) return { status: 'missing' };
      if (v === 'USED') return { status: 'used' };
      return { status: 'taken', checkpoint: decodeCheckpoint(v) };
    },
  };

  const idempotency = redisIdempotencyStore(redis, {
    prefix: p,
    ttlMs: idemTtl,
    pendingTtlMs: pendingTtl,
    pendingWaitMs: pendingWait,
    pollMs,
    now,
  });

  const brKey = (tool: string): string => `${p}:breaker:${tool}`;
  const breakers: BreakerStore = {
    async acquire(tool, at, openMs): Promise<BreakerDecision> {
      const r = String(await redis.eval(ACQUIRE, 1, brKey(tool), String(at), String(openMs)));
      if (r === 'closed') return { status: 'closed' };
      if (r === 'probe') return { status: 'probe' };
      return { status: 'open', retryAfterMs: Number(r) };
    },
    async success(tool): Promise<BreakerChange> {
      return (await redis.eval(SUCCESS, 1, brKey(tool))) === 'closed' ? 'closed' : undefined;
    },
    async failure(tool, at, threshold, openMs): Promise<BreakerChange> {
      return (await redis.eval(FAILURE, 1, brKey(tool), String(at), String(threshold), String(openMs))) === 'opened'
        ? 'opened'
        : undefined;
    },
    async release(tool) {
      await redis.eval(RELEASE, 1, brKey(tool));
    },
    async isOpen(tool, at) {
      const [open, probing] = await redis.hmget(brKey(tool), 'openUntil', 'probing');
      const until = Number(open ?? 0);
      return until !== 0 && (at < until || probing === '1');
    },
  };

  return {
    checkpoints,
    idempotency,
    breakers,
    metrics: redisLearningStore(redis, { prefix: p }),
    limiter: redisLimiterStore(redis, { prefix: p, now }),
    runs: redisRunStore(redis, { prefix: p, idempotencyTtlMs: idemTtl, idempotency }),
  };
}
