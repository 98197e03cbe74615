-- throttle-reconcile.lua: a job ran and its actual cost is known (the upstream said, or its handler):
-- the difference to the cost it was admitted with is charged to, or refunded from, its lane's meter and
-- the throttle's global meter, so that the long-run spend follows the actual costs.
-- KEYS[1]  lane: hash (see includes/lane.lua)
-- KEYS[2]  laneOutgoing: the lane's jobs handed to the workers, by start µs
-- KEYS[3]  global: the throttle's global hash {s, v, p, ui, ue}
-- KEYS[4]  waiting: the throttle's waiting set
-- KEYS[5]  ready: the throttle's ready set
-- ARGV[1]  now: µs since the epoch, or '' to read Redis TIME
-- ARGV[2]  diff: actual cost less the admitted cost, in cost units (negative: a refund; may be fractional)
-- ARGV[3]  laneIntervalUs: the lane's interval in µs when the lane has none recorded
-- ARGV[4]  globalIntervalUs: global interval in µs (0: no global cap; a learnt one may still apply)
-- ARGV[5]  marginPpm: pacing margin in parts per million
-- ARGV[6]  horizonUs: the dispatch horizon (no job is handed out for a start later than now + this)
-- ARGV[7]  laneId: lane id
-- ARGV[8]  quotas: the queue's spend quotas with their windows (includes/quota.lua; '' = none)
-- ARGV[9]  slotUs: the job's start µs (its cost quotas are corrected in that start's window; '' = none)
-- returns {lane meter µs after, global meter µs after (0: no global meter)}
-- An extra charge pushes the meter on from max(meter, now): later starts wait for the extra units. A
-- refund pulls it back, but never below now, and never so far that a start could come closer than an
-- interval to a start already handed out (the lane's outgoing set says where its last one ends; for the
-- global meter every handed-out start is within the horizon): a refund frees room ahead, it never
-- crowds what is already given out.
-- @include now
-- @include lane
-- @include quota

local now = now_us(ARGV[1])
local diff = tonumber(ARGV[2])
local margin = tonumber(ARGV[5])
local horizon = tonumber(ARGV[6])

-- The spend quotas that count cost units count the actual cost too.
local quotas = parse_quotas(ARGV[8])
if #quotas > 0 and ARGV[9] and ARGV[9] ~= '' and diff ~= 0 and not quota_slot_migrating(KEYS[1]) then quota_reconcile(quotas, KEYS[1], KEYS[3], tonumber(ARGV[9]), diff, now) end

local function units(n, interval)
  if n >= 0 then return span(n, interval, margin) end
  return -span(-n, interval, margin)
end

-- The lane.
local st = redis.call('HMGET', KEYS[1], 'c', 'i', 'ui', 'ue', 'd')
local lane_interval = learned(tonumber(st[2] or ARGV[3]), st[3], st[4], now)
local c = tonumber(st[1] or 0)
local lane_after = c
if diff > 0 then
  lane_after = math.max(c, now) + units(diff, lane_interval)
elseif diff < 0 then
  local floor = now
  -- The last job handed out whose start is still ahead (the outgoing set also keeps started ones, this
  -- job among them, until an admission drops them).
  local out = redis.call('ZREVRANGEBYSCORE', KEYS[2], '+inf', '(' .. now, 'WITHSCORES', 'LIMIT', '0', '1')
  if out[2] then floor = math.max(floor, tonumber(out[2]) + span(member_cost(out[1]), lane_interval, margin)) end
  if c > floor then lane_after = math.max(floor, c + units(diff, lane_interval)) end
end
if lane_after ~= c then
  redis.call('HSET', KEYS[1], 'c', lane_after)
  -- An idle lane keeps its meter as long as it matters; a busy one is repositioned (its start moved).
  if tonumber(st[5] or 0) <= 0 then
    redis.call('PEXPIRE', KEYS[1], ttl(math.max(0, lane_after - now) / 1000))
  else
    reposition_lane(KEYS[1], ARGV[7], KEYS[4], KEYS[5], margin)
  end
end

-- The global meter: with a cap, configured or learnt.
local g = redis.call('HMGET', KEYS[3], 's', 'ui', 'ue', 'xi', 'xe')
local cap = learned(shared(tonumber(ARGV[4]), g[4], g[5], now), g[2], g[3], now)
if cap <= 0 then return {lane_after, 0} end
local s = tonumber(g[1] or 0)
local global_after = s
if diff > 0 then
  global_after = math.max(s, now) + units(diff, cap)
elseif diff < 0 then
  local floor = now + horizon + span(1, cap, margin)
  if s > floor then global_after = math.max(floor, s + units(diff, cap)) end
end
if global_after ~= s then redis.call('HSET', KEYS[3], 's', global_after) end
return {lane_after, global_after}
