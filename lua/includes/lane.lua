-- includes/lane.lua: bookkeeping shared by the throttle scripts.
-- A lane is the bounded queue of one key. Its hash:
--   s  next free start slot, as a *virtual* time in µs (real = s + o)
--   o  offset in µs added to every virtual slot; raising it shifts all reserved slots at once
--   c  the earliest real µs the next start may happen after the starts already handed out
--   f  the lane's fair-share TAT (real µs): while the global cap is contended it may not start before it
--   p  real µs until which the lane is paused (an upstream said "later")
--   d  queued cost units (admitted, not yet started), u  of which hold a reserved slot
--   n  the plan of the lane's last admission (shown by the admin API)
--   g:<member>  the real µs of a global slot claimed by a job that was sent back
-- plus a sorted set of queued members "<job id>|<cost>" scored by predicted start µs, and a sorted
-- set of reserved slots (member -> virtual µs). The throttle's busy set holds the ids of lanes with d > 0,
-- scored by d: the busy-lane index the admin API lists the busiest lanes from (lua/admin-lanes-page.lua).

-- Members carry the cost so that the lane can be repaired from the member alone.
local function member_cost(member)
  return tonumber(string.match(member, '|(%d+)$'))
end

-- After d changed: a lane with queued work never expires (its count must survive any wait) and is
-- in the busy set, scored by its depth; an empty lane is dropped from the busy set and expires once
-- its slots are past.
local function settle_lane(lane_key, busy_key, lane_id, depth, now, latest_slot)
  if depth > 0 then
    redis.call('PERSIST', lane_key)
    redis.call('ZADD', busy_key, depth, lane_id)
  else
    redis.call('ZREM', busy_key, lane_id)
    redis.call('PEXPIRE', lane_key, ttl(math.max(0, latest_slot - now) / 1000))
  end
end

-- The interval between two starts of one lane: its own, or its fair share of the global rate when
-- `busy` lanes compete for it (each busy lane gets one start per busy x global interval).
local function effective_interval(lane_interval, global_interval, busy)
  if global_interval <= 0 then return lane_interval end
  return math.max(lane_interval, math.max(busy, 1) * global_interval)
end

-- `units` x interval, stretched by the pacing margin (parts per million), as whole µs.
local function span(units, interval, margin_ppm)
  return math.floor(units * interval * (1000000 + margin_ppm) / 1000000)
end

-- The real µs of the lane's next free slot.
local function next_free(state_s, state_o)
  return tonumber(state_s or 0) + tonumber(state_o or 0)
end
