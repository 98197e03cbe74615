-- admin-lane-resume.lua: end a lane's pause now (an operator's resume). The pause field goes, and so
-- do the slots reserved for after it: the lane's schedule starts again from now. Jobs that held such a
-- slot get a fresh one at their next visit to the gate; the lane's last start (c) still spaces the
-- next one, so resuming never lets the lane start faster than its rate.
-- KEYS[1]  lane: hash (see includes/lane.lua)
-- KEYS[2]  laneReservations: lane reservations: member -> virtual µs
-- ARGV[1]  now: µs since the epoch, or '' to read Redis TIME
-- returns the real µs until which the lane had been paused (0: it was not paused)
-- @include now
-- @include lane

local now = now_us(ARGV[1])
local state = redis.call('HMGET', KEYS[1], 'p', 'o', 'd')
local paused = tonumber(state[1] or 0)
if paused <= now then
  if paused > 0 then redis.call('HDEL', KEYS[1], 'p') end
  return 0
end
redis.call('HDEL', KEYS[1], 'p')
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[1], 's', now - tonumber(state[2] or 0), 'u', 0)
if tonumber(state[3] or 0) == 0 then redis.call('PEXPIRE', KEYS[1], ttl(0)) end
return paused
