// Durable runs on Redis: one hash per run (the record as created, then its status, owner, lease,
// deadline, approved gate and result), one list for its journal, and one sorted set of the runs in
// flight scored by lease end, so expired leases are found without a scan. Every claim and finish is
// one Lua script: atomic, one round trip.
import { createHash } from 'node:crypto';
import type { RedisClient } from './client.js';
import { redisEventLog } from './run-events.js';
import { storeFailure, StoreFailure } from '../stores/guard.js';
import { encodeRunValue, storedRun } from '../stores/run-codec.js';
import { summarize } from '../stores/run-list.js';
import type { IdempotencyBeginOptions } from '../stores/types.js';
import type { RunStore } from '../stores/run-store.js';
import type { IdempotencyStore } from '../stores/types.js';
import type { CreateRunResult, RunStatus, StoredRun } from '../stores/run-store.js';

/** Options of {@link redisRunStore}. */
export interface RedisRunStoreOptions {
  /** Namespace of every key: the same as `redisStores`' so `journal(…, complete)` writes where its idempotency store reads. */
  prefix: string;
  /** How long a result kept by `journal(…, complete)` lives when the call gives no TTL. Default 24 h. */
  idempotencyTtlMs?: number;
  /** The idempotency store on the same prefix (`redisStores` passes its own): advertised as `runs.idempotency`. */
  idempotency?: IdempotencyStore;
  /** Events kept per run for `runner.watch` (its stream is trimmed to the newest). Default 10 000. */
  maxEventsPerRun?: number;
}

// The listing indexes (runner.listRuns): per status, and per status and chain, sorted sets of run ids
// scored by start time, moved in the same script as the status. A member whose run expired or moved
// on is dropped when a listing meets it, and each finish prunes a few of the oldest: never a scan.
const INDEX = `
local function idx(prefix, status, chain) return prefix .. 'st:' .. status, prefix .. 'sc:' .. status .. ':' .. chain end
local function index_move(prefix, id, chain, started, from, to, keepMs)
  if from then
    local a, b = idx(prefix, from, chain)
    redis.call('ZREM', a, id)
    redis.call('ZREM', b, id)
  end
  local a, b = idx(prefix, to, chain)
  redis.call('ZADD', a, started, id)
  redis.call('ZADD', b, started, id)
  if keepMs then
    for _, k in ipairs({a, b}) do
      for _, old in ipairs(redis.call('ZRANGE', k, 0, 3)) do
        if redis.call('HGET', ARGV_RUN .. old, 'status') ~= to then redis.call('ZREM', k, old) end
      end
      if redis.call('PTTL', k) < tonumber(keepMs) then redis.call('PEXPIRE', k, keepMs) end
    end
  end
end
`;

// KEYS: run hash, journal, live set. ARGV: record, owner, leaseUntil, deadlineAt, now, runId, chain, fingerprint, context hash, startedAt, index prefix, run key prefix.
// Records a new run, or reports the existing one (taken over when its lease ended before now). A run
// id bound to another chain or context is 'mismatch', untouched; one in flight under another fingerprint is not taken over.
const CREATE = `local ARGV_RUN = ARGV[12]
${INDEX}
local st = redis.call('HGET', KEYS[1], 'status')
if not st then
  redis.call('DEL', KEYS[2])
  redis.call('HSET', KEYS[1], 'd', ARGV[1], 'status', 'running', 'owner', ARGV[2], 'lease', ARGV[3], 'deadline', ARGV[4], 'chain', ARGV[7], 'fp', ARGV[8], 'ctx', ARGV[9], 'started', ARGV[10])
  redis.call('ZADD', KEYS[3], ARGV[3], ARGV[6])
  index_move(ARGV[11], ARGV[6], ARGV[7], ARGV[10], nil, 'running', nil)
  return 'created'
end
local b = redis.call('HMGET', KEYS[1], 'chain', 'ctx', 'fp')
if (b[1] and b[1] ~= ARGV[7]) or (b[2] and b[2] ~= '' and ARGV[9] ~= '' and b[2] ~= ARGV[9]) then return 'mismatch' end
local kind = 'ended'
if st == 'running' then
  kind = 'busy'
  if tonumber(redis.call('HGET', KEYS[1], 'lease')) < tonumber(ARGV[5]) and (not b[3] or b[3] == ARGV[8]) then
    redis.call('HSET', KEYS[1], 'owner', ARGV[2], 'lease', ARGV[3])
    redis.call('ZADD', KEYS[3], ARGV[3], ARGV[6])
    kind = 'taken'
  end
end
return {kind, redis.call('HGETALL', KEYS[1]), redis.call('LRANGE', KEYS[2], 0, -1)}`;

// KEYS: run hash, journal[, idempotency key]. ARGV: owner, entry[, kept result, its ttl].
// The result is kept even when the owner lost the run: the call happened, a re-run must find it done.
const JOURNAL = `
if KEYS[3] then redis.call('SET', KEYS[3], ARGV[3], 'PX', ARGV[4]) end
local f = redis.call('HMGET', KEYS[1], 'owner', 'status')
if f[1] ~= ARGV[1] or f[2] ~= 'running' then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[2])
return 1`;

// KEYS: live set. ARGV: owner, leaseUntil, run key prefix, run ids… Renews only the owner's runs in flight; returns their ids.
const RENEW = `
local out = {}
for i = 4, #ARGV do
  local k = ARGV[3] .. ARGV[i]
  local f = redis.call('HMGET', k, 'owner', 'status')
  if f[1] == ARGV[1] and f[2] == 'running' then
    redis.call('HSET', k, 'lease', ARGV[2])
    redis.call('ZADD', KEYS[1], ARGV[2], ARGV[i])
    out[#out + 1] = ARGV[i]
  end
end
return out`;

// KEYS: run hash, journal, live set. ARGV: owner, status, result, retentionMs (0: kept until deleted), runId, now, index prefix, run key prefix, journal entries….
const FINISH = `local ARGV_RUN = ARGV[8]
${INDEX}
local f = redis.call('HMGET', KEYS[1], 'owner', 'status', 'chain', 'started')
if f[1] ~= ARGV[1] or f[2] ~= 'running' then return 0 end
for i = 9, #ARGV do redis.call('RPUSH', KEYS[2], ARGV[i]) end
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'result', ARGV[3], 'lease', '0', 'ended', ARGV[6])
redis.call('ZREM', KEYS[3], ARGV[5])
local keep = nil
if ARGV[4] ~= '0' then
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
  keep = ARGV[4]
end
if f[3] then index_move(ARGV[7], ARGV[5], f[3], f[4] or '0', 'running', ARGV[2], keep) end
return 1`;

// KEYS: run hash, journal, live set. ARGV: owner, leaseUntil, approved gate, deadlineAt, runId, index prefix, run key prefix.
const REOPEN = `local ARGV_RUN = ARGV[7]
${INDEX}
if redis.call('HGET', KEYS[1], 'status') ~= 'awaiting_confirmation' then return 0 end
redis.call('HSET', KEYS[1], 'status', 'running', 'owner', ARGV[1], 'lease', ARGV[2], 'gate', ARGV[3], 'deadline', ARGV[4])
redis.call('HDEL', KEYS[1], 'result', 'ended')
local f = redis.call('HMGET', KEYS[1], 'chain', 'started')
if f[1] then index_move(ARGV[6], ARGV[5], f[1], f[2] or '0', 'awaiting_confirmation', 'running', nil) end
redis.call('PERSIST', KEYS[1])
redis.call('PERSIST', KEYS[2])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[5])
return 1`;

// KEYS: live set. ARGV: owner, now, leaseUntil, limit, run key prefix, journal key prefix, orphanedBefore
// ('' for none), '1' to filter, then chain and fingerprint pairs. Members whose run ended or vanished
// leave the set; a lagging score is corrected. With a filter, runs of other chains or fingerprints
// (not orphaned) are passed over untouched; the scan goes on past them, at most 20 pages.
const CLAIM = `
local allowed = {}
for i = 9, #ARGV, 2 do allowed[ARGV[i] .. '|' .. ARGV[i + 1]] = true end
local limit = tonumber(ARGV[4])
local orphan = tonumber(ARGV[7])
local out = {}
local offset = 0
for page = 1, 20 do
  local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[2], 'LIMIT', offset, limit)
  if #ids == 0 then break end
  for _, id in ipairs(ids) do
    local k = ARGV[5] .. id
    local f = redis.call('HMGET', k, 'status', 'lease', 'chain', 'fp', 'deadline')
    if f[1] ~= 'running' then
      redis.call('ZREM', KEYS[1], id)
    elseif tonumber(f[2]) >= tonumber(ARGV[2]) then
      redis.call('ZADD', KEYS[1], f[2], id)
    elseif ARGV[8] == '1' and f[3] and not allowed[f[3] .. '|' .. (f[4] or '')] and not (orphan and tonumber(f[5]) < orphan) then
      offset = offset + 1
    else
      redis.call('HSET', k, 'owner', ARGV[1], 'lease', ARGV[3])
      redis.call('ZADD', KEYS[1], ARGV[3], id)
      out[#out + 1] = {redis.call('HGETALL', k), redis.call('LRANGE', ARGV[6] .. id, 0, -1)}
      if #out >= limit then return out end
    end
  end
  if #ids < limit then break end
end
return out`;

// ARGV: run key prefix, journal key prefix, since, until, limit, cursor score ('' for none), cursor
// id, chain ('' for any), then index key and status pairs. From each index, up to limit + 1 runs
// after the cursor (members whose run expired or changed status leave the index), merged newest
// first; the first `limit` come back with their state and journal, and whether more matched.
const LIST = `
local since, upper, limit = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local ascore, aid = tonumber(ARGV[6]), ARGV[7]
local cands = {}
local function valid(key, id, status)
  local f = redis.call('HMGET', ARGV[1] .. id, 'status', 'chain')
  if f[1] ~= status then redis.call('ZREM', key, id) return false end
  return ARGV[8] == '' or f[2] == ARGV[8]
end
for i = 9, #ARGV, 2 do
  local key, status = ARGV[i], ARGV[i + 1]
  local got = 0
  local max = upper
  if ascore and ascore < upper then
    if ascore >= tonumber(since) then
      for _, id in ipairs(redis.call('ZREVRANGEBYSCORE', key, ascore, ascore)) do
        if id < aid and got <= limit and valid(key, id, status) then
          cands[#cands + 1] = {ascore, id}
          got = got + 1
        end
      end
    end
    max = ascore
  end
  local offset = 0
  for page = 1, 20 do
    if got > limit then break end
    local rows = redis.call('ZREVRANGEBYSCORE', key, '(' .. max, since, 'WITHSCORES', 'LIMIT', offset, limit + 1)
    if #rows == 0 then break end
    for j = 1, #rows, 2 do
      if got > limit then break end
      if valid(key, rows[j], status) then
        cands[#cands + 1] = {tonumber(rows[j + 1]), rows[j]}
        got = got + 1
      end
      offset = offset + 1
    end
    if #rows < 2 * (limit + 1) then break end
  end
end
table.sort(cands, function(a, b) if a[1] ~= b[1] then return a[1] > b[1] end return a[2] > b[2] end)
local out = {}
for i = 1, math.min(limit, #cands) do
  local id = cands[i][2]
  out[i] = {id, redis.call('HMGET', ARGV[1] .. id, 'chain', 'status', 'started', 'ended', 'result'), redis.call('LRANGE', ARGV[2] .. id, 0, -1)}
end
return {out, #cands > limit and 1 or 0}`;

// KEYS: run hash, journal.
const GET = `return {redis.call('HGETALL', KEYS[1]), redis.call('LRANGE', KEYS[2], 0, -1)}`;

// KEYS: idempotency key. ARGV: pending marker, pendingTtlMs, runId, owner, '1' to take over.
// Claims the key (nil) or returns its entry. A pending marker of the same run written by another
// owner is taken over when asked: that owner lost the run (docs/guides/durable-runs.md), nobody will finish its call.
const BEGIN = `
local v = redis.call('GET', KEYS[1])
if v then
  if ARGV[5] ~= '1' or string.sub(v, 1, 8) ~= '{"s":"p"' then return v end
  local e = cjson.decode(v)
  if e.r ~= ARGV[3] or e.o == ARGV[4] then return v end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false`;

type Script = (redis: RedisClient, keys: readonly string[], args: readonly (string | number)[]) => Promise<unknown>;

/** Runs a script by its SHA (loading it once per server on NOSCRIPT): the body is not resent each call. */
function script(lua: string): Script {
  const sha = createHash('sha1').update(lua).digest('hex');
  return async (redis, keys, args) => {
    try {
      return await redis.evalsha(sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error;
      return redis.eval(lua, keys.length, ...keys, ...args);
    }
  };
}

const create = script(CREATE);
const journal = script(JOURNAL);
const renew = script(RENEW);
const finish = script(FINISH);
const reopen = script(REOPEN);
const claim = script(CLAIM);
const get = script(GET);
const list = script(LIST);
const begin = script(BEGIN);

/** The idempotency store's encoding of a kept result; `undefined` when JSON cannot hold it (not kept, as by its own `complete`). */
function keepable(value: unknown): string | undefined {
  try {
    return JSON.stringify({ s: 'd', v: value });
  } catch {
    return undefined;
  }
}

/** A stored run from a run hash (HGETALL, flat) and its journal. */
function fromHash(flat: readonly string[], entries: readonly string[]): StoredRun {
  const h = new Map<string, string>();
  for (let i = 0; i + 1 < flat.length; i += 2) h.set(flat[i]!, flat[i + 1]!);
  return storedRun(h.get('d')!, {
    status: h.get('status') as RunStatus, owner: h.get('owner') ?? '', leaseUntil: Number(h.get('lease')), deadlineAt: Number(h.get('deadline')),
    approvedGate: h.get('gate'), result: h.get('result'),
  }, entries);
}

/**
 * Claims an idempotency key for a durable run's call (see {@link IdempotencyBeginOptions}): `null`
 * when claimed (or taken over), else the raw entry. Used by `redisStores().idempotency.begin`.
 *
 * @example
 * ```ts
 * const raw = await beginForRun(redis, `${prefix}:idem:${key}`, 60_000, { runId, owner, takeOver: true });
 * ```
 */
export async function beginForRun(redis: RedisClient, key: string, pendingTtlMs: number, options: IdempotencyBeginOptions): Promise<string | null> {
  const marker = JSON.stringify({ s: 'p', r: options.runId, o: options.owner });
  return (await begin(redis, [key], [marker, pendingTtlMs, options.runId, options.owner, options.takeOver ? '1' : '0'])) as string | null;
}

/**
 * A run store on Redis (normally used as `redisStores(redis, { prefix }).runs`). Runs are as durable
 * as the Redis holding them: use AOF persistence (`appendonly yes`, `appendfsync everysec` or
 * `always`) and no eviction (`maxmemory-policy noeviction`) for runs that must survive a Redis restart.
 * Keys: `<prefix>:run:<id>` (hash), `<prefix>:run-j:<id>` (journal list), `<prefix>:runs:live`
 * (sorted set of runs in flight). Single-node Redis, like every chainkit script.
 *
 * @example
 * ```ts
 * import Redis from 'ioredis';
 * import { redisRunStore } from 'chainkit/redis';
 * const runs = redisRunStore(new Redis(), { prefix: 'myapp' });
 * ```
 */
export function redisRunStore(redis: RedisClient, options: RedisRunStoreOptions): RunStore {
  if (typeof options?.prefix !== 'string' || options.prefix === '') throw new TypeError('Expected a non-empty `prefix`.');
  const p = options.prefix;
  const idemTtl = options.idempotencyTtlMs ?? 24 * 3_600_000;
  if (!(Number.isSafeInteger(idemTtl) && idemTtl > 0)) throw new TypeError('Expected `idempotencyTtlMs` to be a positive integer number of ms.');
  const live = `${p}:runs:live`;
  const idx = `${p}:runs:`;
  const runKey = (id: string): string => `${p}:run:${id}`;
  const journalKey = (id: string): string => `${p}:run-j:${id}`;
  // Every Redis failure is the store's; a value the codec refuses (a StoreFailure already) passes through.
  const guard = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (error) {
      throw error instanceof StoreFailure ? error : storeFailure(`run (${what})`, error);
    }
  };

  const events = redisEventLog(redis, { prefix: p, ...(options.maxEventsPerRun !== undefined && { maxEventsPerRun: options.maxEventsPerRun }) });

  return {
    ...(options.idempotency && { idempotency: options.idempotency }),
    events,
    close: () => events.close(),
    create: (record, now) => guard('create', async (): Promise<CreateRunResult> => {
      const data = encodeRunValue(record);
      const r = (await create(redis, [runKey(record.runId), journalKey(record.runId), live], [data, record.owner, record.leaseUntil, record.deadlineAt, now, record.runId, record.chain, record.fingerprint, record.contextHash ?? '', record.startedAt, idx, `${p}:run:`])) as 'created' | 'mismatch' | [string, string[], string[]];
      if (r === 'created' || r === 'mismatch') return { status: r };
      const [kind, hash, entries] = r;
      return { status: kind as 'ended' | 'busy' | 'taken', run: fromHash(hash, entries) };
    }),
    journal: (runId, owner, entry, complete) => guard('journal', async () => {
      const data = encodeRunValue(entry);
      const keys = [runKey(runId), journalKey(runId)];
      const args: (string | number)[] = [owner, data];
      const kept = complete && keepable(complete.value);
      if (kept !== undefined) {
        // The idempotency store's own key and encoding: it reads this as a kept result.
        keys.push(`${p}:idem:${complete!.key}`);
        args.push(kept, complete!.ttlMs ?? idemTtl);
      }
      return (await journal(redis, keys, args)) === 1;
    }),
    renew: (owner, runIds, leaseUntil) => guard('renew', async () =>
      runIds.length > 0 ? ((await renew(redis, [live], [owner, leaseUntil, `${p}:run:`, ...runIds])) as string[]) : []),
    finish: (runId, owner, status, result, retentionMs, entries = []) => guard('finish', async () => {
      const data = encodeRunValue(result);
      const journaled = entries.map((e) => encodeRunValue(e));
      const ms = Number.isFinite(retentionMs) ? Math.max(1, Math.ceil(retentionMs)) : 0;
      return (await finish(redis, [runKey(runId), journalKey(runId), live], [owner, status, data, ms, runId, Date.now(), idx, `${p}:run:`, ...journaled])) === 1;
    }),
    reopen: (runId, owner, update) => guard('reopen', async () =>
      (await reopen(redis, [runKey(runId), journalKey(runId), live], [owner, update.leaseUntil, update.approvedGate, update.deadlineAt, runId, idx, `${p}:run:`])) === 1),
    claimExpired: (owner, now, leaseUntil, limit, only) => guard('claim', async () => {
      if (limit <= 0) return [];
      const filter = only ? ['1', ...only.chains.flatMap((c) => [c.name, c.fingerprint])] : ['0'];
      const args = [owner, now, leaseUntil, Math.min(Math.floor(limit), 2 ** 31 - 1), `${p}:run:`, `${p}:run-j:`, only?.orphanedBefore ?? '', ...filter];
      const rows = (await claim(redis, [live], args)) as [string[], string[]][];
      return rows.map(([hash, entries]) => fromHash(hash, entries));
    }),
    listRuns: (query) => guard('list', async () => {
      const sets = query.statuses.flatMap((st) => [query.chain === undefined ? `${idx}st:${st}` : `${idx}sc:${st}:${query.chain}`, st]);
      // Lua reads the bounds with tonumber: a huge finite number where there is none.
      const bound = (n: number): string => (n === Infinity ? '1e300' : n === -Infinity ? '-1e300' : String(n));
      const args = [`${p}:run:`, `${p}:run-j:`, bound(query.since), bound(query.until), query.limit, query.after ? query.after.startedAt : '', query.after?.runId ?? '', query.chain ?? '', ...sets];
      const [rows, more] = (await list(redis, [], args)) as [[string, (string | null)[], string[]][], number];
      const runs = rows.map(([runId, [chain, status, started, ended, result], journal]) =>
        summarize({ runId, chain: chain ?? '', status: status as RunStatus, startedAt: Number(started ?? 0), ...(ended != null && { endedAt: Number(ended) }) }, result, journal));
      return { runs, more: more === 1 };
    }),
    get: (runId) => guard('get', async () => {
      const [hash, entries] = (await get(redis, [runKey(runId), journalKey(runId)], [])) as [string[], string[]];
      return hash.length === 0 ? undefined : fromHash(hash, entries);
    }),
  };
}
