-- throttle-start.lua: the outflow gate, called by a worker when a job is about to start.
-- KEYS[1]  lane hash {s, d, u} (see includes/lane.lua)
-- KEYS[2]  lane queue: sorted set of "<job id>|<cost>" (admitted, not yet started)
-- KEYS[3]  the throttle's busy set
-- KEYS[4]  the throttle's global meter hash {s} (untouched when there is no global cap)
-- KEYS[5]  lane reservations: sorted set of members holding a start slot they came too early for
-- ARGV[1]  now in µs since the epoch, or '' to read Redis TIME
-- ARGV[2]  the job's member "<job id>|<cost>"
-- ARGV[3]  cost (units)
-- ARGV[4]  lane interval in µs
-- ARGV[5]  lane burst (units that may start early)
-- ARGV[6]  global interval in µs (0: no global cap)
-- ARGV[7]  lead in µs: a job that reaches the gate at most this long before its slot waits for it in the worker
-- ARGV[8]  pacing margin in parts per million: slots are spaced this much wider than the rate, so that
--          timing jitter between worker processes can never put rate + 1 starts inside one second
-- ARGV[9]  lane id
-- ARGV[10] lateness tolerance in µs: a reserved slot missed by more than this is given up
-- ARGV[11] '' or the slot (µs) this job was given a moment ago and missed (its worker fell behind):
--          treated as a reservation, so the job takes the next usable slot instead of crowding it
-- returns {1, start µs, now µs}  go: start the job at `start` (now, or within the lead)
--         {0, wake µs, now µs}   too early: the slot is reserved; move the job back to delayed until
--                                `wake` (its slot less the lead) and call again then
-- Every job gets a slot the first time it reaches the gate, in the order jobs arrive, so a backlog
-- drains one interval apart with no herd and no slot ever shared. Only the first start of a job
-- takes it out of the lane's queue; a retry or a re-run after a crashed worker is paced like any start.
-- @include now
-- @include lane

local now = now_us(ARGV[1])
local member = ARGV[2]
local cost = tonumber(ARGV[3])
local lane_interval = tonumber(ARGV[4])
local burst = tonumber(ARGV[5])
local global_interval = tonumber(ARGV[6])
local lead = tonumber(ARGV[7])
local margin = tonumber(ARGV[8])
local lane_id = ARGV[9]
local late_tolerance = tonumber(ARGV[10])

local state = redis.call('HMGET', KEYS[1], 's', 'd', 'u')
local slot = tonumber(state[1] or 0)
local depth = tonumber(state[2] or 0)
local reserved_units = tonumber(state[3] or 0)
local queued = redis.call('ZSCORE', KEYS[2], member) ~= false
local interval = effective_interval(lane_interval, global_interval, redis.call('ZCARD', KEYS[3]))
local step = span(cost, interval, margin)

-- Reserves this job's slot `at` (it came early) and sends it back until just before then.
local function defer(at)
  redis.call('ZADD', KEYS[5], at, member)
  if redis.call('PTTL', KEYS[5]) < ttl((at - now) / 1000) then redis.call('PEXPIRE', KEYS[5], ttl((at - now) / 1000)) end
  if queued then reserved_units = reserved_units + cost end
  redis.call('HSET', KEYS[1], 's', slot, 'u', reserved_units)
  settle_lane(KEYS[1], KEYS[3], lane_id, depth, now, slot)
  return {0, at - lead, now}
end

-- 1. The lane slot. Reserved slots form a pool: a job that holds one takes the earliest reserved slot
--    still usable (its own, or an earlier one whose owner has not come yet, which then gets this
--    job's slot — equal costs only, and only a slot it can start in now), so a slot is lost only when
--    no reserved job is there to use it.
--    A job without one (its first visit, or its slot and every later one missed) takes the lane's
--    next free slot.
local at = -1
local own = ARGV[11] ~= '' and tonumber(ARGV[11]) or redis.call('ZSCORE', KEYS[5], member)
if own and ARGV[11] == '' then
  redis.call('ZREM', KEYS[5], member)
  if queued then reserved_units = reserved_units - cost end
end
if own then
  own = tonumber(own)
  local first = redis.call('ZRANGEBYSCORE', KEYS[5], now - late_tolerance, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  local other, other_at = first[1], tonumber(first[2] or 0)
  local usable_now = other and other_at - now <= lead and member_cost(other) == cost
  if usable_now and (own < now - late_tolerance or other_at < own) then
    redis.call('ZADD', KEYS[5], own, other)
    at = other_at
  elseif own >= now - late_tolerance then
    at = own
  end
end
if at < 0 then
  at = math.max(now, slot - burst * interval)
  slot = math.max(slot, at) + step
end
if at - now > lead then return defer(at) end

-- 2. The global cap: start at the global meter's next slot, if that is within the extra spacing this
--    lane has because it shares the cap (a later start would crowd the lane's own next start);
--    otherwise give up this slot and reserve the lane's first slot at or after the global one.
local start = at
if global_interval > 0 then
  local global_slot = tonumber(redis.call('HGET', KEYS[4], 's') or 0)
  start = math.max(at, global_slot)
  if start - at > step - span(cost, lane_interval, margin) then
    local again = math.max(slot, global_slot)
    slot = again + step
    return defer(again)
  end
  local global_next = start + span(cost, global_interval, margin)
  redis.call('HSET', KEYS[4], 's', global_next)
  redis.call('PEXPIRE', KEYS[4], ttl((global_next - now) / 1000))
end

-- 3. Go. The first start of a queued job takes it out of the lane.
if queued then
  redis.call('ZREM', KEYS[2], member)
  depth = depth - cost
end
redis.call('HSET', KEYS[1], 's', slot, 'd', depth, 'u', reserved_units)
settle_lane(KEYS[1], KEYS[3], lane_id, depth, now, slot)
return {1, start, now}
