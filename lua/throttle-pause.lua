-- throttle-pause.lua: hold a lane (or the whole throttle) until a time an upstream named, e.g. from
-- the Retry-After of its 429 or 503: nothing is dispatched for it before then.
-- KEYS[1]  lane: hash (see includes/lane.lua)
-- KEYS[2]  global: the throttle's global hash {s, v, p}
-- KEYS[3]  waiting: the throttle's waiting set
-- KEYS[4]  ready: the throttle's ready set
-- ARGV[1]  now: µs since the epoch, or '' to read Redis TIME
-- ARGV[2]  pauseUs: pause for this many µs from now
-- ARGV[3]  scope: 'lane' or 'global'
-- ARGV[4]  laneId: lane id
-- ARGV[5]  marginPpm: pacing margin in parts per million
-- returns the µs at which starts resume
-- @include now
-- @include lane

local now = now_us(ARGV[1])
local resume = now + tonumber(ARGV[2])
-- The lane's pause field, or the throttle's (no start of any lane before it, capped or not). A job
-- already handed out for an instant before the pause does not start then: lua/throttle-start.lua
-- sends it back to the head of its lane.
local global = ARGV[3] == 'global'
local key = global and KEYS[2] or KEYS[1]
local slot = tonumber(redis.call('HGET', key, 'p') or 0)
if slot < resume then
  redis.call('HSET', key, 'p', resume)
  if not global then
    -- A lane with queued work has no TTL and keeps none; otherwise the state lives as long as the pause.
    local queued = tonumber(redis.call('HGET', key, 'd') or 0) > 0
    local keep_ms = ttl((resume - now) / 1000)
    if not queued and redis.call('PTTL', key) < keep_ms then redis.call('PEXPIRE', key, keep_ms) end
    reposition_lane(KEYS[1], ARGV[4], KEYS[3], KEYS[4], tonumber(ARGV[5]))
  end
end
return math.max(slot, resume)
