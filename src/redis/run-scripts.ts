// The Lua scripts of the Redis run store (src/redis/runs.ts): each
// claim, journal write and finish is one atomic script (the listings' scripts: list-scripts.ts).

// The listing indexes (runner.listRuns): per status, and per status and chain, sorted sets of run ids
// scored by start time, moved in the same script as the status. A member whose run expired or moved
// on is dropped when a listing meets it, and each finish prunes a few of the oldest: never a scan.
const INDEX = `
local function idx(prefix, status, chain)
  return prefix .. 'st:' .. status, prefix .. 'sc:' .. status .. ':' .. chain
end
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
  -- The context's runs: in flight (\`cx:\`, no TTL: each leaves as it ends) or ended and kept (\`cxe:\`, kept
  -- as long as its newest): a context nobody lists leaves nothing behind past its runs' retention.
  local ctx = redis.call('HGET', ARGV_RUN .. id, 'ctx')
  if ctx and ctx ~= '' then
    local live, ended = prefix .. 'cx:' .. ctx, prefix .. 'cxe:' .. ctx
    if keepMs then
      redis.call('ZREM', live, id)
      redis.call('ZADD', ended, started, id)
      if redis.call('PTTL', ended) < tonumber(keepMs) then redis.call('PEXPIRE', ended, keepMs) end
    else
      redis.call('ZREM', ended, id)
      redis.call('ZADD', live, started, id)
    end
  end
end
`;

// A running run waiting out a retry is indexed as retrying instead of running (\`retrying\` true), or back.
const RETRY_INDEX = `
local function retry_index(prefix, id, chain, started, retrying)
  local from, to = 'running', 'retrying'
  if not retrying then from, to = 'retrying', 'running' end
  redis.call('ZREM', prefix .. 'st:' .. from, id)
  redis.call('ZADD', prefix .. 'st:' .. to, started or '0', id)
  if chain then
    redis.call('ZREM', prefix .. 'sc:' .. from .. ':' .. chain, id)
    redis.call('ZADD', prefix .. 'sc:' .. to .. ':' .. chain, started or '0', id)
  end
end
`;

// Retention of the listing indexes (docs/guides/watching-runs.md): each ended or parked run is also
// a member of \`<index prefix>exp\` scored by when its record expires (member: [status, chain, id, context
// hash]). Each finish removes up to 100 members whose time has come from the indexes (a range of that
// set, never a scan), so the indexes keep no entry for a run whose record expired.
const EXPIRY = `
local function index_expire(prefix, id, chain, status, now, keepMs)
  local exp = prefix .. 'exp'
  local ctx = redis.call('HGET', ARGV_RUN .. id, 'ctx') or ''
  redis.call('ZADD', exp, tonumber(now) + tonumber(keepMs), cjson.encode({status, chain, id, ctx}))
  if redis.call('PTTL', exp) < tonumber(keepMs) then redis.call('PEXPIRE', exp, keepMs) end
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', exp, '-inf', now, 'LIMIT', 0, 100)) do
    local e = cjson.decode(m)
    local f = redis.call('HMGET', ARGV_RUN .. e[3], 'status', 'ctx')
    if f[1] ~= e[1] then
      local a, b = idx(prefix, e[1], e[2])
      redis.call('ZREM', a, e[3])
      redis.call('ZREM', b, e[3])
    end
    -- Gone, or its id is another context's run now. A member written before contexts were indexed has no e[4].
    if e[4] and e[4] ~= '' and f[2] ~= e[4] then redis.call('ZREM', prefix .. 'cxe:' .. e[4], e[3]) end
    redis.call('ZREM', exp, m)
  end
end
`;

// KEYS: run hash, journal, live set. ARGV: record, owner, leaseUntil, deadlineAt, now, runId, chain, fingerprint,
// context hash, startedAt, index prefix, run key prefix.
// Records a new run, or reports the existing one (taken over when its lease ended before now). A run
// id bound to another chain or context is 'mismatch', untouched; one in flight under another fingerprint is not
// taken over.
export const CREATE = `local ARGV_RUN = ARGV[12]
${INDEX}
${RETRY_INDEX}
local st = redis.call('HGET', KEYS[1], 'status')
if not st then
  redis.call('DEL', KEYS[2])
  redis.call('HSET', KEYS[1], 'd', ARGV[1], 'status', 'running', 'owner', ARGV[2], 'lease', ARGV[3],
    'deadline', ARGV[4], 'chain', ARGV[7], 'fp', ARGV[8], 'ctx', ARGV[9], 'started', ARGV[10])
  redis.call('ZADD', KEYS[3], ARGV[3], ARGV[6])
  index_move(ARGV[11], ARGV[6], ARGV[7], ARGV[10], nil, 'running', nil)
  return 'created'
end
local b = redis.call('HMGET', KEYS[1], 'chain', 'ctx', 'fp')
if (b[1] and b[1] ~= ARGV[7]) or (b[2] and b[2] ~= '' and ARGV[9] ~= '' and b[2] ~= ARGV[9]) then return 'mismatch' end
local kind = 'ended'
local prev
if st == 'running' then
  kind = 'busy'
  if tonumber(redis.call('HGET', KEYS[1], 'lease')) < tonumber(ARGV[5]) and (not b[3] or b[3] == ARGV[8]) then
    prev = redis.call('HGET', KEYS[1], 'owner')
    redis.call('HSET', KEYS[1], 'owner', ARGV[2], 'lease', ARGV[3])
    if redis.call('HDEL', KEYS[1], 'retry') == 1 then
      retry_index(ARGV[11], ARGV[6], b[1], redis.call('HGET', KEYS[1], 'started'), false)
    end
    redis.call('ZADD', KEYS[3], ARGV[3], ARGV[6])
    kind = 'taken'
  end
end
return {kind, redis.call('HGETALL', KEYS[1]), redis.call('LRANGE', KEYS[2], 0, -1), prev or ''}`;

// KEYS: run hash, journal[, idempotency key]. ARGV: owner, kept result, its ttl ('' '' without), entries….
// The result is kept even when the owner lost the run: the call happened, a re-run must find it done.
export const JOURNAL = `
if KEYS[3] then redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[3]) end
local f = redis.call('HMGET', KEYS[1], 'owner', 'status')
if f[1] ~= ARGV[1] or f[2] ~= 'running' then return 0 end
for i = 4, #ARGV do redis.call('RPUSH', KEYS[2], ARGV[i]) end
return 1`;

// KEYS: live set. ARGV: owner, leaseUntil, run key prefix, run
// ids… Renews only the owner's runs in flight; returns their ids.
export const RENEW = `
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

// KEYS: run hash, journal, live set. ARGV: owner, status, result, retentionMs (0: kept until deleted), runId, now,
// index prefix, run key prefix, the step it parks at ('' for an end), journal entries….
export const FINISH = `local ARGV_RUN = ARGV[8]
${INDEX}
${EXPIRY}
local f = redis.call('HMGET', KEYS[1], 'owner', 'status', 'chain', 'started')
if f[1] ~= ARGV[1] or f[2] ~= 'running' then return 0 end
for i = 10, #ARGV do redis.call('RPUSH', KEYS[2], ARGV[i]) end
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'result', ARGV[3], 'lease', '0', 'ended', ARGV[6])
if ARGV[9] ~= '' then redis.call('HSET', KEYS[1], 'parked', ARGV[9]) else redis.call('HDEL', KEYS[1], 'parked') end
redis.call('ZREM', KEYS[3], ARGV[5])
if redis.call('HDEL', KEYS[1], 'retry') == 1 and f[3] then
  local a, b = idx(ARGV[7], 'retrying', f[3])
  redis.call('ZREM', a, ARGV[5])
  redis.call('ZREM', b, ARGV[5])
end
local keep = nil
if ARGV[4] ~= '0' then
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
  keep = ARGV[4]
end
if f[3] then index_move(ARGV[7], ARGV[5], f[3], f[4] or '0', 'running', ARGV[2], keep) end
if f[3] and keep then index_expire(ARGV[7], ARGV[5], f[3], ARGV[2], ARGV[6], keep) end
return 1`;

// KEYS: run hash, journal, live set. ARGV: owner, leaseUntil,
// approved gate, deadlineAt, runId, index prefix, run key prefix.
export const REOPEN = `local ARGV_RUN = ARGV[7]
${INDEX}
if redis.call('HGET', KEYS[1], 'status') ~= 'awaiting_confirmation' then return 0 end
redis.call('HSET', KEYS[1], 'status', 'running', 'owner', ARGV[1], 'lease', ARGV[2],
  'gate', ARGV[3], 'deadline', ARGV[4])
redis.call('HDEL', KEYS[1], 'result', 'ended')
local f = redis.call('HMGET', KEYS[1], 'chain', 'started')
if f[1] then index_move(ARGV[6], ARGV[5], f[1], f[2] or '0', 'awaiting_confirmation', 'running', nil) end
redis.call('PERSIST', KEYS[1])
redis.call('PERSIST', KEYS[2])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[5])
return 1`;

// KEYS: live set. ARGV: owner, now, leaseUntil, limit, run key prefix, journal key prefix, orphanedBefore
// ('' for none), '1' to filter, index prefix, then chain and fingerprint pairs. Members whose run ended or vanished
// leave the set; a lagging score is corrected. With a filter, runs of other chains or fingerprints
// (not orphaned) are passed over untouched; the scan goes on past them, at most 20 pages.
export const CLAIM = `
${RETRY_INDEX}
local allowed = {}
for i = 10, #ARGV, 2 do allowed[ARGV[i] .. '|' .. ARGV[i + 1]] = true end
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
    elseif ARGV[8] == '1' and f[3] and not allowed[f[3] .. '|' .. (f[4] or '')]
      and not (orphan and tonumber(f[5]) < orphan) then
      offset = offset + 1
    else
      local prev = redis.call('HGET', k, 'owner') or ''
      redis.call('HSET', k, 'owner', ARGV[1], 'lease', ARGV[3])
      if redis.call('HDEL', k, 'retry') == 1 then
        retry_index(ARGV[9], id, f[3], redis.call('HGET', k, 'started'), false)
      end
      redis.call('ZADD', KEYS[1], ARGV[3], id)
      out[#out + 1] = {redis.call('HGETALL', k), redis.call('LRANGE', ARGV[6] .. id, 0, -1), prev}
      if #out >= limit then return out end
    end
  end
  if #ids < limit then break end
end
return out`;

// KEYS: run hash, journal.
export const GET = `return {redis.call('HGETALL', KEYS[1]), redis.call('LRANGE', KEYS[2], 0, -1)}`;

// KEYS: idempotency key. ARGV: pending marker, pendingTtlMs, runId, owner, '1' to take over.
// Claims the key (nil) or returns its entry. A pending marker of the same run written by another
// owner is taken over when asked: that owner lost the run (docs/guides/durable-runs.md), nobody will finish its call.
export const BEGIN = `
local v = redis.call('GET', KEYS[1])
if v then
  if ARGV[5] ~= '1' or string.sub(v, 1, 8) ~= '{"s":"p"' then return v end
  local e = cjson.decode(v)
  if e.r ~= ARGV[3] or e.o == ARGV[4] then return v end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false`;

// KEYS: run hash. ARGV: owner, until ('' clears the mark), runId, index prefix. A run the owner holds
// (running) is marked as waiting out a retry until then, and indexed as retrying instead of running (a listing
// of running runs never reads past runs that are not); or unmarked, and indexed as running again.
export const RETRYING = `
${RETRY_INDEX}
local f = redis.call('HMGET', KEYS[1], 'owner', 'status', 'chain', 'started')
if f[1] ~= ARGV[1] or f[2] ~= 'running' then return 0 end
if ARGV[2] == '' then
  redis.call('HDEL', KEYS[1], 'retry')
  retry_index(ARGV[4], ARGV[3], f[3], f[4], false)
else
  redis.call('HSET', KEYS[1], 'retry', ARGV[2])
  retry_index(ARGV[4], ARGV[3], f[3], f[4], true)
end
return 1`;

// KEYS: run hash. ARGV: reason ('' for none). Records a cancel of a run in flight, whoever owns it.
export const REQUEST_CANCEL = `
if redis.call('HGET', KEYS[1], 'status') ~= 'running' then return 0 end
redis.call('HSET', KEYS[1], 'cancel', ARGV[1])
return 1`;

// KEYS: run hash, journal, live set. ARGV: owner, leaseUntil, deadlineAt, runId, index prefix, run key prefix, parked
// status, journal entry ('' for none), the step the taker saw it parked at ('' for any) and its journal length then.
// Takes a run parked with that status (in doubt, for one) back to running under the owner, with its entry journaled:
// exactly one taker wins, and one that read an earlier park of the run does not take a later one.
export const TAKE_PARKED = `local ARGV_RUN = ARGV[6]
${INDEX}
if ARGV[7] == 'running' or redis.call('HGET', KEYS[1], 'status') ~= ARGV[7] then return 0 end
if ARGV[9] ~= '' then
  if redis.call('LLEN', KEYS[2]) ~= tonumber(ARGV[10]) then return 0 end
  local at = redis.call('HGET', KEYS[1], 'parked')
  if at and at ~= ARGV[9] then return 0 end -- absent: parked before the field was kept, judged by its journal
end
redis.call('HDEL', KEYS[1], 'parked')
redis.call('HSET', KEYS[1], 'status', 'running', 'owner', ARGV[1], 'lease', ARGV[2], 'deadline', ARGV[3])
redis.call('HDEL', KEYS[1], 'result', 'ended')
local f = redis.call('HMGET', KEYS[1], 'chain', 'started')
if f[1] then index_move(ARGV[5], ARGV[4], f[1], f[2] or '0', ARGV[7], 'running', nil) end
redis.call('PERSIST', KEYS[1])
redis.call('PERSIST', KEYS[2])
if ARGV[8] ~= '' then redis.call('RPUSH', KEYS[2], ARGV[8]) end
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[4])
return 1`;

// KEYS: wake set. ARGV: now, limit, run key prefix, '1' to filter, then chain and fingerprint pairs.
// Ids of runs parked `waiting` whose wake-up (the member's score) came, earliest first; members
// whose run moved on or vanished leave the set. Runs of chains the caller cannot continue are passed over.
export const DUE = `
local allowed = {}
for i = 5, #ARGV, 2 do allowed[ARGV[i] .. '|' .. ARGV[i + 1]] = true end
local limit = tonumber(ARGV[2])
local out = {}
local offset = 0
for page = 1, 20 do
  local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', offset, limit)
  if #ids == 0 then break end
  for _, id in ipairs(ids) do
    local f = redis.call('HMGET', ARGV[3] .. id, 'status', 'chain', 'fp')
    if f[1] ~= 'waiting' then
      redis.call('ZREM', KEYS[1], id)
    elseif ARGV[4] == '1' and f[2] and not allowed[f[2] .. '|' .. (f[3] or '')] then
      offset = offset + 1
    else
      out[#out + 1] = id
      offset = offset + 1
      if #out >= limit then return out end
    end
  end
  if #ids < limit then break end
end
return out`;

// KEYS: wake set. ARGV: runId, wake-up (epoch ms; '' for none). Indexes (or unindexes) a waiting run's wake-up.
export const WAKE_AT = `
if ARGV[2] == '' then redis.call('ZREM', KEYS[1], ARGV[1]) else redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1]) end
return 1`;
