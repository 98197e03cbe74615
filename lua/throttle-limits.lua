-- throttle-limits.lua: an operator changed a lane's settings (an override set or removed): the
-- dispatcher paces the lane by its new interval and burst from now on, queued work included.
-- KEYS[1]  lane: hash (see includes/lane.lua)
-- KEYS[2]  waiting: the throttle's waiting set
-- KEYS[3]  ready: the throttle's ready set
-- ARGV[1]  laneIntervalUs: the lane's new interval in µs
-- ARGV[2]  burst: the lane's new burst
-- ARGV[3]  marginPpm: pacing margin in parts per million
-- ARGV[4]  laneId: lane id
-- ARGV[5]  controlVersion: the control version the change was made at (0: none): an older change
--          arriving after a newer one is not applied
-- returns 1 when the lane had state (it was changed), 0 when it had none or a newer change was applied
--         already. A lane with no state keeps the change for OVERRIDE_ONLY_MS (its next admission, by a
--         process that may not have seen the override yet, paces by it: includes/lane.lua lane_limits)
-- @include now
-- @include lane

-- Far longer than any process takes to see a change (the control cache polls every 250 ms).
local OVERRIDE_ONLY_MS = 10000
local version = tonumber(ARGV[5]) or 0
if redis.call('EXISTS', KEYS[1]) == 0 then
  if version > 0 then
    redis.call('HSET', KEYS[1], 'i', ARGV[1], 'b', ARGV[2], 'ov', version)
    redis.call('PEXPIRE', KEYS[1], OVERRIDE_ONLY_MS)
  end
  return 0
end
if tonumber(redis.call('HGET', KEYS[1], 'ov') or 0) > version then return 0 end
redis.call('HSET', KEYS[1], 'i', ARGV[1], 'b', ARGV[2])
if version > 0 then redis.call('HSET', KEYS[1], 'ov', version) end
reposition_lane(KEYS[1], ARGV[4], KEYS[2], KEYS[3], tonumber(ARGV[3]))
return 1
