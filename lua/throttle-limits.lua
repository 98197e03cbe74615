-- throttle-limits.lua: an operator changed a lane's settings (an override set or removed): the
-- dispatcher paces the lane by its new interval and burst from now on, queued work included.
-- KEYS[1]  lane: hash (see includes/lane.lua)
-- KEYS[2]  waiting: the throttle's waiting set
-- KEYS[3]  ready: the throttle's ready set
-- ARGV[1]  laneIntervalUs: the lane's new interval in µs
-- ARGV[2]  burst: the lane's new burst
-- ARGV[3]  marginPpm: pacing margin in parts per million
-- ARGV[4]  laneId: lane id
-- returns 1 when the lane had state (it was changed), 0 when it had none (its next admission sets them)
-- @include now
-- @include lane

if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'i', ARGV[1], 'b', ARGV[2])
reposition_lane(KEYS[1], ARGV[4], KEYS[2], KEYS[3], tonumber(ARGV[3]))
return 1
