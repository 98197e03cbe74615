-- throttle-admit.lua: admit one job into a lane (a bounded queue drained at a fixed rate), atomically.
-- KEYS[1]  lane: hash {d, c, p, v, i, b, n} (see includes/lane.lua)
-- KEYS[2]  laneQueue: sorted set of "<job id>|<cost>" in FIFO order, scored by predicted start µs
-- KEYS[3]  busy: the throttle's busy set, lane id -> queued cost units, lanes with queued work
-- KEYS[4]  job: the BullMQ job hash of this job id (idempotent submit; written here when the job is parked)
-- KEYS[5]  pending: the throttle's pending admissions, "<job id>|<cost>|<lane id>" -> µs after which a job
--          that does not exist yet is taken to be lost (its submitter died before the enqueue): lane
--          repair looks only here, never across every lane. Only an admission without its job (a
--          readmit, a schedule() call) is indexed: a parked job is written with its unit, atomically
-- KEYS[6]  waiting: the throttle's waiting set (busy lanes by the instant their own rate lets them start)
-- KEYS[7]  global: the throttle's global hash {s, v, p}
-- KEYS[8]  wake: the channel the dispatchers listen on (published, never stored)
-- KEYS[9]  laneOutgoing: the lane's jobs handed to the workers, by start µs (they hold capacity until their
--          worker says they started, lua/throttle-started.lua)
-- KEYS[10] delayed: the BullMQ queue's delayed set (the job is parked there, BullMQ's score encoding)
-- KEYS[11] events: the throttle's job event stream (src/throttle/events.ts): the 'admitted' event
-- KEYS[12] dispatched: the throttle's jobs handed out and not taken by a worker yet ("<job id>|<cost>|<lane id>" ->
--          start µs): such a job past its start has not started, whatever the time (includes/lane.lua)
-- ARGV[1]  now: µs since the epoch, or '' to read Redis TIME
-- ARGV[2]  jobId: the job id
-- ARGV[3]  cost: integer >= 1, units of the lane's capacity and rate
-- ARGV[4]  capacity: units the lane may hold
-- ARGV[5]  laneIntervalUs: µs between two unit starts (1e6 / rate per second)
-- ARGV[6]  burst: lane burst, units that may start early, back to back
-- ARGV[7]  globalIntervalUs: global interval in µs (0: no global cap)
-- ARGV[8]  maxWaitUs: max wait in µs (0: none), refuse when the predicted wait is longer
-- ARGV[9]  laneId: lane id (its member in the busy set)
-- ARGV[10] marginPpm: pacing margin in parts per million
-- ARGV[11] idempotent: 1 when the job id comes from the caller (an idempotency key): check for a duplicate
-- ARGV[12] enqueueWithinUs: µs after admission by which the submitter has enqueued the job or given up
-- ARGV[13] planName: the lane's plan name ('' or absent: none), kept in the lane hash (field n) for the admin view
-- ARGV[14] quotas: the queue's spend quotas with their windows (includes/quota.lua; '' or absent = none)
-- ARGV[15] controlVersion: the control version the caller's view of operators' overrides is at (0:
--          none); a lane whose override is newer (its field ov) keeps its interval and burst
-- ARGV[16] park: '1' to write the BullMQ delayed job with the admission (submit); '' or absent: the
--          member only, indexed in pending (readmit, schedule(): the caller has or needs no job)
-- ARGV[17] jobName: the BullMQ job name (the throttle's name)
-- ARGV[18] dataHead: the job data JSON up to the predicted start: '{"l":<lane>,"c":<cost>,"p":<payload>'
-- ARGV[19] dataTail: the rest of the job data JSON after ',"s":<start ms>', closing brace included
-- ARGV[20] optsTail: the job options JSON after '{"jobId":"<id>"', closing brace included (delay = parkMs)
-- ARGV[21] parkMs: the BullMQ delay the job is parked with (the dispatcher promotes it long before), a whole number
-- ARGV[22] eventHead: the 'admitted' event's detail JSON up to ',"startsAtMs":..' ('{"lane":..,"tenant":..')
-- ARGV[23] eventMaxLen: the event stream's approximate cap (MAXLEN ~)
-- returns {code, a, b, now}:
--   { 1, start µs, position, now}  admitted; start = predicted start; position = jobs ahead of it in the lane
--   { 2, start µs, position, now}  duplicate, still queued: the first job
--   { 3, 0, 0, now}                duplicate that already left the lane (dispatched, running or finished)
--   {-1, retry µs, held, now}      queue_full: retry = until enough of the lane's work has started
--                                  (held: units queued, or handed out and not yet started by their worker)
--   {-2, retry µs, wait µs, now, depth}  wait_too_long: retry = until the predicted wait fits
--   {-3, retry µs, held, now, quota index}  quota_exhausted: a refusing quota's window is spoken for
--                                  (started in it, plus this key's queued work for a key quota);
--                                  retry = until that window resets
-- Admission moves no meter: the dispatcher (throttle-dispatch.lua) decides when each queued job starts.
-- The predicted start is the lane's next start plus its queued work at its share of the rate: its own
-- interval, or, under a global cap, one start per round of the busy lanes.
-- A parked job is BullMQ 6's delayed job (test/integration/throttle/bull-format.test.ts holds it to
-- queue.add's): the job hash (name, data, opts, timestamp, delay, priority) exactly, and its member in the
-- delayed set at (timestamp + delay) * 4096 plus a sequence within the ms (counted within this run).
-- BullMQ's own 'added' / 'delayed' stream entries, its id counter, meta and marker are left out: nothing
-- reads them (sluice's job events are its own stream, custom ids never use the counter, and a parked job
-- falls due only an hour later: includes/bull-park.lua).
-- @include now
-- @include lane
-- @include quota
-- @include bull-park
-- @include admit-memo

local now = now_us(ARGV[1])
local job_id = ARGV[2]
-- A cost is nearly always 1; the throttle's numbers are parsed once per batch (includes/admit-memo.lua).
local cost = ARGV[3] == '1' and 1 or tonumber(ARGV[3])
local limits = throttle_numbers(ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[10])
local capacity, lane_interval, burst, global_interval, max_wait, margin = limits[7], limits[8], limits[9], limits[10], limits[11], limits[12]
local lane_id = ARGV[9]
local member = job_id .. '|' .. ARGV[3]

if ARGV[11] == '1' then
  local predicted = redis.call('ZSCORE', KEYS[2], member)
  if predicted then
    -- A member sent back by a worker is keyed below every fresh one (includes/lane.lua): it is next.
    predicted = tonumber(predicted)
    if predicted < 0 then predicted = now end
    -- An admission whose submitter (of an older version) died before its enqueue: the job now comes with it.
    if ARGV[16] == '1' and redis.call('EXISTS', KEYS[4]) == 0 then
      park_job(KEYS[4], KEYS[10], job_id, ARGV[17], ARGV[18] .. ',"s":' .. int(math.ceil(predicted / 1000)) .. ARGV[19], ARGV[20], ARGV[21])
    end
    return {2, predicted, redis.call('ZRANK', KEYS[2], member), now}
  end
  if redis.call('EXISTS', KEYS[4]) == 1 then return {3, 0, 0, now} end
end

local state = lane_state(KEYS[1])
-- An override newer than this caller's view of them: the lane's interval and burst hold, not the caller's.
local interval_text, burst_text = ARGV[5], ARGV[6]
if state[7] then
  interval_text, burst_text = lane_limits(KEYS[1], state[7], ARGV[15], interval_text, burst_text)
  lane_interval, burst = tonumber(interval_text), tonumber(burst_text)
end
local depth = tonumber(state[3] or 0)
-- A unit is the lane's until its job starts: queued, or handed to a worker and not started yet.
settle_outgoing(KEYS[1], KEYS[9], now, state, KEYS[7], KEYS[12], lane_id)
local held = depth + state[4]
local g = global_state(KEYS[7])
global_interval = shared(global_interval, g[3], g[4], now)
-- The busy lanes share the global rate: counted only under a global cap (effective_interval reads them then).
local busy = 0
if global_interval > 0 then
  busy = redis.call('ZCARD', KEYS[3])
  if depth == 0 then busy = busy + 1 end
end
local interval = effective_interval(lane_interval, global_interval, busy)
-- The first start this lane can make: its own meter (less the burst), its latest hand-out, a pause, the
-- global meter.
local base = math.max(now, lane_eligible(tonumber(state[1] or 0), tonumber(state[2] or 0), lane_interval, burst, margin))
-- Never before a start already handed out in the lane (latest_out): a late job's move can put those past
-- the meter less the burst, and the dispatcher gives no start before them (lua/throttle-dispatch.lua).
base = math.max(base, latest_out(state[6], now))
base = math.max(base, tonumber(g[2] or 0))
if global_interval > 0 then base = math.max(base, tonumber(g[1] or 0)) end

if held + cost > capacity then
  -- Room appears when the job holding the (held + cost - capacity)-th unit starts: first the jobs
  -- handed out (their starts are known; one whose start is past and that its worker has not said it
  -- started is late: by the lateness tolerance it has started or asked for a fresh start, which the
  -- next refusal then names), then the queued ones at their predicted starts.
  local need = held + cost - capacity
  local freed, at = 0, base
  local out = redis.call('ZRANGE', KEYS[9], '0', '-1', 'WITHSCORES')
  -- (The lateness tolerance as src/throttle/config.ts derives it, half the margin, 1 ms to LATE_TOLERANCE_US; with a
  -- pacing margin below the send headroom the margin here is the headroom's, and this a little later.)
  local late_by = now + math.max(1000, math.min(5000, math.floor(margin / 2)))
  for i = 1, #out, 2 do
    freed = freed + member_cost(out[i])
    local t = tonumber(out[i + 1])
    if t <= now then t = late_by end
    if i == 1 or t > at then at = t end
    if freed >= need then break end
  end
  if freed < need then
    local ahead = 0
    for _, m in ipairs(redis.call('ZRANGE', KEYS[2], '0', need - freed - 1)) do
      at = base + span(ahead, interval, margin)
      ahead = ahead + member_cost(m)
      if freed + ahead >= need then break end
    end
  end
  return {-1, math.max(1000, at - now), held, now}
end

local start = base + span(depth, interval, margin)
-- Spend quotas, in the window the job would start in. A key quota counts the lane's queued work as
-- spoken for too (it starts first); a queue quota counts what has started (the queued work of every
-- lane is not summed on each admission). Refusing: 429 until the window resets; deferring: the job is
-- predicted to start in the next window at the earliest.
local quotas = parse_quotas(ARGV[14])
-- Mid-migration the counters cannot be read safely: admitted unchecked (the dispatcher, which skips its
-- rounds while the slot moves, still never starts more than a window allows).
if #quotas > 0 and quota_slot_migrating(KEYS[1]) then quotas = {} end
for _, q in ipairs(quotas) do
  local key, window_end = quota_window(q, KEYS[1], KEYS[7], start)
  if key then
    local pending = 0
    if q.lane then
      if q.cost then pending = depth else pending = redis.call('ZCARD', KEYS[2]) end
    end
    if tonumber(redis.call('GET', key) or 0) + pending + quota_units(q, cost) > q.limit then
      if q.refuse then return {-3, window_end - now, held, now, q.index} end
      start = math.max(start, window_end)
    end
  end
end
if max_wait > 0 and start - now > max_wait then
  return {-2, start - now - max_wait, start - now, now, held}
end

-- Members are scored by their predicted start, kept increasing so that the order is FIFO (a job
-- handed back by a worker goes before the first).
local tail = lane_tail(KEYS[2])
local order = start
if tail.last and tail.last >= order then order = tail.last + 1 end
local position = tail.count
-- Numbers go to redis.call as text where it is at hand (whole(), includes/now.lua): Redis's own
-- '%.17g' of each number was a measurable part of an admission.
redis.call('ZADD', KEYS[2], whole(order), member)
tail.last, tail.count = order, position + 1
local start_ms = whole(math.ceil(start / 1000))
if ARGV[16] == '1' then
  park_job(KEYS[4], KEYS[10], job_id, ARGV[17], ARGV[18] .. ',"s":' .. start_ms .. ARGV[19], ARGV[20], ARGV[21])
  redis.call('XADD', KEYS[11], 'MAXLEN', '~', ARGV[23], '*', 'e', 'admitted', 'j', job_id, 'd',
    ARGV[22] .. ',"startsAtMs":' .. start_ms .. ',"position":' .. whole(position) .. '}')
else
  redis.call('ZADD', KEYS[5], now + tonumber(ARGV[12]), member .. '|' .. lane_id)
end
-- The lane's depth and limits (its plan name for the admin view), then settle_lane for a lane with
-- queued work. A lane that had none is activated as activate_lane (includes/lane.lua) does, from what
-- was read above (one HSET instead of three calls): its fair tag catches up with the virtual time, it
-- enters the waiting set at the instant its own rate allows, the dispatchers are woken. Only such a lane
-- carries a TTL (every script sets one at depth 0 only), so only then is there one to remove.
-- The depth as text: an idle lane's is the cost as sent; the interval and burst as sent. One HSET of
-- the fields as they are (no table of fields and unpack() per admission), the plan name only when given.
local depth_text = depth == 0 and ARGV[3] or whole(depth + cost)
local plan = ARGV[13]
if plan == '' then plan = nil end
state[3] = depth + cost
if depth == 0 then
  state[5] = math.max(tonumber(state[5] or 0), tonumber(g[5] or 0))
  if plan then
    redis.call('HSET', KEYS[1], 'd', depth_text, 'i', interval_text, 'b', burst_text, 'n', plan, 'v', whole(state[5]))
  else
    redis.call('HSET', KEYS[1], 'd', depth_text, 'i', interval_text, 'b', burst_text, 'v', whole(state[5]))
  end
  redis.call('PERSIST', KEYS[1])
  redis.call('ZADD', KEYS[3], depth_text, lane_id)
  -- In the waiting set from the instant its own rate allows, or from now when that is past: the same
  -- instant for the dispatcher, which looks only from now on. A past instant put every new lane at one
  -- score (0 for a lane never seen), and a sorted set's insert and removal among members of one score
  -- compare member strings down the skiplist: 2.3-3.0 against 0.7-1.2 µs per ZADD into 100,000 members
  -- (bench/sorted-set-ties.ts).
  redis.call('ZADD', KEYS[6], whole(math.max(now, lane_eligible(tonumber(state[1] or 0), tonumber(state[2] or 0), lane_interval, burst, margin))), lane_id)
  wake_once(KEYS[8])
else
  if plan then
    redis.call('HSET', KEYS[1], 'd', depth_text, 'i', interval_text, 'b', burst_text, 'n', plan)
  else
    redis.call('HSET', KEYS[1], 'd', depth_text, 'i', interval_text, 'b', burst_text)
  end
  redis.call('ZADD', KEYS[3], depth_text, lane_id)
end
return {1, start, position, now}
