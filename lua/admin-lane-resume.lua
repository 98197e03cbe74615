-- admin-lane-resume.lua: end a lane's pause now (an operator's resume). The dispatcher may start the
-- lane's queued work at once; the lane's own meter (c) still spaces it, so resuming never lets the
-- lane start faster than its rate.
-- KEYS[1]  lane: hash (see includes/lane.lua)
-- KEYS[2]  waiting: the throttle's waiting set
-- KEYS[3]  ready: the throttle's ready set
-- KEYS[4]  wake: the channel the dispatchers listen on (published, never stored)
-- ARGV[1]  now: µs since the epoch, or '' to read Redis TIME
-- ARGV[2]  laneId: lane id
-- ARGV[3]  marginPpm: pacing margin in parts per million
-- returns the real µs until which the lane had been paused (0: it was not paused)
-- @include now
-- @include lane

local now = now_us(ARGV[1])
local state = redis.call('HMGET', KEYS[1], 'p', 'd')
local paused = tonumber(state[1] or 0)
if paused <= now then
  if paused > 0 then redis.call('HDEL', KEYS[1], 'p') end
  return 0
end
redis.call('HDEL', KEYS[1], 'p')
reposition_lane(KEYS[1], ARGV[2], KEYS[2], KEYS[3], tonumber(ARGV[3]))
redis.call('PUBLISH', KEYS[4], '1')
if tonumber(state[2] or 0) == 0 then redis.call('PEXPIRE', KEYS[1], ttl(0)) end
return paused
