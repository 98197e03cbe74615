-- limits.lua: every enforcing limit of one request, decided all-or-nothing in one atomic call.
-- KEYS[1..]  states: the state key of each limit, in the order of the decisions
-- ARGV[1..]  decisions: per limit: its decision script (fixed-window, sliding-counter, sliding-log, token-bucket, gcra, concurrency-acquire), the count n of its arguments, then its n ARGV as that script's header lays them out
-- returns {allowed 0|1, decision 1, decision 2, ...}: allowed = 1 when every limit allowed and all were
-- charged; each decision is its script's {allowed 0|1, remaining, retryAfter, resetAt}.
-- Every limit is first decided without a change (record = 0: ARGV[5] of every decision script); only if
-- all allow is each charged, at the same instant (Redis TIME is read once per run), so each charge
-- allows as its check did and nothing is ever partly charged. Two limits on one key (two rules with one
-- policy and one descriptor) are the exception: the check sees the key before either charge, so the key
-- is saved first (DUMP) and put back if a charge refuses.
-- @include decide-fixed-window
-- @include decide-sliding-counter
-- @include decide-sliding-log
-- @include decide-token-bucket
-- @include decide-gcra
-- @include decide-concurrency-acquire

local deciders = {
  ['fixed-window'] = decide_fixed_window,
  ['sliding-counter'] = decide_sliding_counter,
  ['sliding-log'] = decide_sliding_log,
  ['token-bucket'] = decide_token_bucket,
  gcra = decide_gcra,
  ['concurrency-acquire'] = decide_concurrency,
}

local calls = {}
local seen, shared = {}, false
local at = 1
for i = 1, #KEYS do
  local decide = deciders[ARGV[at]]
  if not decide then return redis.error_reply('limits: unknown decision script ' .. tostring(ARGV[at])) end
  local n = tonumber(ARGV[at + 1])
  local argv = {}
  for j = 1, n do argv[j] = ARGV[at + 1 + j] end
  at = at + 2 + n
  calls[i] = {decide = decide, argv = argv}
  if seen[KEYS[i]] then shared = true end
  seen[KEYS[i]] = true
end

local replies = {0}
local all = true
for i = 1, #KEYS do
  local c = calls[i]
  local record = c.argv[5]
  c.argv[5] = '0'
  replies[i + 1] = c.decide(KEYS[i], c.argv)
  c.argv[5] = record
  if replies[i + 1][1] ~= 1 then all = false end
end
if not all then return replies end

local saved
if shared then
  saved = {}
  for key in pairs(seen) do
    local dump = redis.call('DUMP', key)
    if dump then saved[key] = {dump, math.max(0, redis.call('PTTL', key))} else saved[key] = false end
  end
end
for i = 1, #KEYS do
  local reply = calls[i].decide(KEYS[i], calls[i].argv)
  if reply[1] ~= 1 then
    -- Only two limits on one key get here: undo every charge made, report this refusal.
    for key, s in pairs(saved) do
      redis.call('DEL', key)
      if s then redis.call('RESTORE', key, s[2], s[1]) end
    end
    replies[i + 1] = reply
    return replies
  end
  replies[i + 1] = reply
end
replies[1] = 1
return replies
