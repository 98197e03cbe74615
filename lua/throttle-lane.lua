-- throttle-lane.lua: read a lane's state in one consistent step.
-- KEYS[1]  lane: hash (see includes/lane.lua)
-- KEYS[2]  laneQueue: sorted set of "<job id>|<cost>"
-- ARGV[1]  now: µs since the epoch, or '' to read Redis TIME
-- returns {the earliest real µs of the lane's next start (its rate, burst and pause), queued cost units, queued jobs, now µs}
-- @include now
-- @include lane

local now = now_us(ARGV[1])
local state = redis.call('HMGET', KEYS[1], 'c', 'p', 'd', 'i', 'b')
local slot = lane_eligible(tonumber(state[1] or 0), tonumber(state[2] or 0), tonumber(state[4] or 1), tonumber(state[5] or 0), 0)
return {math.max(slot, now), tonumber(state[3] or 0), redis.call('ZCARD', KEYS[2]), now}
