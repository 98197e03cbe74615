-- throttle-release.lua: undo an admission whose job could not be enqueued, or repair a lane whose
-- queued members have no job any more (a submitter that died between admission and enqueue).
-- KEYS[1]  lane: hash (see includes/lane.lua)
-- KEYS[2]  laneQueue: sorted set of "<job id>|<cost>"
-- KEYS[3]  busy: the throttle's busy set
-- KEYS[4]  waiting: the throttle's waiting set
-- KEYS[5]  ready: the throttle's ready set
-- KEYS[6..] jobs: for a repair, the BullMQ job hash of each member (a member is removed only if it is missing)
-- ARGV[1]  now: µs since the epoch, or '' to read Redis TIME
-- ARGV[2]  laneId: lane id
-- ARGV[3]  mode: 'release' (remove the members unconditionally) or 'repair' (only those whose job is missing)
-- ARGV[4..] members: "<job id>|<cost>"
-- returns the number of cost units removed from the lane
-- @include now
-- @include lane

local now = now_us(ARGV[1])
local repair = ARGV[3] == 'repair'
local removed = 0
for i = 4, #ARGV do
  local member = ARGV[i]
  local missing = not repair or redis.call('EXISTS', KEYS[i + 2]) == 0
  if missing and redis.call('ZREM', KEYS[2], member) == 1 then
    removed = removed + member_cost(member)
  end
end
if removed > 0 then
  local depth = math.max(0, tonumber(redis.call('HGET', KEYS[1], 'd') or 0) - removed)
  redis.call('HSET', KEYS[1], 'd', depth)
  if depth == 0 then deactivate_lane(ARGV[2], KEYS[4], KEYS[5]) end
  settle_lane(KEYS[1], KEYS[3], ARGV[2], depth, now, tonumber(redis.call('HGET', KEYS[1], 'c') or 0))
end
return removed
