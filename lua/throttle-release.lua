-- throttle-release.lua: undo an admission whose job could not be enqueued, or repair a lane whose
-- queued members have no job any more (a submitter that died between admission and enqueue).
-- KEYS[1]  lane: hash (see includes/lane.lua)
-- KEYS[2]  laneQueue: sorted set of "<job id>|<cost>"
-- KEYS[3]  busy: the throttle's busy set
-- KEYS[4]  laneReservations: lane reservations (a removed member's reserved slot goes too)
-- KEYS[5..] jobs: for a repair, the BullMQ job hash of each member (a member is removed only if it is missing)
-- ARGV[1]  now: µs since the epoch, or '' to read Redis TIME
-- ARGV[2]  laneId: lane id
-- ARGV[3]  mode: 'release' (remove the members unconditionally) or 'repair' (only those whose job is missing)
-- ARGV[4..] members: "<job id>|<cost>"
-- returns the number of cost units removed from the lane
-- @include now
-- @include lane

local now = now_us(ARGV[1])
local repair = ARGV[3] == 'repair'
local removed, unreserved = 0, 0
for i = 4, #ARGV do
  local member = ARGV[i]
  local missing = not repair or redis.call('EXISTS', KEYS[i + 1]) == 0
  if missing and redis.call('ZREM', KEYS[2], member) == 1 then
    removed = removed + member_cost(member)
    if redis.call('ZREM', KEYS[4], member) == 1 then unreserved = unreserved + member_cost(member) end
  end
end
if removed > 0 then
  local state = redis.call('HMGET', KEYS[1], 'd', 'u')
  local depth = math.max(0, tonumber(state[1] or 0) - removed)
  redis.call('HSET', KEYS[1], 'd', depth, 'u', math.max(0, tonumber(state[2] or 0) - unreserved))
  local meter = redis.call('HMGET', KEYS[1], 's', 'o', 'c')
  settle_lane(KEYS[1], KEYS[3], ARGV[2], depth, now, math.max(next_free(meter[1], meter[2]), tonumber(meter[3] or 0)))
end
return removed
