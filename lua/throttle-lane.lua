-- throttle-lane.lua: read a lane's state in one consistent step.
-- KEYS[1]  lane: hash (see includes/lane.lua)
-- KEYS[2]  laneQueue: sorted set of "<job id>|<cost>"
-- KEYS[3]  waiting: the throttle's waiting set (a busy lane's score: when the dispatcher may start it next)
-- ARGV[1]  now: µs since the epoch, or '' to read Redis TIME
-- ARGV[2]  laneId: the lane's member in the waiting set
-- returns {the earliest real µs of the lane's next start (its rate, burst and pause, and for a busy lane
--          the dispatcher's own instant: a key quota without room holds it until its window's end),
--          queued cost units, queued jobs, now µs}
-- @include now
-- @include lane

local now = now_us(ARGV[1])
local state = redis.call('HMGET', KEYS[1], 'c', 'p', 'd', 'i', 'b')
local slot = lane_eligible(tonumber(state[1] or 0), tonumber(state[2] or 0), tonumber(state[4] or 1), tonumber(state[5] or 0), 0)
local held_until = tonumber(redis.call('ZSCORE', KEYS[3], ARGV[2]) or 0)
return {math.max(slot, held_until, now), tonumber(state[3] or 0), redis.call('ZCARD', KEYS[2]), now}
