// The Lua scripts of the Redis run store's listings (runner.listRuns): by status (and chain), from the
// indexes run-scripts.ts keeps as statuses change, and by context.

// The start of a listing: ARGV[3..7] read (since, until, limit, the cursor's score and id), and \`scan\`, which adds
// to \`cands\` up to limit + 1 members of one index after the cursor, newest first, as \`valid(key, id)\` keeps
// them (it answers whether the member is listed, and whether it left the index: a page's offset does not count
// it), reading \`batch\` members at a time and at most \`pages\` times (nil: until the index is read).
const SCAN = `
local since, upper, limit = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local ascore, aid = tonumber(ARGV[6]), ARGV[7]
local cands = {}
local function scan(key, valid, batch, pages)
  local got = 0
  local max = upper
  if ascore and ascore < upper then
    if ascore >= tonumber(since) then
      for _, id in ipairs(redis.call('ZREVRANGEBYSCORE', key, ascore, ascore)) do
        if id < aid and got <= limit and valid(key, id) then
          cands[#cands + 1] = {ascore, id}
          got = got + 1
        end
      end
    end
    max = ascore
  end
  local offset = 0
  local page = 0
  while got <= limit and (pages == nil or page < pages) do
    page = page + 1
    local rows = redis.call('ZREVRANGEBYSCORE', key, '(' .. max, since, 'WITHSCORES', 'LIMIT', offset, batch)
    if #rows == 0 then break end
    for j = 1, #rows, 2 do
      if got > limit then break end
      local listed, gone = valid(key, rows[j])
      if listed then
        cands[#cands + 1] = {tonumber(rows[j + 1]), rows[j]}
        got = got + 1
      end
      if not gone then offset = offset + 1 end
    end
    if #rows < 2 * batch then break end
  end
end`;

// The end of a listing: the candidates (each index's first `limit + 1` after the cursor) merged newest
// first, ties by run id; the page's runs read with their journals; whether more follow.
const PAGE = `
table.sort(cands, function(a, b) if a[1] ~= b[1] then return a[1] > b[1] end return a[2] > b[2] end)
local out = {}
for i = 1, math.min(limit, #cands) do
  local id = cands[i][2]
  out[i] = {id, redis.call('HMGET', ARGV[1] .. id, 'chain', 'status', 'started', 'ended', 'result', 'retry'),
    redis.call('LRANGE', ARGV[2] .. id, 0, -1)}
end
return {out, #cands > limit and 1 or 0}`;

// ARGV: run key prefix, journal key prefix, since, until, limit, cursor score ('' for none), cursor
// id, chain ('' for any), then index key and status pairs. From each index, up to limit + 1 runs
// after the cursor (members whose run expired or changed status leave the index), merged newest
// first; the first `limit` come back with their state and journal, and whether more matched.
export const LIST = `${SCAN}
local status
-- A member of the index of \`status\`: listed while its run has that status.
local function valid(key, id)
  local f = redis.call('HMGET', ARGV[1] .. id, 'status', 'chain', 'retry')
  local st = f[1]
  if st == 'running' and f[3] then st = 'retrying' end
  if st ~= status then
    -- A run waiting out a retry stays in the running index too (it is running again once the wait ends).
    if status == 'running' and st == 'retrying' then return false, false end
    redis.call('ZREM', key, id)
    return false, true
  end
  return ARGV[8] == '' or f[2] == ARGV[8], false
end
for i = 9, #ARGV, 2 do
  status = ARGV[i + 1]
  scan(ARGV[i], valid, limit + 1, 20)
end
${PAGE}`;

// KEYS: none. ARGV: run key prefix, journal key prefix, since, until, limit, after score, after id, chain ('' for
// any), the statuses (comma-separated), then per context match and index (\`cx:<hash>\` and \`cxe:<hash>\`) the
// index, the hash and its chains as JSON (\`{"in": [...]}\` or \`{"out": [...]}\`).
// One context's runs, newest first: each context index read in order, each member's context, chain and status
// checked on its hash (a user's runs are few beside everyone's: no index per status); a member whose run is
// gone, or whose id is another context's run now, leaves.
export const LIST_CONTEXT = `${SCAN}
local wanted = {}
for st in string.gmatch(ARGV[9], '[^,]+') do wanted[st] = true end
local hash, inside, names
-- A member of one context's index: listed while its run is of that context, of a chain the match covers, with
-- a wanted status; one whose run is gone, or whose id is another context's run now, leaves.
local function valid(key, id)
  local f = redis.call('HMGET', ARGV[1] .. id, 'status', 'chain', 'retry', 'ctx')
  if not f[1] or f[4] ~= hash then
    redis.call('ZREM', key, id)
    return false, true
  end
  local st = f[1]
  if st == 'running' and f[3] then st = 'retrying' end
  if (names[f[2] or ''] == true) ~= inside then return false, false end
  return wanted[st] == true and (ARGV[8] == '' or f[2] == ARGV[8]), false
end
for i = 10, #ARGV, 3 do
  hash = ARGV[i + 1]
  local spec = cjson.decode(ARGV[i + 2])
  inside = spec['in'] ~= nil
  names = {}
  for _, n in ipairs(spec['in'] or spec['out']) do names[n] = true end
  scan(ARGV[i], valid, 100, nil)
end
${PAGE}`;
