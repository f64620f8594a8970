// The idempotency entries of chainkit/redis that durable runs write too: a kept result in the run
// codec, and the pending marker of a run's call (claimed in one script, taken over by a recovered run).
import type { RedisClient } from './client.js';
import { begin } from './run-script-calls.js';
import { encodeKept } from '../stores/run-codec.js';
import type { IdempotencyBeginOptions } from '../stores/types.js';

/**
 * The idempotency store's entry of a kept result: `{ s: 'd', t, v }`, kept at `t` (epoch ms: a `done`
 * claim's `at`), the value in the run codec (a cached answer keeps the Dates and BigInts of the first).
 * Throws `CheckpointEncodeError` for what no store can keep.
 *
 * @example
 * ```ts
 * await redis.set(key, keptEntry(value, Date.now()), 'PX', ttlMs);
 * ```
 */
export function keptEntry(value: unknown, at: number): string {
  const text = encodeKept(value);
  return text === null ? `{"s":"d","t":${at}}` : `{"s":"d","t":${at},"v":${text}}`;
}

/** {@link keptEntry}, or `undefined` for a value no store can keep (not kept, as by its own `complete`). */
export function keepable(value: unknown, at: number): string | undefined {
  try {
    return keptEntry(value, at);
  } catch {
    return undefined;
  }
}

/** The pending marker of a durable run's call: names the run and the owner that claimed the key. */
export const runMarker = (run: IdempotencyBeginOptions): string =>
  JSON.stringify({ s: 'p', r: run.runId, o: run.owner });

/**
 * Claims an idempotency key for a durable run's call (see {@link IdempotencyBeginOptions}): `null`
 * when claimed (or taken over), else the raw entry. Used by `redisStores().idempotency.begin`.
 *
 * @example
 * ```ts
 * const raw = await beginForRun(redis, `${prefix}:idem:${key}`, 60_000, { runId, owner, takeOver: true });
 * ```
 */
export async function beginForRun(
  redis: RedisClient,
  key: string,
  pendingTtlMs: number,
  options: IdempotencyBeginOptions,
): Promise<string | null> {
  return (await begin(
    redis,
    [key],
    [runMarker(options), pendingTtlMs, options.runId, options.owner, options.takeOver ? '1' : '0'],
  )) as string | null;
}
