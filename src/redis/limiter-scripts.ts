// The two Lua scripts of the Redis rate limiter (cluster-limiter.ts): ACQUIRE takes a call's window
// slot and concurrency lease in one step, CANCEL gives back those of a call that gave up.
import { script } from './script.js';

/**
 * How long past its deadline a call's concurrency lease lasts. Leases lapse whether or not their process
 * died: that is how the slot of a process that died mid-call comes back.
 */
export const LEASE_GRACE_MS = 5_000;
/** A call with no deadline: how long after its slot its lease lasts (one running longer no longer counts). */
export const UNBOUNDED_LEASE_MS = 15 * 60_000;

/** The longest time the scripts write (~300 years in ms): a longer one would reach Redis with an exponent. */
const MAX_MS = 10_000_000_000_000;

// Both scripts take KEYS: the windows (hash: o, the first window's start on Redis's clock; k, the
// last window with slots taken; n, how many in it), the holes (zset: window slots given back before
// k, by window) and the leases (zset: calls holding a concurrency slot, by when they lapse).
// Windows are counted from the limiter's first use; a window before k is full but for its holes.
const CLOCK = `
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local s = redis.call('HMGET', KEYS[1], 'o', 'k', 'n')
local o, k, n = tonumber(s[1]), tonumber(s[2]), tonumber(s[3])`;

// ARGV: limit, intervalMs, maxConcurrent (-1: none), ms to the deadline (-1: none), whether the call may
// wait for a later window (1/0), its token, the lease's grace, the lease of a call with no deadline, and
// whether calls of its process wait for a concurrency slot ahead of it (1/0: it takes none past them).
// Returns {1, wait}: the slot comes after the deadline; {0}: every concurrency slot is held (or the
// call is behind others); {2}: it would wait but may not; {3, wait, window, origin}: the slot is the
// call's, `wait` ms from now (rounded up: never before its window). Before the last refusal, nothing is
// written but dropping holes of lost windows; no write can then fail (times are capped at ~300 years,
// so Lua never writes one with an exponent).
const ACQUIRE = `${CLOCK}
local limit, interval, maxc, left = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if not o then o, k, n = now, 0, 0; redis.call('DEL', KEYS[2]) end -- holes count from a lost origin
local w = math.floor((now - o) / interval)
if k < w then k, n = w, 0 end
local hole = redis.call('ZRANGEBYSCORE', KEYS[2], w, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
local j = hole[1] and tonumber(hole[2]) or (n < limit and k or k + 1)
local wait = j > w and math.ceil(o + j * interval - now) or 0
if wait > 0 and left >= 0 and wait >= left then return {1, wait} end
if maxc >= 0 and (ARGV[9] == '1' or redis.call('ZCOUNT', KEYS[3], '(' .. now, '+inf') >= maxc) then return {0} end
if wait > 0 and ARGV[5] ~= '1' then return {2} end
if hole[1] then redis.call('ZREM', KEYS[2], hole[1]) elseif j == k then n = n + 1 else k, n = j, 1 end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. w)
local ttl = math.min(math.ceil(o + (k + 2) * interval - now), ${MAX_MS})
redis.call('HSET', KEYS[1], 'o', o, 'k', k, 'n', n)
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
if maxc >= 0 then
  local hold = math.min(math.ceil((left >= 0 and left or wait + tonumber(ARGV[8])) + tonumber(ARGV[7])), ${MAX_MS})
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  redis.call('ZADD', KEYS[3], now + hold, ARGV[6])
  if redis.call('PTTL', KEYS[3]) < hold then redis.call('PEXPIRE', KEYS[3], hold) end
end
return {3, wait, j, o}`;

// ARGV: the token, window and origin of a call that gave up before its slot came, and intervalMs. Its
// lease goes; its window slot goes back, unless that window is over or no longer counted (the windows
// were lost, as after a flush, and counted afresh from another origin).
const CANCEL = `${CLOCK}
redis.call('ZREM', KEYS[3], ARGV[1])
local j = tonumber(ARGV[2])
if not o or o ~= tonumber(ARGV[4]) or j > k or j < math.floor((now - o) / tonumber(ARGV[3])) then return 0 end
if j == k then
  if n > 0 then redis.call('HSET', KEYS[1], 'n', n - 1) end
else
  redis.call('ZADD', KEYS[2], j, ARGV[1])
  redis.call('PEXPIRE', KEYS[2], redis.call('PTTL', KEYS[1]))
end
return 1`;

/** Takes a call's window slot (and concurrency lease), or refuses: see ACQUIRE. */
export const acquireScript = script(ACQUIRE);
/** Gives back the slot and lease of a call that gave up: see CANCEL. */
export const cancelScript = script(CANCEL);

/** What ACQUIRE answers. */
export type Reply = [0] | [1, number] | [2] | [3, number, number, number];
