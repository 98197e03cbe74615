-- throttle-start.lua: the outflow gate, called by a worker when a job is about to start.
-- KEYS[1]  lane hash {s, d, r} (see includes/lane.lua)
-- KEYS[2]  lane queue: sorted set of "<job id>|<cost>"
-- KEYS[3]  the throttle's busy set
-- KEYS[4]  the throttle's global meter hash {s} (untouched when there is no global cap)
-- ARGV[1]  now in µs since the epoch, or '' to read Redis TIME
-- ARGV[2]  the job's member "<job id>|<cost>"
-- ARGV[3]  cost (units)
-- ARGV[4]  lane interval in µs
-- ARGV[5]  lane burst (units that may start early)
-- ARGV[6]  global interval in µs (0: no global cap)
-- ARGV[7]  lead in µs: how far ahead of its slot a job may be given its slot (it then waits in the worker)
-- ARGV[8]  pacing margin in parts per million: slots are spaced this much wider than the rate, so that
--          timing jitter between worker processes can never put rate + 1 starts inside one second
-- ARGV[9]  lane id
-- returns {1, start µs, now µs}  go: the slot is reserved; start the job at `start` (now or within lead)
--         {0, wake µs, now µs}   too early: move the job back to delayed until `wake` and call again then
-- Only the first start of a job takes it out of the lane's queue; a retry or a re-run after a crashed
-- worker is paced like any start but does not touch the queue count again.
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

local state = redis.call('HMGET', KEYS[1], 's', 'd', 'r')
local slot = tonumber(state[1] or 0)
local depth = tonumber(state[2] or 0)
local cursor = tonumber(state[3] or 0)
local interval = effective_interval(lane_interval, global_interval, redis.call('ZCARD', KEYS[3]))
local step = span(cost, interval, margin)

local start = math.max(now, slot - burst * interval)
local global_slot = 0
if global_interval > 0 then
  global_slot = tonumber(redis.call('HGET', KEYS[4], 's') or 0)
  start = math.max(start, global_slot)
end

if start - now > lead then
  -- Too early. Deferred jobs get successive slots from the cursor, so a backlog that waited for
  -- workers wakes one interval apart instead of all at once at the next slot.
  local due = math.max(start, cursor)
  redis.call('HSET', KEYS[1], 'r', due + step)
  return {0, due - lead, now}
end

local next_slot = math.max(slot, start) + step
redis.call('HSET', KEYS[1], 's', next_slot)
if global_interval > 0 then
  local global_next = math.max(global_slot, start) + span(cost, global_interval, margin)
  redis.call('HSET', KEYS[4], 's', global_next)
  redis.call('PEXPIRE', KEYS[4], ttl((global_next - now) / 1000))
end
if redis.call('ZREM', KEYS[2], member) == 1 then
  depth = depth - cost
  redis.call('HSET', KEYS[1], 'd', depth)
end
settle_lane(KEYS[1], KEYS[3], lane_id, depth, now, math.max(next_slot, cursor))
return {1, start, now}
