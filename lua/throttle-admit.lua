-- throttle-admit.lua: admit one job into a lane (a bounded queue drained at a fixed rate), atomically.
-- KEYS[1]  lane: hash {s, o, c, p, d, u} (see includes/lane.lua)
-- KEYS[2]  laneQueue: sorted set of "<job id>|<cost>" scored by predicted start µs
-- KEYS[3]  busy: the throttle's busy set, lane id -> queued cost units, lanes with queued work
-- KEYS[4]  job: the BullMQ job hash of this job id (only tested for existence: idempotent submit)
-- KEYS[5]  pending: the throttle's pending admissions, "<job id>|<cost>|<lane id>" -> µs after which a job
--          that does not exist yet is taken to be lost (its submitter died before the enqueue): lane
--          repair looks only here, never across every lane
-- ARGV[1]  now: µs since the epoch, or '' to read Redis TIME
-- ARGV[2]  jobId: the job id
-- ARGV[3]  cost: integer >= 1, units of the lane's capacity and rate
-- ARGV[4]  capacity: units the lane may hold
-- ARGV[5]  laneIntervalUs: µs between two unit starts (1e6 / rate per second)
-- ARGV[6]  burst: lane burst, units that may start early, back to back
-- ARGV[7]  globalIntervalUs: global interval in µs (0: no global cap)
-- ARGV[8]  maxWaitUs: max wait in µs (0: none), refuse when the predicted start is further away
-- ARGV[9]  laneId: lane id (its member in the busy set)
-- ARGV[10] marginPpm: pacing margin in parts per million
-- ARGV[11] idempotent: 1 when the job id comes from the caller (an idempotency key): check for a duplicate
-- ARGV[12] enqueueWithinUs: µs after admission by which the submitter has enqueued the job or given up
-- ARGV[13] planName: the lane's plan name ('' or absent: none), kept in the lane hash (field n) for the admin view
-- returns {code, a, b, now}:
--   { 1, start µs, position, now}  admitted; position = jobs ahead of it in the lane
--   { 2, start µs, position, now}  duplicate, still queued: the first job
--   { 3, 0, 0, now}                duplicate that already left the lane (running or finished)
--   {-1, retry µs, depth, now}     queue_full: retry = until enough queued work has started
--   {-2, retry µs, wait µs, now, depth}  wait_too_long: retry = until the predicted wait fits
-- Admission moves no meter: the predicted start is the lane's next free slot plus the queued work
-- ahead that holds no slot yet.
-- @include now
-- @include lane

local now = now_us(ARGV[1])
local job_id = ARGV[2]
local cost = tonumber(ARGV[3])
local capacity = tonumber(ARGV[4])
local lane_interval = tonumber(ARGV[5])
local burst = tonumber(ARGV[6])
local global_interval = tonumber(ARGV[7])
local max_wait = tonumber(ARGV[8])
local lane_id = ARGV[9]
local margin = tonumber(ARGV[10])
local member = job_id .. '|' .. ARGV[3]

if ARGV[11] == '1' then
  local queued_at = redis.call('ZSCORE', KEYS[2], member)
  if queued_at then
    return {2, tonumber(queued_at), redis.call('ZRANK', KEYS[2], member), now}
  end
  if redis.call('EXISTS', KEYS[4]) == 1 then return {3, 0, 0, now} end
end

local state = redis.call('HMGET', KEYS[1], 's', 'o', 'c', 'p', 'd', 'u')
local slot = next_free(state[1], state[2])
local committed = tonumber(state[3] or 0)
local paused = tonumber(state[4] or 0)
local depth = tonumber(state[5] or 0)
-- Queued work that already holds a slot is behind `slot` already; the rest queues after it.
local unreserved = depth - tonumber(state[6] or 0)
local busy = redis.call('ZCARD', KEYS[3])
if depth == 0 then busy = busy + 1 end
local interval = effective_interval(lane_interval, global_interval, busy)
-- The first start this lane can make: its meter, less the burst tolerance, never in the past.
local base = math.max(now, slot - burst * interval, committed - burst * interval, paused)

if depth + cost > capacity then
  -- Room appears when the queued job holding the (depth + cost - capacity)-th unit starts.
  local need = depth + cost - capacity
  local ahead, at = 0, base
  local queued = redis.call('ZRANGE', KEYS[2], 0, need - 1)
  for _, m in ipairs(queued) do
    at = base + span(ahead, interval, margin)
    ahead = ahead + member_cost(m)
    if ahead >= need then break end
  end
  -- A lane whose head is overdue (workers behind or stopped) has room as soon as one starts.
  return {-1, math.max(1000, at - now), depth, now}
end

local start = base + span(unreserved, interval, margin)
if max_wait > 0 and start - now > max_wait then
  return {-2, start - now - max_wait, start - now, now, depth}
end

local position = redis.call('ZCARD', KEYS[2])
redis.call('ZADD', KEYS[2], start, member)
redis.call('ZADD', KEYS[5], now + tonumber(ARGV[12]), member .. '|' .. lane_id)
redis.call('HSET', KEYS[1], 'd', depth + cost)
if ARGV[13] and ARGV[13] ~= '' then redis.call('HSET', KEYS[1], 'n', ARGV[13]) end
settle_lane(KEYS[1], KEYS[3], lane_id, depth + cost, now, 0)
return {1, start, position, now}
