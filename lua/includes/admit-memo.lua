-- includes/admit-memo.lua: what the admissions of one script run (a batch, src/redis/scripts.ts) read or do
-- once. A throttle's global hash is only read by an admission (the dispatcher, the gate, pauses and
-- the shares allocator write it, never inside an admission batch): the first admission of a throttle in
-- the run reads it, the others of the same throttle reuse the answer.
local global_memo = {}

-- HMGET of the global hash's fields s, p, xi, xe, v (the meter, the pause, the share and its expiry,
-- the virtual time).
local function global_state(key)
  local g = global_memo[key]
  if not g then
    g = redis.call('HMGET', key, 's', 'p', 'xi', 'xe', 'v')
    global_memo[key] = g
  end
  return g
end

-- The dispatchers are woken once per run and throttle: a second message in the same instant wakes
-- nobody who was not woken by the first.
local woken_memo = {}

local function wake_once(channel)
  if not woken_memo[channel] then
    woken_memo[channel] = true
    redis.call('PUBLISH', channel, '1')
  end
end

-- A lane queue's last score and size: read by the run's first admission into the lane, then kept as
-- the run's admissions append to it (nothing else changes a lane queue inside an admission batch).
local tail_memo = {}

local function lane_tail(key)
  local t = tail_memo[key]
  if not t then
    local last = redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES')
    -- No last member: the set is empty (a new or idle lane, every admission of 100,000 keys), no ZCARD to ask.
    local count = 0
    if last[2] then count = redis.call('ZCARD', key) end
    t = { last = tonumber(last[2]), count = count }
    tail_memo[key] = t
  end
  return t
end

-- A lane's fields c, p, d, od, v, oe, ov: read by the run's first admission into the lane, then kept up to
-- date by the admissions (only they write the lane inside an admission batch: d, od, v; never c, p or oe).
local lane_memo = {}

local function lane_state(key)
  local st = lane_memo[key]
  if not st then
    st = redis.call('HMGET', key, 'c', 'p', 'd', 'od', 'v', 'oe', 'ov')
    lane_memo[key] = st
  end
  return st
end

-- The throttle's own numbers (capacity, lane interval, burst, global interval, max wait, margin): the
-- same texts in every admission of a throttle, and Lua's tonumber() of a text is a strtod() each time.
-- They are parsed again only when a text differs from the previous admission's (equal Lua strings are
-- one object: six pointer compares); one table per change, none per admission. A pure cache of texts to
-- numbers, so it outlives the run where it can: in a function library (src/redis/lua-functions.ts) an
-- upper-case local is made once per load, and a throttle's admissions one by one (one in flight) parse
-- nothing after the first; under EVAL it is made again on every call, as before.
local LIMITS_MEMO = { last = {} }

local function throttle_numbers(capacity, lane_interval, burst, global_interval, max_wait, margin)
  local m = LIMITS_MEMO.last
  if m[1] ~= capacity or m[2] ~= lane_interval or m[3] ~= burst or m[4] ~= global_interval or m[5] ~= max_wait or m[6] ~= margin then
    m = { capacity, lane_interval, burst, global_interval, max_wait, margin,
      tonumber(capacity), tonumber(lane_interval), tonumber(burst), tonumber(global_interval), tonumber(max_wait), tonumber(margin) }
    LIMITS_MEMO.last = m
  end
  return m
end
