-- throttle-dispatch.lua: the dispatcher. Decides which queued jobs start next, and when, up to a short
-- horizon ahead, for every lane of the throttle at once, and hands the chosen jobs to BullMQ's workers
-- in the same step (what BullMQ's promote does: out of the delayed set, onto the wait list); each process
-- with a worker calls it in a loop. The whole decision is one atomic step, so any number of dispatchers
-- share the work without ever giving one slot twice.
-- KEYS[1]  waiting: busy lanes not yet allowed to start, by the real µs their own rate (and pause) allows
-- KEYS[2]  ready: busy lanes allowed to start, by their fair tag (start-time fair queueing)
-- KEYS[3]  global: the throttle's global hash {s: next global slot µs, v: virtual time}
-- KEYS[4]  busy: the throttle's busy set (lane id -> queued units)
-- KEYS[5]  dispatched: "<job id>|<cost>|<lane id>" -> start µs, until a worker takes the job
-- KEYS[6]  meta: BullMQ's meta hash of the throttle's queue (a paused queue dispatches nothing)
-- KEYS[7]  delayed: BullMQ's delayed set of the queue (where admitted jobs are parked)
-- KEYS[8]  wait: BullMQ's wait list of the queue
-- KEYS[9]  marker: BullMQ's marker set (wakes a worker blocked waiting for a job)
-- KEYS[10] events: BullMQ's event stream of the queue
-- (BullMQ's active list, jobPrefix .. 'active', is read only when the queue has a global concurrency:
-- not declared, so that a slot migration does not refuse the script for a missing, empty list)
-- ARGV[1]  now: µs since the epoch, or '' to read Redis TIME
-- ARGV[2]  horizonUs: dispatch the starts due within this many µs
-- ARGV[3]  deliveryUs: no start is given sooner than this after now (the time BullMQ needs to hand the job to a worker)
-- ARGV[4]  maxJobs: at most this many jobs per call
-- ARGV[5]  globalIntervalUs: global interval in µs (0: no global cap; an interval learnt from the upstream may still apply)
-- ARGV[6]  marginPpm: pacing margin in parts per million
-- ARGV[7]  lanePrefix: a lane's key is lanePrefix .. lane id (its queue: .. ':q')
-- ARGV[8]  jobPrefix: a BullMQ job hash is jobPrefix .. job id ('p'-prefixed ids are in-process: no job)
-- ARGV[9]  missingRetryUs: a lane whose head job does not exist yet is looked at again this much after now
-- ARGV[10] quotas: the queue's spend quotas with their windows (includes/quota.lua; '' = none)
-- ARGV[11] maxOutstanding: back-pressure (src/throttle/dispatcher.ts): hand out at most this many less
--          the jobs handed out that no worker has taken yet (dispatched entries scored from
--          now - forgottenUs on); '' or 0 = no bound
-- ARGV[12] forgottenUs: a dispatched entry older than this is lost or very late, not counted
-- returns {dispatched count, now µs, next µs (0: nothing queued), job id 1, lane id 1, start µs 1, ...}
--   every BullMQ job returned is on the wait list already; one not in the delayed set (a worker is
--   parking it right now) stays in `dispatched` and lane repair finds it (src/throttle/repair.ts)
--   next: the instant from which the next start is due within the horizon: call again at next - horizon.
--   With maxOutstanding reached, nothing is handed out and next is now + horizon + 1 ms: look again 2 ms later.
-- How a slot is given out. Under a global cap the next global slot goes to the lane with the smallest
-- fair tag among the lanes whose own rate allows a start at that instant (start-time fair queueing,
-- weighted by the lanes' rates: a lane's tag grows by cost x its interval per start). A lane whose own
-- rate does not allow it waits in `waiting` and takes no slot, so the cap never idles while some lane
-- could start (work-conserving), and lanes slower than their fair share get all they ask for (max-min
-- fair). Without a cap every lane simply starts at its own rate. Within a lane jobs start in FIFO order,
-- each at an exact instant one lane interval apart, so workers in several processes keep the order.
-- Spend quotas are counted here, at the start's window: a lane whose key quota has no room for its head
-- job waits (in `waiting`) until that window resets; a queue quota without room holds every start until
-- its reset (a job too big for what is left holds the ones behind it, so starts keep their fair order).
-- @include now
-- @include lane
-- @include quota

local now = now_us(ARGV[1])
-- While the throttle's slot is being migrated (cluster resharding) its keys may be on either node, and
-- the lane keys below are not in KEYS, so Redis could not check that they are here: read, they look
-- missing (a busy lane dropped from the schedule); written, they are created on the wrong node (the next
-- MIGRATE fails BUSYKEY). Two keys of the slot, one never existing, fail EXISTS only then (source: ASK /
-- TRYAGAIN; target under ASKING: TRYAGAIN): nothing is read or written, and the dispatcher calls again
-- after missingRetryUs.
if type(redis.pcall('EXISTS', KEYS[1], KEYS[1] .. ':migrating')) == 'table' then
  return {0, now, now + tonumber(ARGV[2]) + tonumber(ARGV[9])}
end
local meta = redis.call('HMGET', KEYS[6], 'paused', 'concurrency')
if meta[1] then return {0, now, 0} end
local queue_concurrency = tonumber(meta[2])

-- BullMQ's promote of one parked job (node_modules/bullmq/dist/cjs/commands/promote-9.lua, the version in
-- package-lock.json, held to it by test/integration/throttle/dispatch-promote.test.ts): out of the
-- delayed set, onto the wait list (sluice never gives its jobs a priority), the `waiting` event, delay 0;
-- and, once per round (mark_promoted below), what promote does after each job: a BullMQ 4 "0:" delay
-- marker at the head of the wait list taken out (v5 and later still do), checked before the round's first
-- push (after it the head is a job of this round), and a marker for a blocked worker unless the queue's
-- global concurrency is used up (the same member at the same score: one ZADD says what several do, and
-- neither the active list nor the marker changes within the round).
local promoted = 0
-- `parked`: the caller took the job out of the delayed set already.
local function promote(job_id, parked)
  if not parked and redis.call('ZREM', KEYS[7], job_id) == 0 then return end
  if promoted == 0 then
    local head = redis.call('LINDEX', KEYS[8], '0')
    if head and string.sub(head, 1, 2) == '0:' then redis.call('LPOP', KEYS[8]) end
  end
  promoted = promoted + 1
  redis.call('LPUSH', KEYS[8], job_id)
  redis.call('XADD', KEYS[10], '*', 'event', 'waiting', 'jobId', job_id, 'prev', 'delayed')
  redis.call('HSET', ARGV[8] .. job_id, 'delay', '0')
end

local function mark_promoted()
  if promoted == 0 then return end
  if not queue_concurrency or redis.call('LLEN', ARGV[8] .. 'active') < queue_concurrency then redis.call('ZADD', KEYS[9], '0', '0') end
end
local horizon = now + number_of(ARGV[2])
local floor = now + number_of(ARGV[3])
local max_jobs = number_of(ARGV[4])
-- Back-pressure counted in the round itself: one call instead of a count and a round, and dispatchers in
-- several processes never hand out past the bound together between someone's count and round.
local max_out = tonumber(ARGV[11]) or 0
if max_out > 0 then
  local room = max_out - redis.call('ZCOUNT', KEYS[5], whole(now - tonumber(ARGV[12])), '+inf')
  if room <= 0 then return {0, now, horizon + 1000} end
  if room < max_jobs then max_jobs = room end
end
local margin = number_of(ARGV[6])
local lane_prefix = ARGV[7]
local job_prefix = ARGV[8]
local quotas = parse_quotas(ARGV[10])

local g = redis.call('HMGET', KEYS[3], 's', 'v', 'ui', 'ue', 'p', 'xi', 'xe')
local global_slot = tonumber(g[1] or 0)
local virtual = tonumber(g[2] or 0)
-- The whole throttle is paused (an upstream's Retry-After for the queue): no start before then.
floor = math.max(floor, tonumber(g[5] or 0))
-- The configured cap, or what the upstream said it allows (lua/upstream-learn.lua), the slower.
local global_interval = learned(shared(number_of(ARGV[5]), g[6], g[7], now), g[3], g[4], now)
local capped = global_interval > 0
local out = {0, now, 0}
local n = 0
local next_due = 0
-- Lanes whose head job does not exist yet, and the instant each was ready by: lane id, µs, ...
local missing = {}

-- A lane's writes after a hand-out: its fields, and its place in `busy` and `waiting` (or its expiry
-- once it has nothing queued). `st` holds the fields as handed out (d, c, v, od, oe: numbers).
local function write_lane(id, st, paused, interval, burst)
  local lane_key = lane_prefix .. id
  local depth_text = whole(st[1])
  redis.call('HSET', lane_key, 'd', depth_text, 'c', whole(st[2]), 'v', whole(st[4]), 'od', whole(st[9]), 'oe', whole(st[10]))
  redis.call('PEXPIRE', lane_key .. ':o', whole(ttl(math.max(0, st[10] - OUTGOING_LIFE_US - now) / 1000)))
  if st[1] > 0 then
    redis.call('ZADD', KEYS[4], depth_text, id)
    redis.call('ZADD', KEYS[1], whole(lane_eligible(st[2], paused, interval, burst, margin)), id)
  else
    redis.call('ZREM', KEYS[4], id)
    redis.call('PEXPIRE', lane_key, whole(ttl(math.max(0, st[2] - now) / 1000)))
  end
end

-- A run: one lane handed out again and again while no other lane is due within the horizon (no cap,
-- no quota). Its next hand-out is then its own whatever the order of the sets, so it stays out of
-- `waiting` and `ready` meanwhile, its fields are kept here, and they are written once, as the run
-- ends (write_lane): a lane faster than its workers (a backlog's drain) made ~20 calls a hand-out, ~10 of
-- them moving it through the sets and writing it again. Nothing else writes those sets within this
-- call, so a lane alone when its run begins stays alone.
local run = nil
local crowded = false

local function end_run()
  if run then write_lane(run.id, run.st, run.paused, run.interval, run.burst) end
  run = nil
end

while n < max_jobs do
  local t = floor
  if capped and global_slot > t then t = global_slot end
  if t > horizon then next_due = t; break end
  local top
  if run then
    top = {run.id}
  else
    -- Lanes whose own rate allows a start by t (without a cap: within the horizon) become ready.
    local by = capped and t or horizon
    local moving = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', whole(by), 'LIMIT', '0', '128')
    if #moving > 0 then
      -- One ZREM and one ZADD for them all (up to 128), each lane scored by its tag as stored: a score
      -- text ZADD parses itself (no number made and printed again here).
      local tagged = {}
      for i, id in ipairs(moving) do
        tagged[2 * i - 1] = redis.call('HGET', lane_prefix .. id, 'v') or '0'
        tagged[2 * i] = id
      end
      redis.call('ZREM', KEYS[1], unpack(moving))
      redis.call('ZADD', KEYS[2], unpack(tagged))
    end
    -- The lane with the smallest tag, taken out of `ready` (every branch below but a queue quota's leaves
    -- it out: that one puts it back as it was).
    top = redis.call('ZPOPMIN', KEYS[2])
  end
  if #top == 0 then
    local first = redis.call('ZRANGE', KEYS[1], '0', '0', 'WITHSCORES')
    if #first == 0 then break end
    local at = tonumber(first[2])
    if not capped or at > horizon then next_due = math.max(at, floor); break end
    -- The cap has room but no lane may start before `at`: the next global slot is then.
    floor = at
  else
    local id = top[1]
    local lane_key = lane_prefix .. id
    local queue_key = lane_key .. ':q'
    -- The lane's head member, taken out of its queue: handed out below, or put back as it was
    -- (ZPOPMIN's score text is its exact score) when the lane has to wait for it.
    local head = redis.call('ZPOPMIN', queue_key)
    if #head == 0 then
      -- (A run ends at anything but a hand-out: the lane is written first, as after its last one.)
      end_run()
      -- Counted busy with nothing queued (repaired meanwhile): idle it.
      deactivate_lane(id, KEYS[1], KEYS[2])
      redis.call('ZREM', KEYS[4], id)
      redis.call('HSET', lane_key, 'd', '0')
    else
      local member = head[1]
      local job_id = string.match(member, '^(.*)|%d+$')
      local cost = member_cost(member)
      -- A BullMQ job (in-process ones, 'p'-prefixed, have none) is handed out only once it exists. Without
      -- quotas nothing below keeps it from being handed out now, so it is taken out of the delayed set
      -- first (promote's first step), and that answer says it exists: EXISTS is asked only when it was
      -- not parked (not added yet, or a worker parking it right now).
      local bull_job = string.sub(job_id, 1, 1) ~= 'p'
      local parked = bull_job and #quotas == 0 and redis.call('ZREM', KEYS[7], job_id) == 1
      if bull_job and not parked and redis.call('EXISTS', job_prefix .. job_id) == 0 then
        end_run()
        -- Admitted, not enqueued yet (its submitter's add is a moment behind the admission, or lost:
        -- lane repair frees it). FIFO: the lane waits for it, out of this call, and is looked at again
        -- missingRetryUs from now (a new lane's first start would otherwise wait a whole horizon).
        redis.call('ZADD', queue_key, head[2], member)
        missing[#missing + 1] = id
        missing[#missing + 1] = t
      else
        local st = run and run.st or redis.call('HMGET', lane_key, 'd', 'c', 'p', 'v', 'i', 'b', 'ui', 'ue', 'od', 'oe')
        local depth = tonumber(st[1] or 0) - cost
        local tat = tonumber(st[2] or 0)
        local paused = tonumber(st[3] or 0)
        local tag = tonumber(st[4] or 0)
        local weight = tonumber(st[5] or 1)
        -- Paced by its own interval, or slower when its upstream said so; weighted by its own.
        local interval = learned(weight, st[7], st[8], now)
        local burst = tonumber(st[6] or 0)
        local start = t
        -- Never before a start handed out ahead of it (latest_out, includes/lane.lua: a late job's move can
        -- put those past the meter less the burst).
        if not capped then start = math.max(floor, lane_eligible(tat, paused, interval, burst, margin), latest_out(st[10], now)) end
        local blocked = #quotas > 0 and quota_blocked(quotas, lane_key, KEYS[3], start, cost)
        if blocked and blocked[1] <= horizon then
          -- The window resets within the horizon: the start is at the reset, counted in the next window
          -- (which has room unless this start already went past what it allows).
          local later = blocked[1]
          blocked = quota_blocked(quotas, lane_key, KEYS[3], later, cost)
          if not blocked then start = later end
        end
        if blocked and not blocked[2] then
          -- The queue's quota: nothing starts before its reset (the lane keeps its place in `ready`, its
          -- head job its place in the lane).
          redis.call('ZADD', queue_key, head[2], member)
          redis.call('ZADD', KEYS[2], top[2], id)
          next_due = blocked[1]
          break
        end
        if blocked then
          -- This key's quota: the lane waits for its reset (its head job in its place); the others go on.
          redis.call('ZADD', queue_key, head[2], member)
          -- (Past the horizon always: a lane put back within it would be taken up again in this call.)
          redis.call('ZADD', KEYS[1], whole(math.max(blocked[1], horizon + 1)), id)
        else
        if #quotas > 0 then quota_charge(quotas, lane_key, KEYS[3], start, cost, now, 1) end
        local key = tonumber(head[2])
        if key < 0 then
          -- Sent back before: it keeps its place should it come back again (lua/throttle-start.lua).
          redis.call('HSET', lane_key .. ':k', member, key)
          redis.call('PEXPIRE', lane_key .. ':k', '86400000')
        end
        tat = math.max(tat, start) + span(cost, interval, margin)
        virtual = math.max(virtual, tag)
        tag = tag + cost * weight
        if capped then global_slot = start + span(cost, global_interval, margin) end
        -- Numbers go to redis.call as text made by '%d' (whole(), includes/now.lua), not Redis's '%.17g'
        -- of each: ~12 numbers per job handed out.
        local start_text = whole(start)
        redis.call('ZADD', KEYS[5], start_text, member .. '|' .. id)
        -- The unit stays the lane's until its worker says the job started (lua/throttle-started.lua
        -- frees it then), or a second past its start: counted in od, written with the lane's other
        -- fields below. Once the outgoing set has outlived its last start (oe, includes/lane.lua), what
        -- od still counts has started: the count starts again from this unit, in a set of its own.
        local out_units = tonumber(st[9] or 0)
        local out_until = start + OUTGOING_LIFE_US
        if outgoing_expired(st[10], now) then
          if out_units > 0 then
            redis.call('DEL', lane_key .. ':o')
            count_silent(KEYS[3], out_units)
          end
          out_units = 0
        elseif st[10] then
          out_until = math.max(out_until, tonumber(st[10]))
        end
        redis.call('ZADD', lane_key .. ':o', start_text, member)
        if bull_job then promote(job_id, parked) end
        out[#out + 1] = job_id
        out[#out + 1] = id
        out[#out + 1] = start
        n = n + 1
        st[1], st[2], st[4], st[9], st[10] = math.max(0, depth), tat, tag, out_units + cost, out_until
        -- The lane goes on as a run when it is due again within the horizon and no other lane is (looked
        -- up once, as a run begins); else its writes now (and a run's, deferred till here).
        local again = depth > 0 and n < max_jobs and not capped and #quotas == 0 and lane_eligible(tat, paused, interval, burst, margin) <= horizon
        if again and not run then
          -- Other lanes due: not looked up again in this call (they are handed out in turn with it).
          if not crowded then crowded = redis.call('ZCARD', KEYS[2]) > 0 or #redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', whole(horizon), 'LIMIT', '0', '1') > 0 end
          again = not crowded
        end
        if again then
          run = run or { id = id, st = st, paused = paused, interval = interval, burst = burst }
        else
          run = nil
          write_lane(id, st, paused, interval, burst)
        end
        end
      end
    end
  end
end
end_run()
mark_promoted()
if n == max_jobs then next_due = now end
if next_due == 0 and redis.call('ZCARD', KEYS[2]) > 0 then next_due = math.max(floor, global_slot) end
if #missing > 0 then
  -- Back in waiting at the instant they were ready by (their own rate allowed a start then, which is
  -- all a capped round looks at), and a call again missingRetryUs from now.
  for i = 1, #missing, 2 do redis.call('ZADD', KEYS[1], whole(missing[i + 1]), missing[i]) end
  local retry = now + tonumber(ARGV[9]) + tonumber(ARGV[2])
  if next_due == 0 or next_due > retry then next_due = retry end
end
-- Written by every round, also one that moved neither (a follower's, which found the start it came for
-- handed out by another process): the hash must exist, since a script that declares a key its node does
-- not have while the slot migrates is redirected, not run (test/integration/throttle/dispatch-migrating.test.ts).
if capped then redis.call('HSET', KEYS[3], 's', whole(global_slot), 'v', whole(virtual)) else redis.call('HSET', KEYS[3], 'v', whole(virtual)) end
out[1] = n
out[3] = next_due
return out
