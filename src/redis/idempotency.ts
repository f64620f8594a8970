// The idempotency store of chainkit/redis: one key per call (`<prefix>:idem:<key>`) holding a claim,
// a kept result, the failure of a write whose outcome is unknown or the mark of an undone one.
import type { RedisClient } from './client.js';
import { storeFailure } from '../stores/guard.js';
import { holdMs, unknownClaim, unknownOutcomeInfo, waitForDuplicate, type KeptOutcome } from '../stores/pending.js';
import { decodeKept } from '../stores/run-codec.js';
import { beginForRun, keptEntry, runMarker } from './kept.js';
import type { IdempotencyBeginOptions, IdempotencyClaim, IdempotencyStore } from '../stores/types.js';

// KEYS: idempotency key. ARGV: the kept result, its TTL. The late answer of a write whose outcome
// was unknown: kept unless the key holds a result or a call in flight ('u' entries start '{"s":"u"').
const COMPLETE_LATE = `
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, 8) ~= '{"s":"u"' then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`;

// KEYS: idempotency key. ARGV: the mark's TTL, the start of the kept result it replaces ('' for any: its
// stamp, '{"s":"d","t":<at>'). An undone call's mark in place of its kept result (or an earlier mark,
// renewed); a key absent or claimed, or holding a result kept at another time, stays as it is.
const MARK_UNDONE = `
local v = redis.call('GET', KEYS[1])
if not v or (string.sub(v, 1, 8) ~= '{"s":"d"' and v ~= '{"s":"x"}') then return 0 end
if ARGV[2] ~= '' and v ~= '{"s":"x"}' then
  local rest = string.sub(v, #ARGV[2] + 1, #ARGV[2] + 1)
  if string.sub(v, 1, #ARGV[2]) ~= ARGV[2] or (rest ~= ',' and rest ~= '}') then return 0 end
end
redis.call('SET', KEYS[1], '{"s":"x"}', 'PX', ARGV[1])
return 1`;

// KEYS: idempotency key. ARGV: the claim to end ('' for any claim not done; a durable run's exact marker,
// beginForRun), the unknown-outcome entry ('' to release), its TTL. A kept result (or the mark of an undone
// one) stays (the caller's claim lapsed and another call completed the write), and so does a successor's
// claim after a take-over. Values are compared, never decoded: a kept result may be large or nested
// deeper than cjson reads.
const FAIL = `
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
if ARGV[1] == '' then
  if string.sub(v, 1, 8) == '{"s":"d"' or v == '{"s":"x"}' then return 0 end
elseif v ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end
return 1`;

/** What `redisStores` passes on: its prefix, TTLs and wait (checked there). */
interface RedisIdempotencyOptions {
  prefix: string;
  ttlMs: number;
  pendingTtlMs: number;
  pendingWaitMs: number;
  pollMs: number;
  now: () => number;
}

/**
 * `redisStores(redis).idempotency`: claims with `SET NX` (a durable run's with its marker, in one
 * script), results in the run codec, waits for a call in flight elsewhere by polling its key.
 *
 * @example
 * ```ts
 * const idempotency = redisIdempotencyStore(redis, { prefix, ttlMs, pendingTtlMs, pendingWaitMs, pollMs, now });
 * ```
 */
export function redisIdempotencyStore(redis: RedisClient, options: RedisIdempotencyOptions): IdempotencyStore {
  const { prefix: p, ttlMs: idemTtl, pendingTtlMs: pendingTtl, pendingWaitMs: pendingWait, pollMs, now } = options;
  const idemKey = (key: string): string => `${p}:idem:${key}`;
  // The kept value inside is in the run codec (Dates and BigInts survive); markers and older entries are plain JSON.
  const parseEntry = (raw: string): Exclude<KeptOutcome, undefined> =>
    decodeKept(raw) as Exclude<KeptOutcome, undefined>;
  // Redis takes whole milliseconds: a tool's idempotencyTtlMs may be a fraction (DAY / 7).
  const px = (ms: number): number => Math.max(1, Math.ceil(ms));
  const wait = { now, waitMs: pendingWait, pollMs, pendingTtlMs: pendingTtl };
  const read = async (key: string): Promise<KeptOutcome> => {
    try {
      const raw = await redis.get(idemKey(key));
      return raw === null ? undefined : parseEntry(raw);
    } catch (error) {
      throw storeFailure('idempotency', error);
    }
  };
  const idempotency: IdempotencyStore = {
    async begin(key, run?: IdempotencyBeginOptions, holdUntil?: number): Promise<IdempotencyClaim> {
      let raw: string | null;
      const hold = px(holdMs(pendingTtl, holdUntil, now()));
      if (run) {
        // A durable run's call: its marker names the run and owner; a dead owner's claim may be taken over.
        raw = await beginForRun(redis, idemKey(key), hold, run);
        if (raw === null) return { status: 'new' };
      } else {
        const claimed = await redis.set(idemKey(key), '{"s":"p"}', 'PX', hold, 'NX');
        if (claimed === 'OK') return { status: 'new' };
        raw = await redis.get(idemKey(key));
        if (raw === null) return idempotency.begin(key, run, holdUntil); // released meanwhile: claim again
      }
      const entry = parseEntry(raw);
      if (entry.s === 'd')
        return entry.t === undefined
          ? { status: 'done', value: entry.v }
          : { status: 'done', value: entry.v, at: entry.t };
      if (entry.s === 'u') return unknownClaim(entry.e, pendingTtl);
      if (entry.s === 'x') return { status: 'undone' };
      return waitForDuplicate(key, () => read(key), wait);
    },
    async complete(key, value, ttlMs) {
      await redis.set(idemKey(key), keptEntry(value, now()), 'PX', px(ttlMs ?? idemTtl));
    },
    async markUndone(key, ttlMs, at) {
      const kept = at === undefined ? '' : `{"s":"d","t":${at}`;
      await redis.eval(MARK_UNDONE, 1, idemKey(key), String(px(ttlMs ?? idemTtl)), kept);
    },
    async fail(key, error, outcomeUnknown, run) {
      // The write may still take effect: the key stays claimed for pendingTtlMs, answering with its failure.
      const unknown = outcomeUnknown ? JSON.stringify({ s: 'u', e: unknownOutcomeInfo(error) }) : '';
      await redis.eval(FAIL, 1, idemKey(key), run ? runMarker(run) : '', unknown, String(pendingTtl));
    },
    async completeLate(key, value, ttlMs) {
      await redis.eval(COMPLETE_LATE, 1, idemKey(key), keptEntry(value, now()), String(px(ttlMs ?? idemTtl)));
    },
  };
  return idempotency;
}
