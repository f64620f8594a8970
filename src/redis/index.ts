// chainkit/redis: shared stores on Redis, so any instance can resume a token, see a kept result
// or a breaker another instance opened. Every read-modify-write is one Lua script: atomic.
import Bottleneck from 'bottleneck';
import type { Redis } from 'ioredis';
import type { RateLimitSpec } from '../define/tool.js';
import { ToolFailure } from '../errors/classify.js';
import { abortAtDeadline } from '../run/abort.js';
import type { Limiter, LimiterStore, Release } from '../policies/rate-limit.js';
import type { ToolTransition } from '../observe/trace.js';
import type {
  BreakerChange, BreakerDecision, BreakerStore, Checkpoint, CheckpointStore, IdempotencyClaim, IdempotencyStore, LearnedData, LearningStore, TakeResult, TimingSample,
} from '../stores/types.js';

/** Options of {@link redisStores}. */
export interface RedisStoresOptions {
  /** Namespace of every key, e.g. `myapp:chainkit`. Two apps on one Redis need different prefixes. */
  prefix: string;
  /** How long kept results live. Default 24 h. */
  idempotencyTtlMs?: number;
  /** How long an in-flight marker lives if its process dies mid-call. Default 60 s. */
  pendingTtlMs?: number;
  /** How long a duplicate waits for the call in flight elsewhere before failing with `conflict`. Default 30 s. */
  pendingWaitMs?: number;
  /** Poll interval while waiting. Default 50 ms. */
  pollMs?: number;
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
  /** Rate limits shared by every process (bottleneck's Redis clustering). */
  limiter: LimiterStore;
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

// KEYS: checkpoint, tombstone. ARGV: json, ttl. Saving (or putting back) clears the tombstone.
const SAVE = `
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('DEL', KEYS[2])
return 1`;

// KEYS: breaker hash. ARGV: now. Returns 'closed', 'probe', or the ms until it may be probed.
const ACQUIRE = `
local open = tonumber(redis.call('HGET', KEYS[1], 'openUntil') or '0')
if open == 0 then return 'closed' end
local now = tonumber(ARGV[1])
if now < open then return tostring(open - now) end
if redis.call('HGET', KEYS[1], 'probing') == '1' then return '1000' end
redis.call('HSET', KEYS[1], 'probing', '1')
return 'probe'`;

// KEYS: breaker hash. Returns 'closed' if it was open.
const SUCCESS = `
local open = tonumber(redis.call('HGET', KEYS[1], 'openUntil') or '0')
redis.call('DEL', KEYS[1])
if open ~= 0 then return 'closed' end
return ''`;

// KEYS: breaker hash. ARGV: now, threshold, openMs. Returns 'opened' when it opens.
const FAILURE = `
local failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
local open = tonumber(redis.call('HGET', KEYS[1], 'openUntil') or '0')
local probing = redis.call('HGET', KEYS[1], 'probing') == '1'
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) * 10)
if probing or (open == 0 and failures >= tonumber(ARGV[2])) then
  redis.call('HSET', KEYS[1], 'openUntil', tonumber(ARGV[1]) + tonumber(ARGV[3]), 'probing', '0')
  return 'opened'
end
return ''`;

/**
 * Checkpoint, idempotency and circuit-breaker stores on Redis. The connection stays yours to close.
 *
 * @example
 * ```ts
 * import Redis from 'ioredis';
 * import { redisStores } from 'chainkit/redis';
 * const redis = new Redis('redis://127.0.0.1:6379');
 * const runner = createRunner({ invoker, secret: process.env.CHAINKIT_SECRET, stores: redisStores(redis, { prefix: 'myapp' }) });
 * ```
 */
export function redisStores(redis: Redis, options: RedisStoresOptions): RedisStores {
  if (typeof options?.prefix !== 'string' || options.prefix === '') throw new TypeError('Expected a non-empty `prefix`.');
  const p = options.prefix;
  const idemTtl = options.idempotencyTtlMs ?? 24 * 3_600_000;
  const pendingTtl = options.pendingTtlMs ?? 60_000;
  const pendingWait = options.pendingWaitMs ?? 30_000;
  const pollMs = options.pollMs ?? 50;
  const now = options.now ?? Date.now;

  const checkpoints: CheckpointStore = {
    async save(cp: Checkpoint) {
      const ttl = Math.max(1, cp.expiresAt - now());
      await redis.eval(SAVE, 2, `${p}:cp:${cp.id}`, `${p}:cp-used:${cp.id}`, JSON.stringify(cp), String(ttl));
    },
    async peek(id): Promise<TakeResult> {
      const [v, used] = await Promise.all([redis.get(`${p}:cp:${id}`), redis.exists(`${p}:cp-used:${id}`)]);
      if (v !== null) return { status: 'taken', checkpoint: JSON.parse(v) as Checkpoint };
      return used ? { status: 'used' } : { status: 'missing' };
    },
    async take(id): Promise<TakeResult> {
      const v = (await redis.eval(TAKE, 2, `${p}:cp:${id}`, `${p}:cp-used:${id}`)) as string | null;
      if (v === null) return { status: 'missing' };
      if (v === 'USED') return { status: 'used' };
      return { status: 'taken', checkpoint: JSON.parse(v) as Checkpoint };
    },
  };

  const idemKey = (key: string): string => `${p}:idem:${key}`;
  /** Waits for a call in flight in another process: its result, its failure (key gone), or `conflict`. */
  const waitFor = async (key: string): Promise<unknown> => {
    const until = now() + pendingWait;
    while (now() < until) {
      await new Promise((r) => setTimeout(r, pollMs));
      const raw = await redis.get(idemKey(key));
      if (raw === null) throw Object.assign(new Error(`The duplicate call with idempotency key ${key} failed elsewhere; nothing was kept.`), { status: 409 });
      const entry = JSON.parse(raw) as { s: 'p' | 'd'; v?: unknown };
      if (entry.s === 'd') return entry.v;
    }
    throw Object.assign(new Error(`A call with idempotency key ${key} is still in flight elsewhere after ${pendingWait} ms.`), { status: 409 });
  };
  const idempotency: IdempotencyStore = {
    async begin(key): Promise<IdempotencyClaim> {
      const claimed = await redis.set(idemKey(key), '{"s":"p"}', 'PX', pendingTtl, 'NX');
      if (claimed === 'OK') return { status: 'new' };
      const raw = await redis.get(idemKey(key));
      if (raw === null) return idempotency.begin(key); // released meanwhile: claim again
      const entry = JSON.parse(raw) as { s: 'p' | 'd'; v?: unknown };
      if (entry.s === 'd') return { status: 'done', value: entry.v };
      return { status: 'pending', settled: waitFor(key) };
    },
    async complete(key, value) {
      await redis.set(idemKey(key), JSON.stringify({ s: 'd', v: value }), 'PX', idemTtl);
    },
    async fail(key) {
      await redis.del(idemKey(key));
    },
  };

  const brKey = (tool: string): string => `${p}:breaker:${tool}`;
  const breakers: BreakerStore = {
    async acquire(tool, at): Promise<BreakerDecision> {
      const r = String(await redis.eval(ACQUIRE, 1, brKey(tool), String(at)));
      if (r === 'closed') return { status: 'closed' };
      if (r === 'probe') return { status: 'probe' };
      return { status: 'open', retryAfterMs: Number(r) };
    },
    async success(tool): Promise<BreakerChange> {
      return (await redis.eval(SUCCESS, 1, brKey(tool))) === 'closed' ? 'closed' : undefined;
    },
    async failure(tool, at, threshold, openMs): Promise<BreakerChange> {
      return (await redis.eval(FAILURE, 1, brKey(tool), String(at), String(threshold), String(openMs))) === 'opened' ? 'opened' : undefined;
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
  };
}

/** Options of {@link redisLearningStore}. */
export interface RedisLearningOptions {
  prefix: string;
  /** Transitions kept. Default 10 000. */
  maxTransitions?: number;
  /** Timing samples kept (all tools together). Default 20 000. */
  maxSamples?: number;
}

/**
 * What runners learn, in two capped Redis lists: a new process loads it, every process adds to it.
 *
 * @example
 * ```ts
 * const runner = createRunner({ invoker, stores: { metrics: redisLearningStore(redis, { prefix: 'myapp' }) } });
 * await runner.ready; // estimates and suggestions now include what other instances learned
 * ```
 */
export function redisLearningStore(redis: Redis, options: RedisLearningOptions): LearningStore {
  const transitionsKey = `${options.prefix}:learn:transitions`;
  const samplesKey = `${options.prefix}:learn:samples`;
  const maxT = options.maxTransitions ?? 10_000;
  const maxS = options.maxSamples ?? 20_000;
  return {
    async load(): Promise<LearnedData> {
      const [t, s] = await Promise.all([redis.lrange(transitionsKey, 0, -1), redis.lrange(samplesKey, 0, -1)]);
      return { transitions: t.map((x) => JSON.parse(x) as ToolTransition), samples: s.map((x) => JSON.parse(x) as TimingSample) };
    },
    async append(batch) {
      const tx = redis.multi();
      if (batch.transitions.length) tx.rpush(transitionsKey, ...batch.transitions.map((t) => JSON.stringify(t))).ltrim(transitionsKey, -maxT, -1);
      if (batch.samples.length) tx.rpush(samplesKey, ...batch.samples.map((s) => JSON.stringify(s))).ltrim(samplesKey, -maxS, -1);
      await tx.exec();
    },
  };
}

/** Options of {@link redisLimiterStore}. */
export interface RedisLimiterOptions {
  /** Namespace of the limiter ids (and so of bottleneck's keys). */
  prefix: string;
  /** Clock. Default `Date.now`. */
  now?: () => number;
}

/**
 * Rate limits shared by every process on the same Redis, through bottleneck's Redis clustering:
 * the same windows, concurrency and queue for all. Limiter ids derive from `prefix`. It works on
 * its own duplicate of `redis` (bottleneck needs a subscriber too), closed by `runner.close()`.
 *
 * @example
 * ```ts
 * const runner = createRunner({ invoker, tools, stores: { ...redisStores(redis, { prefix: 'myapp' }), limiter: redisLimiterStore(redis, { prefix: 'myapp' }) } });
 * ```
 */
export function redisLimiterStore(redis: Redis, options: RedisLimiterOptions): LimiterStore {
  if (typeof options?.prefix !== 'string' || options.prefix === '') throw new TypeError('Expected a non-empty `prefix`.');
  const now = options.now ?? Date.now;
  // Opened on first use. Eager: bottleneck waits for 'ready', which a lazyConnect client (the option is copied) never emits.
  let conn: Bottleneck.IORedisConnection | undefined;
  const connection = (): Bottleneck.IORedisConnection => {
    if (!conn) {
      conn = new Bottleneck.IORedisConnection({ client: redis.duplicate({ lazyConnect: false }) });
      conn.on('error', () => {}); // surfaced per call as store_unavailable
      // bottleneck unsubscribes a dropped limiter from an async callback nobody awaits: while its subscriber is
      // reconnecting that rejects unhandled (and would end the process). A stale subscription is harmless.
      const subscriber = (conn as unknown as { subscriber: Redis }).subscriber;
      const unsubscribe = subscriber.unsubscribe.bind(subscriber) as (...channels: string[]) => Promise<unknown>;
      subscriber.unsubscribe = ((...channels: string[]) => unsubscribe(...channels).catch(() => 0)) as Redis['unsubscribe'];
    }
    return conn;
  };
  const limiters = new Map<string, Bottleneck | Bottleneck.Group>();

  const settings = (id: string, spec: RateLimitSpec): Bottleneck.ConstructorOptions => ({
    id: `${options.prefix}:${id}`,
    datastore: 'ioredis',
    connection: connection(),
    clearDatastore: false, // join the windows other processes already share
    reservoir: spec.limit,
    reservoirRefreshAmount: spec.limit,
    reservoirRefreshInterval: spec.intervalMs,
    maxConcurrent: spec.maxConcurrent ?? null,
    highWater: spec.maxQueue ?? null,
    strategy: Bottleneck.strategy.OVERFLOW,
    // Queued jobs are retried on the heartbeat (5 s by default on Redis): beat a few times per window.
    heartbeatInterval: Math.max(50, Math.min(1000, Math.floor(spec.intervalMs / 4))),
  });

  const drop = (base: string): void => {
    const entry = limiters.get(base);
    limiters.delete(base);
    const all = entry instanceof Bottleneck ? [entry] : entry ? entry.limiters().map((l) => l.limiter) : [];
    for (const l of all) void Promise.resolve().then(() => l.disconnect(false)).catch(() => undefined); // shared connection: only detaches
  };

  return {
    limiter(id, spec, user) {
      // Per-user limits: one Bottleneck.Group per tool, keyed by user.
      const current = (): Bottleneck => {
        let entry = limiters.get(id);
        if (!entry) {
          entry = user === undefined ? new Bottleneck(settings(id, spec)) : new Bottleneck.Group({ ...settings(id, spec), timeout: Math.max(2 * spec.intervalMs, 60_000) });
          limiters.set(id, entry);
        }
        return entry instanceof Bottleneck ? entry : entry.key(user!);
      };
      return bottleneckLimiter(current, () => drop(id), now);
    },
    async close() {
      for (const base of [...limiters.keys()]) drop(base);
      await conn?.disconnect(false);
      conn = undefined;
    },
  };
}

// Redis 7 prefixes script errors with "ERR ", which bottleneck 2's own recovery does not expect.
const LOST_STATE = /SETTINGS_KEY_NOT_FOUND|UNKNOWN_CLIENT/;

/**
 * A Limiter on a bottleneck limiter: the slot is a job held open until the attempt ends. If Redis
 * lost the limiter's state (a restart), the limiter is recreated and the call tried once more.
 */
function bottleneckLimiter(current: () => Bottleneck, reset: () => void, now: () => number): Limiter {
  return {
    acquire(scope, deadlineAt) {
      return new Promise<Release>((resolve, reject) => {
        let release: Release = () => {};
        const held = new Promise<void>((r) => { release = r; });
        const cancelDeadline = abortAtDeadline(scope, deadlineAt, now, 'The deadline passed while waiting for a rate-limit slot.');
        const off = scope.onAbort((reason) => reject(reason));
        const attempt = (first: boolean): void => void current().schedule(() => {
          cancelDeadline();
          off();
          if (scope.aborted) return Promise.resolve(); // nobody wants the slot any more: give it back
          resolve(release);
          return held;
        }).catch((error: unknown) => {
          if (first && error instanceof Error && LOST_STATE.test(error.message)) {
            reset();
            return attempt(false);
          }
          cancelDeadline();
          off();
          reject(error instanceof Bottleneck.BottleneckError && /dropped/i.test(error.message)
            ? new ToolFailure({ category: 'queue_full', code: 'queue_full', message: 'Too many calls are waiting for this tool; the call was not queued.' })
            : new ToolFailure({ category: 'unavailable', code: 'store_unavailable', message: `The rate-limit store is unavailable: ${error instanceof Error ? error.message : String(error)}` }));
        });
        attempt(true);
      });
    },
  };
}
