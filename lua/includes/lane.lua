-- includes/lane.lua: bookkeeping shared by the throttle scripts.
-- A lane is the bounded queue of one key. Its hash:
--   d  queued cost units (admitted, not yet dispatched to a worker)
--   c  the lane's theoretical arrival time (GCRA TAT, real µs): its next start may not come before
--      c - burst x interval
--   p  real µs until which the lane is paused (an upstream said "later", or an operator)
--   v  the lane's fair-queueing tag (µs of virtual time): the start tag of its next job while it has
--      queued work, the finish tag of its last job once idle
--   i  the lane's interval in µs (1e6 / its rate: plan, override), b  its burst, as its last admission
--      (or an operator's override) set them: the dispatcher paces the lane by them
--   n  the plan of the lane's last admission (shown by the admin API)
--   ov the control version of the operator's override (or its removal) last written into i and b
--      (lua/throttle-limits.lua): a caller whose view of the overrides is older neither writes nor
--      paces by its own i and b (lane_limits below)
--   od cost units handed to the workers whose start their worker has not confirmed yet (they still
--      hold their place in the lane's capacity: lua/throttle-started.lua frees each at its job's start)
--   ls the latest start (µs) of the lane that a worker confirmed: a late job may move the lane's later
--      hand-outs with it only while none of them has started (lua/throttle-start.lua movable_later)
--   ui, ue  an interval in µs learnt from the upstream for this lane, in force until Redis-time µs ue
--      (lua/upstream-learn.lua): while in force the lane is paced by max(i, ui)
-- plus a sorted set of queued members "<job id>|<cost>" in FIFO order (scored by predicted start), and
-- the outgoing set `:o`: members handed to the workers, scored by their start µs. A unit is free again
-- when the job's worker says it started (lua/throttle-started.lua, sent as the handler starts), or,
-- should that never come (its worker died, the message was lost), a second past its start: admission
-- drops those entries.
-- Throttle-wide: the global hash {s: next global slot, v: virtual time, p: real µs until which the
-- whole throttle is paused (capped or not), ui/ue: an interval learnt from
-- the upstream for the whole queue and until when it holds: the queue is paced by max(global interval,
-- ui) while ue > now, even with no global cap configured}; the busy set (lane id -> queued units, lanes with d > 0: the admin API's index);
-- every busy lane is in exactly one of two dispatch sets, `waiting` (scored by the real µs at which
-- its own rate, burst and pause let it start next) or `ready` (scored by its fair tag v); the global
-- hash {s: next global slot µs, v: virtual time}; the dispatched set ("<job id>|<cost>|<lane id>" ->
-- its start µs, until a worker takes the job); the wake channel the dispatchers listen on.

-- A member a worker sends back to its lane (it missed or could not use its start) is keyed by the
-- first start it was handed out for, less this offset: before every fresh member (keyed by its
-- predicted start, a positive µs), and among the ones sent back in the order they were first handed
-- out, which is their FIFO order. A member handed out again keeps that key (the lane's `:k` hash holds
-- it meanwhile), so being sent back twice does not move it behind a younger one.
local BACK_OFFSET = 4000000000000000

-- The interval and burst (as text) a caller may pace the lane by and write into it: its own, or the
-- lane's when an override newer than the caller's view of them (control `version`, which every process
-- polls every 250 ms) was written into the lane (`ov`). Without this, a process that had not seen the
-- override yet (an admission, a job sent back to its lane) wrote the replaced interval back, and the
-- lane's queued work went on at it until the next admission.
local function lane_limits(lane_key, ov, version, interval_text, burst_text)
  if ov and tonumber(ov) > (tonumber(version) or 0) then
    local st = redis.call('HMGET', lane_key, 'i', 'b')
    if st[1] then return st[1], st[2] or burst_text end
  end
  return interval_text, burst_text
end

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

-- An interval with what was learnt from the upstream on top: the larger of the two while it holds.
local function learned(interval, learned_interval, until_us, now)
  if tonumber(until_us or 0) > now then return math.max(interval, tonumber(learned_interval or 0)) end
  return interval
end

-- A shard of a sharded throttle runs its global meter at its share of the cap (src/throttle/shares.ts):
-- the interval `xi` the share allocator wrote into the shard's global hash, while it holds (`xe`, µs);
-- else the configured one (the caller passes the equal split). Never set on an unsharded throttle.
local function shared(interval, share_interval, until_us, now)
  if interval > 0 and tonumber(until_us or 0) > now and tonumber(share_interval or 0) > 0 then return tonumber(share_interval) end
  return interval
end

-- `units` x interval, stretched by the pacing margin (parts per million), as whole µs.
local function span(units, interval, margin_ppm)
  return math.floor(units * interval * (1000000 + margin_ppm) / 1000000)
end

-- The real µs at which a lane may start next: its TAT less the burst it may run ahead, or its pause.
local function lane_eligible(c, p, interval, burst, margin_ppm)
  return math.max(c - span(burst, interval, margin_ppm), p)
end

-- A lane that just got queued work (it had none): its fair tag catches up with the virtual time (it
-- joins the current round, it does not bring credit from an idle past), it enters the waiting set at
-- the instant its own rate allows, and the dispatchers are woken.
local function activate_lane(lane_key, lane_id, waiting_key, global_key, wake_key, margin_ppm)
  local st = redis.call('HMGET', lane_key, 'c', 'p', 'v', 'i', 'b')
  local virtual = tonumber(redis.call('HGET', global_key, 'v') or 0)
  local tag = math.max(tonumber(st[3] or 0), virtual)
  redis.call('HSET', lane_key, 'v', tag)
  local at = lane_eligible(tonumber(st[1] or 0), tonumber(st[2] or 0), tonumber(st[4] or 1), tonumber(st[5] or 0), margin_ppm)
  redis.call('ZADD', waiting_key, at, lane_id)
  redis.call('PUBLISH', wake_key, '1')
end

-- A busy lane whose eligibility changed (pause, resume, new limits) goes back to the waiting set at
-- its new instant; an idle lane is in neither set.
local function reposition_lane(lane_key, lane_id, waiting_key, ready_key, margin_ppm)
  local st = redis.call('HMGET', lane_key, 'c', 'p', 'd', 'i', 'b')
  if tonumber(st[3] or 0) <= 0 then return end
  redis.call('ZREM', ready_key, lane_id)
  redis.call('ZADD', waiting_key, lane_eligible(tonumber(st[1] or 0), tonumber(st[2] or 0), tonumber(st[4] or 1), tonumber(st[5] or 0), margin_ppm), lane_id)
end

-- The outgoing set `:o` expires a second after its last member's start (nothing reads it past that), and
-- the lane hash keeps that instant (field oe, Redis-time µs, written with od). From then on its members,
-- gone or not, have all started: the units od counts are free, whatever a lane that stays busy (so never
-- expires itself) still holds in od. A lane without oe (written by an older version) keeps its od.
local OUTGOING_LIFE_US = 1000000

local function outgoing_expired(expires, now)
  return expires and expires ~= '' and now >= tonumber(expires) or false
end

-- The latest start handed out in the lane (oe less the set's life: oe is written as the latest start's,
-- or as the moment an admission stretched the set's life for a job not fetched yet, settle_outgoing
-- below, which is then already past and bounds nothing), or 0 once the set has outlived it. No start of the lane is given before it: a late job's move
-- (lua/throttle-start.lua late()) puts the lane's later hand-outs past the meter less the burst, and a job
-- handed out after them must not start before them (FIFO; the lane's GCRA holds in start order).
local function latest_out(expires, now)
  if not expires or expires == '' or outgoing_expired(expires, now) then return 0 end
  return tonumber(expires) - OUTGOING_LIFE_US
end

-- The lane's outgoing units whose start is more than OUTGOING_LIFE_US past and that no worker said had
-- started are taken for started (their worker died, or its word was lost): dropped. Until then a late
-- worker holds its unit (lua/throttle-start.lua late() gives it a fresh start) and an admission counts
-- it: the lane's bound holds while a worker is late. A job no worker has taken yet (still in the
-- dispatched set: BullMQ's fetch fell behind) has not started whatever the time: it is kept, and the
-- set's life (field oe and its expiry) is stretched a second from now for it.
-- `st`: the lane's fields as lane_state reads them ({c, p, d, od, v, oe}); od and oe are updated in it.
-- Returns the units still out.
-- Units taken for started are counted in the throttle's global hash (field sl, `silent`): a worker
-- that stays silent a second past a start is dead or stalled, which operators want to know. The
-- latest start taken for started joins the lane's latest said start (ls): like a start said, it may
-- have happened, and a late job must not move later hand-outs past it (lua/throttle-start.lua).
local function count_silent(global_key, units)
  if units > 0 then redis.call('HINCRBY', global_key, 'sl', units) end
end

local function settle_outgoing(lane_key, outgoing_key, now, st, global_key, dispatched_key, lane_id)
  local out = tonumber(st[4] or 0)
  if out <= 0 then
    st[4] = 0
    return 0
  end
  if outgoing_expired(st[6], now) then
    -- Every member's start is more than a second past: all started. The set may be gone already (it
    -- expires then), and od must not outlive it.
    redis.call('DEL', outgoing_key)
    redis.call('HSET', lane_key, 'od', '0')
    count_silent(global_key, out)
    st[4] = 0
    return 0
  end
  local past = redis.call('ZRANGEBYSCORE', outgoing_key, '-inf', now - OUTGOING_LIFE_US, 'WITHSCORES')
  if #past > 0 then
    local silent, latest, kept = 0, 0, false
    for i = 1, #past, 2 do
      local m = past[i]
      if redis.call('ZSCORE', dispatched_key, m .. '|' .. lane_id) then
        kept = true
      else
        silent = silent + member_cost(m)
        latest = math.max(latest, tonumber(past[i + 1]))
        redis.call('ZREM', outgoing_key, m)
      end
    end
    if silent > 0 then
      count_silent(global_key, silent)
      out = math.max(0, out - silent)
      local ls = tonumber(redis.call('HGET', lane_key, 'ls') or 0)
      if latest > ls then redis.call('HSET', lane_key, 'od', out, 'ls', whole(latest)) else redis.call('HSET', lane_key, 'od', out) end
    end
    if kept and tonumber(st[6] or 0) < now + OUTGOING_LIFE_US then
      st[6] = whole(now + OUTGOING_LIFE_US)
      redis.call('HSET', lane_key, 'oe', st[6])
      redis.call('PEXPIRE', outgoing_key, whole(OUTGOING_LIFE_US / 1000))
    end
  end
  st[4] = out
  return out
end

-- A lane that has no queued work any more leaves both dispatch sets.
local function deactivate_lane(lane_id, waiting_key, ready_key)
  redis.call('ZREM', waiting_key, lane_id)
  redis.call('ZREM', ready_key, lane_id)
end
