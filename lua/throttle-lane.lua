-- throttle-lane.lua: read a lane's state in one consistent step.
-- KEYS[1]  lane: hash (see includes/lane.lua)
-- KEYS[2]  laneQueue: sorted set of "<job id>|<cost>"
-- ARGV[1]  now: µs since the epoch, or '' to read Redis TIME
-- returns {next free slot µs (real), queued cost units, queued jobs, now µs}
-- @include now
-- @include lane

local now = now_us(ARGV[1])
local state = redis.call('HMGET', KEYS[1], 's', 'o', 'c', 'p', 'd')
local slot = math.max(next_free(state[1], state[2]), tonumber(state[3] or 0), tonumber(state[4] or 0))
return {slot, tonumber(state[5] or 0), redis.call('ZCARD', KEYS[2]), now}
