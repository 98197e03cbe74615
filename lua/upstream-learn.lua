-- upstream-learn.lua: what an upstream said after one call becomes the learned interval the
-- dispatcher paces by (fields ui: learned minimum µs between starts, ue: Redis µs until which ui
-- holds; um: the interval that drew the last 429, 0 when the state came from a budget). Atomic, so
-- every worker process reads and changes one shared state. The same algorithm in TypeScript:
-- src/upstream/budget.ts (property-tested against this script).
-- KEYS[1]  state: the throttle's global hash (queue scope) or a lane hash (lane scope)
-- ARGV[1]  now: µs since the epoch, or '' to read Redis TIME
-- ARGV[2]  kind: 'budget' (remaining, resetUs), 'throttled' (a 429 without a budget) or 'ok'
-- ARGV[3]  configuredUs: the configured interval in µs; a lane's own `i` replaces it (lane scope)
-- ARGV[4]  floorUs: the slowest interval AIMD may reach in µs (0: 20 x the configured interval)
-- ARGV[5]  holdUs: how long a decrease holds (µs) before the configured rate is tried again
-- ARGV[6]  lane: '1' for a lane hash (written only when it exists, never created), '0' for the global hash
-- ARGV[7]  remaining: budget units left (kind budget)
-- ARGV[8]  resetUs: µs until the budget is whole again (kind budget)
-- ARGV[9]  startedUs: the start instant of the call that was answered (kind throttled)
-- ARGV[10]  increaseSteps: successes that add back the configured rate once (additive increase)
-- ARGV[11]  shards: the throttle's shards (1: not sharded); a queue budget is then the whole queue's,
--           and this shard takes the part its share of the cap (`xi` while `xe` holds) is of the cap,
--           else an equal part, at least 1 while anything is left
-- ARGV[12]  capPerSecond: the throttle's global cap in starts per second (0: none)
-- returns {written 0|1, ui, ue, um}: the state after the call (all 0 for a lane that does not exist)
-- @include now

local now = now_us(ARGV[1])
local key = KEYS[1]
local lane = ARGV[6] == '1'
if lane and redis.call('EXISTS', key) == 0 then return {0, 0, 0, 0} end
local st = redis.call('HMGET', key, 'ui', 'ue', 'um', 'i', 'xi', 'xe')
local configured = tonumber(ARGV[3])
-- A lane is paced by its own interval (its plan, or an operator's override): learning never goes below it.
if lane and st[4] then configured = tonumber(st[4]) end
local floor_us = tonumber(ARGV[4])
if floor_us <= 0 then floor_us = configured * 20 else floor_us = math.max(floor_us, configured) end
local hold = tonumber(ARGV[5])
local ui, ue, um = tonumber(st[1] or 0), tonumber(st[2] or 0), tonumber(st[3] or 0)
local live = ue > now
-- Expired state is the configured rate again.
if not live then ui, ue, um = configured, now, 0 end
local kind = ARGV[2]

if kind == 'budget' then
  -- The upstream's own word: spread what is left over the time until the reset, never faster than configured.
  local reset = tonumber(ARGV[8])
  local remaining = tonumber(ARGV[7])
  local shards = tonumber(ARGV[11] or 1)
  if not lane and shards > 1 and remaining > 0 then
    local xi, cap = tonumber(st[5] or 0), tonumber(ARGV[12] or 0)
    if cap > 0 and xi > 0 and tonumber(st[6] or 0) > now then
      -- Shares are whole starts per second, written as µs between starts: read back as the whole number.
      remaining = math.max(1, math.floor(remaining * math.floor(1e6 / xi + 0.5) / cap))
    else
      remaining = math.max(1, math.floor(remaining / shards))
    end
  end
  ui = math.max(configured, math.floor(reset / math.max(1, remaining)))
  ue = now + reset
  um = 0
elseif kind == 'throttled' then
  -- One decrease per overshoot: a 429 for a call that started before the last decrease answers for
  -- the rate before it.
  if live and um > 0 and tonumber(ARGV[9]) < ue - hold then return {0, ui, ue, um} end
  um = ui
  ui = math.min(floor_us, math.max(configured, ui * 2))
  ue = now + hold
else
  if not live or um == 0 then return {0, ui, ue, um} end
  -- Additive increase of the rate (1/steps of the configured rate per success), up to 95% of the
  -- rate that drew the last 429, never faster than configured, never slower than the floor.
  local c = configured * tonumber(ARGV[10])
  local next_ui = math.max(configured, math.floor(um * 20 / 19), math.floor(ui * c / (c + ui)))
  next_ui = math.min(floor_us, next_ui)
  if next_ui == ui then return {0, ui, ue, um} end
  ui = next_ui
end
redis.call('HSET', key, 'ui', int(ui), 'ue', int(ue), 'um', int(um))
return {1, ui, ue, um}
