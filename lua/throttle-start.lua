-- throttle-start.lua: the outflow gate, called by a worker when a job is about to start.
-- KEYS[1]  lane: hash {s, o, c, p, d, u, g:<member>} (see includes/lane.lua)
-- KEYS[2]  laneQueue: sorted set of "<job id>|<cost>" (admitted, not yet started)
-- KEYS[3]  busy: the throttle's busy set
-- KEYS[4]  global: the throttle's global meter hash {s} (untouched when there is no global cap)
-- KEYS[5]  laneReservations: member -> virtual µs of the slot it holds
-- ARGV[1]  now: µs since the epoch, or '' to read Redis TIME
-- ARGV[2]  member: the job's member "<job id>|<cost>"
-- ARGV[3]  cost: units
-- ARGV[4]  laneIntervalUs: lane interval in µs
-- ARGV[5]  burst: lane burst (units that may start early)
-- ARGV[6]  globalIntervalUs: global interval in µs (0: no global cap)
-- ARGV[7]  leadUs: lead in µs, a job whose start is at most this far ahead is told its start (and waits for it)
-- ARGV[8]  marginPpm: pacing margin in parts per million; slots are spaced this much wider than the rate, so that
--          timing jitter between worker processes can never put rate + 1 starts inside one second
-- ARGV[9]  laneId: lane id
-- ARGV[10] lateToleranceUs: lateness tolerance in µs; a reserved slot missed by more than this shifts the lane's later
--          reservations instead of crowding them
-- ARGV[11] heldUs: '' or the real µs of a start this job was given a moment ago and missed (its worker fell
--          behind): treated as its reserved slot
-- returns {1, start µs, now µs}  go: start the job at `start` (now, or within the lead)
--         {0, wake µs, now µs}   not yet: the job holds its slot; come back at `wake` (slot less the lead)
-- A job gets its slot the first time it reaches the gate, in arrival order, so a backlog drains one
-- interval apart with no herd and no slot shared. When a job cannot start at its slot (it came late, the
-- lane was paused, the global meter is ahead), every later reserved slot of the lane moves by the same
-- amount: one shift of the lane's offset, never a crowded start. Only the first start of a job takes it
-- out of the lane's queue; a retry or a re-run after a crashed worker is paced like any start.
-- @include now
-- @include lane

local now = now_us(ARGV[1])
local member = ARGV[2]
local cost = tonumber(ARGV[3])
local lane_interval = tonumber(ARGV[4])
local burst = tonumber(ARGV[5])
local global_interval = tonumber(ARGV[6])
local lead = tonumber(ARGV[7])
local margin = tonumber(ARGV[8])
local lane_id = ARGV[9]
local tolerance = tonumber(ARGV[10])
local claim_field = 'g:' .. member

local state = redis.call('HMGET', KEYS[1], 's', 'o', 'c', 'p', 'd', 'u', claim_field, 'f')
local virtual_next = tonumber(state[1] or 0)
local offset = tonumber(state[2] or 0)
local committed = tonumber(state[3] or 0)
local paused = tonumber(state[4] or 0)
local depth = tonumber(state[5] or 0)
local reserved_units = tonumber(state[6] or 0)
local claim = tonumber(state[7] or -1)
local fair = tonumber(state[8] or 0)
if claim >= 0 then redis.call('HDEL', KEYS[1], claim_field) end
local queued = redis.call('ZSCORE', KEYS[2], member) ~= false
-- The lane's own spacing, and its fair share of the global cap: while the cap is contended each busy
-- lane may start once per (busy lanes x global interval), worked out at each start (it follows the
-- busy lanes as they come and go). When the cap has room, a lane runs at its own rate.
local interval = lane_interval
local fair_step = span(cost, effective_interval(lane_interval, global_interval, redis.call('ZCARD', KEYS[3])), margin)
local step = span(cost, lane_interval, margin)
local lane_step = step
local early = burst * interval

-- 1. The job's slot: a start it was given and missed (its worker fell behind), the slot it reserved,
--    or the lane's next free one.
local held = ARGV[11] ~= '' and tonumber(ARGV[11]) or nil
local at
if held then
  at = held
  -- Its missed start was the latest handed out: take it back, so the job need not wait a whole
  -- interval after a start that never happened.
  if committed <= held + step then committed = held end
else
  local v = redis.call('ZSCORE', KEYS[5], member)
  if v then
    at = tonumber(v) + offset
    redis.call('ZREM', KEYS[5], member)
    if queued then reserved_units = reserved_units - cost end
  end
end
local fresh = at == nil
at = at or math.max(now, virtual_next + offset - early)

-- 2. The earliest start that crowds nothing: not before now, the slot, the next start the lane allows
--    after those handed out, a pause, or (with a global cap) the global meter — unless the job already
--    holds a global slot.
local start = math.max(now, at, committed - early, paused)
local global_step = span(cost, global_interval, margin)
local global_slot = 0
local holds_global = claim >= 0 and start <= claim + tolerance
if global_interval > 0 then
  if holds_global then
    start = math.max(start, claim)
  else
    global_slot = tonumber(redis.call('HGET', KEYS[4], 's') or 0)
    -- Contended (the global meter is booked past now): a lane over its fair share waits its turn.
    if global_slot > now then start = math.max(start, fair - early) end
    start = math.max(start, global_slot)
  end
end

-- 3. Moving the slot. A fresh slot just moves (nothing is reserved after it). A reserved slot that
--    moves by more than the tolerance drags every later reservation along (one write: the offset), so
--    the jobs holding them come back when they can start. A missed start moves nothing else.
if fresh then
  virtual_next = math.max(virtual_next, start - offset) + lane_step
elseif not held and start - at > tolerance then
  offset = offset + (start - at)
end

-- 4. Not within the lead: hold the slot (and, for an idle key's first job, the global slot) and come
--    back just before it.
if start - now > lead then
  redis.call('ZADD', KEYS[5], start - offset, member)
  local keep = ttl((virtual_next + offset - now) / 1000)
  if redis.call('PTTL', KEYS[5]) < keep then redis.call('PEXPIRE', KEYS[5], keep) end
  if queued then reserved_units = reserved_units + cost end
  -- Only an idle key's first job claims its global slot ahead (the other jobs of busy keys take
  -- theirs when they come back): claims by busy keys would run the global meter ahead of an idle
  -- key's first job.
  local idle_first = queued and depth == cost and redis.call('ZCARD', KEYS[5]) == 1
  if global_interval > 0 and not holds_global and idle_first then
    redis.call('HSET', KEYS[4], 's', start + global_step)
    redis.call('PEXPIRE', KEYS[4], ttl((start + global_step - now) / 1000))
    redis.call('HSET', KEYS[1], claim_field, start)
  elseif holds_global then
    redis.call('HSET', KEYS[1], claim_field, claim)
  end
  redis.call('HSET', KEYS[1], 's', virtual_next, 'o', offset, 'u', reserved_units)
  settle_lane(KEYS[1], KEYS[3], lane_id, depth, now, virtual_next + offset)
  return {0, start - lead, now}
end

-- 5. Go. The next start of this lane may not come before this one plus its (fair-share) spacing.
if global_interval > 0 and not holds_global then
  redis.call('HSET', KEYS[4], 's', math.max(global_slot, start) + global_step)
  redis.call('PEXPIRE', KEYS[4], ttl((math.max(global_slot, start) + global_step - now) / 1000))
end
committed = math.max(committed, start + step)
if global_interval > 0 then fair = math.max(fair, start) + fair_step end
if queued then
  redis.call('ZREM', KEYS[2], member)
  depth = depth - cost
end
redis.call('HSET', KEYS[1], 's', virtual_next, 'o', offset, 'c', committed, 'f', fair, 'd', depth, 'u', reserved_units)
settle_lane(KEYS[1], KEYS[3], lane_id, depth, now, math.max(virtual_next + offset, committed))
return {1, start, now}
