-- throttle-start.lua: a worker took a job from BullMQ; may it start, and when?
-- KEYS[1]  lane: hash (see includes/lane.lua)
-- KEYS[2]  laneQueue: sorted set of "<job id>|<cost>" in FIFO order
-- KEYS[3]  busy: the throttle's busy set
-- KEYS[4]  global: the throttle's global hash {s, v, p}
-- KEYS[5]  dispatched: "<job id>|<cost>|<lane id>" -> start µs given by the dispatcher
-- KEYS[6]  waiting: the throttle's waiting set
-- KEYS[7]  ready: the throttle's ready set
-- KEYS[8]  wake: the channel the dispatchers listen on (published, never stored)
-- KEYS[9]  laneOutgoing: the lane's jobs handed to the workers, by start µs
-- KEYS[10] laneBack: the lane's members handed out again after being sent back -> their lane key
-- KEYS[11] wait: BullMQ's wait list of the queue ('start' only: see the base marker below)
-- KEYS[12] marker: BullMQ's marker set of the queue
-- ARGV[1]  now: µs since the epoch, or '' to read Redis TIME
-- ARGV[2]  member: the job's member "<job id>|<cost>"
-- ARGV[3]  laneId: lane id
-- ARGV[4]  mode: 'start' (the job just arrived), 'late' (it missed the start it was given: heldUs),
--          'requeue' (the worker parked the job: put it back at the head of its lane), or 'mark' (the
--          worker is about to park a job that started, deferred by its upstream: the marker lane repair
--          reads should it die before the 'requeue', as the gate's own park() leaves one)
-- ARGV[5]  heldUs: the start µs the job missed ('late'), or the start it was given ('requeue': it
--          orders the job among those sent back), else ''
-- ARGV[6]  laneIntervalUs: the lane's interval in µs (kept in the lane for the dispatcher when the job goes back)
-- ARGV[7]  burst: the lane's burst
-- ARGV[8]  globalIntervalUs: global interval in µs (0: no global cap)
-- ARGV[9]  marginPpm: pacing margin in parts per million
-- ARGV[10] horizonUs: a fresh start for a late job is given only within this many µs
-- ARGV[11] lateLeadUs: and no sooner than this after now (the job is at its worker: only this reply
--          has to reach it, not BullMQ's delivery)
-- ARGV[12] lateToleranceUs: a job that arrives later than this after its start is late
-- ARGV[13] quotas: the queue's spend quotas with their windows (includes/quota.lua; '' = none)
-- ARGV[14] refund: '1' when a job sent back ('requeue') with its slot never made its call: the quota
--          units the dispatcher counted for that slot are given back ('0': the call was made, e.g. the
--          upstream answered 429, and it counts)
-- ARGV[15] controlVersion: the control version the worker's view of operators' overrides is at (0:
--          none): a lane whose override is newer keeps its interval and burst (includes/lane.lua lane_limits)
-- ARGV[16..] held: ('late' only) members of the lane's other jobs that this worker's process holds
--          (asking, or told their starts and not started; none starts before the reply): those at or after
--          the start this job missed may move with it
-- returns {1, start µs, now µs}  go: start the job at `start`
--         {1, start µs, now µs, shift µs}  go, and each held member (ARGV[16..]) at or after the start the
--                                 job missed moved by `shift`
--         ({1, slot µs, now µs} also for a job late to its first call behind later jobs a worker has: its
--                                 worker finds it late at `slot` and asks again, naming what it holds)
--         {2, slot µs, now µs}   ask again a horizon before `slot` (a start moved more than a horizon ahead)
--         {0, slot µs, now µs}  not now: the worker parks the job in BullMQ's delayed set, then calls
--                               again with 'requeue' and the slot it had (0: none), which puts it
--                               back in its lane ahead of every fresh job, among the others sent back
--                               in the order they were first handed out (the dispatcher hands it out
--                               again at its turn); a job with no slot (a retry) goes to the head
-- A job that was dispatched starts at its slot, unless a pause of its lane or of the throttle that
-- came after the hand-out covers the slot: then it goes back like a job without one. A job that arrives without one (a retry, a re-run after
-- a crashed worker, a job brought back early) goes back to the head of its lane: every start, first or
-- not, is paced and ordered by the dispatcher. A late job takes the next free instant of the meters at
-- once when no later job of its lane was dispatched after it (its lane's order and spacing hold);
-- otherwise its later hand-outs move with it, or (under a cap) pass their slots on in order (late()
-- below), or it goes back too. The job is parked before its member is back in the lane, so the
-- dispatcher can never promote a job that is not parked yet; meanwhile a marker in the dispatched set
-- (scored now) lets lane repair bring the job back if its worker died between the two steps.
-- @include now
-- @include lane
-- @include quota

local now = now_us(ARGV[1])
local member = ARGV[2]
local lane_id = ARGV[3]
local mode = ARGV[4]
local cost = member_cost(member)
local global_interval = number_of(ARGV[8])
local margin = number_of(ARGV[9])
local tolerance = number_of(ARGV[12])
local quotas = parse_quotas(ARGV[13])

local entry = member .. '|' .. lane_id
-- The most later hand-outs of its lane a late job moves with it (late() below).
local MAX_MOVED = 64
-- The longest tail a late job passes its slot on along (movable_tail): a longer one is a backlog drained
-- faster than its lane's jobs reach their starts, where late calls moving up to 64 starts each cost a
-- one-lane drain with 50 handlers a fifth of its rate (16: no loss seen); the job then starts behind them
-- as before.
local MAX_TAIL = 16

local function park(slot)
  redis.call('ZADD', KEYS[5], now, entry)
  return {0, slot or 0, now}
end

local function requeue(slot)
  redis.call('ZREM', KEYS[5], entry)
  -- Its unit goes from the outgoing set back to the queue: the lane's count never drops in between.
  if redis.call('ZREM', KEYS[9], member) == 1 then
    redis.call('HSET', KEYS[1], 'od', math.max(0, tonumber(redis.call('HGET', KEYS[1], 'od') or 0) - cost))
  end
  if redis.call('ZSCORE', KEYS[2], member) then return {0, 0, now} end
  -- (Not given back while the slot migrates: the window then counts one call more than was made.)
  if slot and slot > 0 and ARGV[14] == '1' and #quotas > 0 and not quota_slot_migrating(KEYS[1]) then quota_charge(quotas, KEYS[1], KEYS[4], slot, cost, now, -1) end
  local order = tonumber(redis.call('HGET', KEYS[10], member) or '')
  if order then
    redis.call('HDEL', KEYS[10], member)
  elseif slot then
    order = slot - BACK_OFFSET
  else
    local head = redis.call('ZRANGE', KEYS[2], '0', '0', 'WITHSCORES')
    order = head[2] and tonumber(head[2]) - 1 or now - BACK_OFFSET
  end
  redis.call('ZADD', KEYS[2], order, member)
  local st = redis.call('HMGET', KEYS[1], 'd', 'ov')
  local depth = tonumber(st[1] or 0) + cost
  -- The worker's interval and burst, unless an override it has not seen yet was written meanwhile.
  local interval_text, burst_text = lane_limits(KEYS[1], st[2], ARGV[15], ARGV[6], ARGV[7])
  redis.call('HSET', KEYS[1], 'd', depth, 'i', interval_text, 'b', burst_text)
  settle_lane(KEYS[1], KEYS[3], lane_id, depth, now, 0)
  if depth == cost then activate_lane(KEYS[1], lane_id, KEYS[6], KEYS[4], KEYS[8], margin) end
  return {0, 0, now}
end

-- The later hand-outs of the lane of a late job that may move with it (late() below), or nil: those
-- from this job's start on in the outgoing set, all of them while this job's own member is still there
-- at its start and no later job of the lane has started (members leave the set when their worker says
-- they started, lua/throttle-started.lua, which records the lane's latest such start in ls; a second
-- past their start, an admission settles them, includes/lane.lua, in start order; all at once when it
-- expires; one by one when a job goes back to the lane, and then it no longer comes after this one),
-- none of them at a worker yet (its worker knows its start) but those the late job's own process holds
-- (ARGV[16..]: it is told the shift in the reply and starts none of them before it; members it names that
-- are not among them are not its to move), and at most MAX_MOVED (one call's work stays bounded). Without
-- the held ones, a process slower than its lane sent each late job behind its own later jobs: it
-- reordered the lane itself.
-- A second value true says what kept them: one of them at a worker (its process may hold it).
-- `with_later` false (no later hand-out is out): only those first checks, and {} when they pass.
local function movable_later(held, expires, latest_started, mine, with_later)
  -- (At its own instant too: a job of a burst that started there cannot move with it.)
  if outgoing_expired(expires, now) or tonumber(latest_started or 0) >= held then return nil end
  if tonumber(redis.call('ZSCORE', KEYS[9], member) or -1) ~= held then return nil end
  if not with_later then return {} end
  local found = redis.call('ZRANGEBYSCORE', KEYS[9], whole(held), '+inf', 'WITHSCORES', 'LIMIT', '0', MAX_MOVED + 2)
  if #found > 2 * (MAX_MOVED + 1) then return nil end
  local later = {}
  for i = 1, #found, 2 do
    if found[i] ~= member then
      if not mine[found[i]] and not redis.call('ZSCORE', KEYS[5], found[i] .. '|' .. lane_id) then return nil, true end
      later[#later + 1] = found[i]
      later[#later + 1] = found[i + 1]
    end
  end
  if #later == 0 or #later > 2 * MAX_MOVED then return nil end
  return later
end

-- The later hand-outs of a late job's lane that no worker has yet and that come after every later one a
-- worker has or that started (the tail), in start order, at most MAX_TAIL; or nil. When movable_later
-- fails (a later job of its lane started, or is at a worker), the late job and the tail pass their slots
-- on (late() below): it starts behind only the hand-outs it cannot pass, not behind every one (a job of a
-- lane with 200/s of 100 ms handlers went 43 places behind).
local function movable_tail(held, expires, latest_started, mine)
  if outgoing_expired(expires, now) then return nil end
  if tonumber(redis.call('ZSCORE', KEYS[9], member) or -1) ~= held then return nil end
  -- (A started job has left the outgoing set: the lane's latest start, ls, bounds the tail too.)
  local ls = tonumber(latest_started or 0)
  local floor = ls >= held and '(' .. whole(ls) or whole(held)
  local found = redis.call('ZREVRANGEBYSCORE', KEYS[9], '+inf', floor, 'WITHSCORES', 'LIMIT', '0', MAX_TAIL + 2)
  local reversed = {}
  for i = 1, #found, 2 do
    if found[i] ~= member then
      if mine[found[i]] or not redis.call('ZSCORE', KEYS[5], found[i] .. '|' .. lane_id) then break end
      if #reversed >= 2 * MAX_TAIL then return nil end
      reversed[#reversed + 1] = found[i]
      reversed[#reversed + 1] = found[i + 1]
    end
  end
  if #reversed == 0 then return nil end
  local tail = {}
  for i = #reversed - 1, 1, -2 do
    tail[#tail + 1] = reversed[i]
    tail[#tail + 1] = reversed[i + 1]
  end
  return tail
end

-- The hand-outs of the lane just before a late job that no worker has taken yet (still in the
-- dispatched set: nobody knows their starts), latest first, after the lane's latest start and at most
-- `room` of them. Two processes take a lane's jobs from BullMQ in its order, but their first gate calls
-- can reach Redis in either order: a later job whose call came first, late, took a fresh start ahead of
-- an earlier one still on its way, which then went behind it. Moved with the late job, they keep their
-- place ahead of it: each start only moves later, and the spacing among them stays.
local function movable_earlier(held, latest_started, room)
  local earlier = {}
  if room <= 0 then return earlier end
  local floor = '(' .. whole(tonumber(latest_started or 0))
  local found = redis.call('ZREVRANGEBYSCORE', KEYS[9], '(' .. whole(held), floor, 'WITHSCORES', 'LIMIT', '0', room)
  for i = 1, #found, 2 do
    if not redis.call('ZSCORE', KEYS[5], found[i] .. '|' .. lane_id) then break end
    earlier[#earlier + 1] = found[i]
    earlier[#earlier + 1] = found[i + 1]
  end
  return earlier
end

-- True when every member of `list` (member, score, ...) is of this job's cost: only those can take each
-- other's slots (a slot's span is its cost's).
local function all_of_cost(list)
  for i = 1, #list, 2 do
    if member_cost(list[i]) ~= cost then return false end
  end
  return true
end

-- `first`: the job came late to its first call (it names no held jobs then).
local function late(held, first)
  local st = redis.call('HMGET', KEYS[1], 'c', 'p', 'ui', 'ue', 'oe', 'ls', 'ov')
  local tat = tonumber(st[1] or 0)
  -- Paced as the dispatcher paces the lane: by an override this worker has not seen yet, if any.
  local interval_text, burst_text = lane_limits(KEYS[1], st[7], ARGV[15], ARGV[6], ARGV[7])
  local burst = tonumber(burst_text)
  local lane_interval = learned(tonumber(interval_text), st[3], st[4], now)
  local g = redis.call('HMGET', KEYS[4], 's', 'ui', 'ue', 'p', 'xi', 'xe')
  local cap = learned(shared(global_interval, g[5], g[6], now), g[2], g[3], now)
  -- Later jobs of its lane were handed out after it (the lane's meter is past this job's own span).
  local later, behind, earlier, chain
  local later_out = tat > held + span(cost, lane_interval, margin)
  -- A quota counts each start in its window: the job goes back to its lane.
  if later_out and #quotas > 0 then return park(held) end
  -- Under a global cap their starts are interleaved with every other lane's: none can move. When no
  -- worker has any of them yet, all of its cost, the lane's hand-outs keep their order instead, on the
  -- slots they have (passed on, below); else the job goes back to its lane. (Not along their tail, as
  -- without a cap: its handler then waited for a later slot instead of taking the next job, and two
  -- processes of one 30 ms handler on a capped 100/s lane started 52-53 jobs a second against 55-56.)
  if later_out and cap > 0 then
    chain = movable_later(held, st[5], st[6], {}, true)
    if not chain or not all_of_cost(chain) then return park(held) end
    behind = true
  end
  if cap == 0 and #quotas == 0 then
    -- Without either, the lane's starts matter only among themselves: this job and its lane's later
    -- hand-outs move by the same amount (FIFO and spacing kept) when they can (movable_later). When they
    -- cannot (one of them has its answer already), it passes its slot on along their tail (movable_tail),
    -- or with none takes the lane's next instant behind them: where going back would put it too (at the
    -- head of its lane, handed out next, behind the hand-outs), without the trip (park, put back,
    -- hand-out, fetch). A backlog met by workers that fall behind no longer sends its jobs round again one
    -- by one.
    local mine = {}
    for i = 16, #ARGV do mine[ARGV[i]] = true end
    local at_worker
    later, at_worker = movable_later(held, st[5], st[6], mine, later_out)
    if later_out then
      -- Late to its first call, behind later jobs a worker has: its own process may hold them. It is told
      -- the start it had, finds itself late there, and asks again naming the jobs it holds.
      if first and at_worker then return {1, held, now} end
      behind = not later
      -- Else it passes its slot on along the tail, if any (movable_tail).
      if behind then chain = movable_tail(held, st[5], st[6], mine) end
      if chain and not all_of_cost(chain) then chain = nil end
    end
    -- The earlier hand-outs no worker has yet move with it too (movable_earlier).
    if later then earlier = movable_earlier(held, st[6], MAX_MOVED - #later / 2) end
    if later and #later == 0 and #earlier == 0 then later = nil end
  end
  -- The soonest start a late job can reach: the late lead from now, after any pause.
  local reachable = math.max(now + tonumber(ARGV[11]), tonumber(st[2] or 0), tonumber(g[4] or 0))
  local start = reachable
  -- Behind them: after the meter (less the burst) and not before the latest start handed out (latest_out).
  if behind then start = math.max(start, lane_eligible(tat, tonumber(st[2] or 0), lane_interval, burst, margin), latest_out(st[5], now)) end
  if cap > 0 then start = math.max(start, tonumber(g[1] or 0)) end
  -- With earlier hand-outs moved, `start` is the first one's and this job's comes as far after it as
  -- before; unless that is past the horizon, then they stay where they are.
  local shift = start - held
  if earlier and #earlier > 0 then
    local first_moved = start - tonumber(earlier[#earlier])
    if held + first_moved - now <= tonumber(ARGV[10]) then
      shift = first_moved
      for i = 1, #earlier do later[#later + 1] = earlier[i] end
    elseif #later == 0 then
      later = nil
    end
    start = held + shift
  end
  -- (A chain's members take their slots past the horizon too: each worker asks again a horizon before.)
  if start - now > tonumber(ARGV[10]) and not chain then return park(held) end
  -- Passed on: the late job and its lane's later hand-outs, in their order, take the slots of those
  -- hand-outs it can still use, then fresh ones: the one a late job alone would have (`start`) and, for
  -- each hand-out whose slot is past too, the next, a lane's span and the cap's apart. A slot it can use
  -- is at most the lateness tolerance before the soonest start it can reach (after any pause): a job that
  -- late at its own slot keeps it too. The lane keeps its order and spacing, the cap its slots; the
  -- hand-outs that went back to their lane here came back through their workers in either order
  -- (bench/lane-order.ts --cap: 42-47 of 120 behind, now 0-1).
  local own = start
  local last_fresh = start
  if chain then
    local slots = {}
    local usable_from = math.max(reachable - tolerance, tonumber(st[2] or 0), tonumber(g[4] or 0))
    for i = 2, #chain, 2 do
      if tonumber(chain[i]) >= usable_from then slots[#slots + 1] = tonumber(chain[i]) end
    end
    local step = math.max(span(cost, cap, margin), span(cost, lane_interval, margin))
    local fresh = #chain / 2 + 1 - #slots
    for t = 1, fresh do
      last_fresh = start + (t - 1) * step
      slots[#slots + 1] = last_fresh
    end
    -- Each fresh slot but the one a late job alone takes is a start handed out again: its lane's fair
    -- tag grows as the dispatcher's hand-out would have grown it (the cap's other lanes keep their share).
    if fresh > 1 then
      redis.call('HSET', KEYS[1], 'v', whole(tonumber(redis.call('HGET', KEYS[1], 'v') or 0) + (fresh - 1) * cost * tonumber(interval_text)))
    end
    own = slots[1]
    for t = 1, #chain / 2 do
      local m = chain[2 * t - 1]
      local at = whole(slots[t + 1])
      redis.call('ZADD', KEYS[9], 'XX', at, m)
      redis.call('ZADD', KEYS[5], 'XX', at, m .. '|' .. lane_id)
    end
  end
  -- Counted in the window of the start it missed: a fresh start past that window's reset goes back (the
  -- quota units are given back, and its next hand-out counts in the new window).
  if #quotas > 0 and quota_crosses(quotas, held, start) then return park(held) end
  local after = start + span(cost, lane_interval, margin)
  local last_start = start
  if later then
    for i = 1, #later, 2 do
      local at = whole(tonumber(later[i + 1]) + shift)
      redis.call('ZADD', KEYS[9], 'XX', at, later[i])
      redis.call('ZADD', KEYS[5], 'XX', at, later[i] .. '|' .. lane_id)
      last_start = math.max(last_start, tonumber(later[i + 1]) + shift)
    end
    after = tat + shift
  elseif behind then
    after = math.max(tat, last_fresh) + span(cost, lane_interval, margin)
    last_start = math.max(last_start, last_fresh)
  end
  redis.call('HSET', KEYS[1], 'c', whole(after))
  -- A lane with no queued work keeps its meter only as long as it matters (it may even have expired
  -- while this job waited for a worker: the write above made it anew).
  if tonumber(redis.call('HGET', KEYS[1], 'd') or 0) <= 0 then
    redis.call('PEXPIRE', KEYS[1], ttl((after - now) / 1000))
  end
  -- Its unit stays the lane's until its worker says it started (lua/throttle-started.lua): its member
  -- moves to the fresh start. A job more than a second late may have been taken for started by an
  -- admission meanwhile (settle_outgoing, includes/lane.lua: its worker is taken for dead), or the
  -- outgoing set outlived its last start: it is held again here, or the lane would go on admitting as
  -- if it had started. (Admitted in between, a job may hold the unit too: the lane then holds up to
  -- this job's cost past its capacity until this start, and refuses meanwhile; docs/algorithms.md.)
  local expires = st[5]
  if outgoing_expired(expires, now) then
    -- What od still counts has started: the count starts again from this unit, in a set of its own.
    count_silent(KEYS[4], tonumber(redis.call('HGET', KEYS[1], 'od') or 0))
    redis.call('DEL', KEYS[9])
    redis.call('HSET', KEYS[1], 'od', '0')
    expires = false
  end
  -- (Its own start: passed on, the first slot it could reach; the meters above go by the fresh start.)
  if redis.call('ZADD', KEYS[9], whole(own), member) == 1 then redis.call('HINCRBY', KEYS[1], 'od', cost) end
  -- The outgoing set lives a second past its last start (includes/lane.lua): so do the starts moved here.
  if not expires or last_start + OUTGOING_LIFE_US > tonumber(expires) then
    redis.call('PEXPIRE', KEYS[9], whole(ttl((last_start - now) / 1000)))
    redis.call('HSET', KEYS[1], 'oe', whole(last_start + OUTGOING_LIFE_US))
  end
  reposition_lane(KEYS[1], lane_id, KEYS[6], KEYS[7], margin)
  if cap > 0 then redis.call('HSET', KEYS[4], 's', last_fresh + span(cost, cap, margin)) end
  if later and #ARGV > 15 then return {1, start, now, shift} end
  -- Its own start past the horizon (a chain's fresh one): it asks again a horizon before it, as a job
  -- handed out that far ahead would.
  if own - now > tonumber(ARGV[10]) then
    redis.call('ZADD', KEYS[5], whole(own), entry)
    return {2, own, now}
  end
  return {1, own, now}
end

if mode == 'mark' then return park() end
if mode == 'requeue' then return requeue(tonumber(ARGV[5])) end
if mode == 'late' then return late(tonumber(ARGV[5])) end
-- The job just came out of BullMQ's moveToActive, which adds its base marker (member '0') for every job
-- it hands out, so that a worker blocked on the marker looks for the next one. With the wait list
-- empty there is none: the marker would only wake this process's own worker at once for a fetch that
-- finds nothing (per job at 200/s with one worker: 2 blocking pops and 4 script calls of BullMQ's,
-- against 1 and 3 with the marker taken out; bench/start-cost.ts --breakdown). Taken out here,
-- in the call that follows the fetch, while nothing waits: a job pushed onto the wait list later comes
-- with its own marker (the dispatcher's round, lua/throttle-dispatch.lua), so no wake is lost. sluice
-- gives its jobs no BullMQ priority, and a delay marker is member '1': it stays.
if redis.call('LLEN', KEYS[11]) == 0 then redis.call('ZREM', KEYS[12], '0') end
local slot = redis.call('ZSCORE', KEYS[5], entry)
if not slot then return park() end
slot = tonumber(slot)
-- More than a horizon ahead (a late job's move put it there, late() above): not answered yet. Its
-- worker asks again a horizon before it, so that a pause set meanwhile still holds it (a worker keeps a
-- start it was told, and it is told none more than a horizon ahead); it stays in the dispatched set.
if slot - now > tonumber(ARGV[10]) then return {2, slot, now} end
redis.call('ZREM', KEYS[5], entry)
-- Paused after it was handed out (its upstream said "later" meanwhile): not at this slot; the worker
-- parks it and it goes back to the head of its lane, for the dispatcher to hand out after the pause.
local lane_pause = tonumber(redis.call('HGET', KEYS[1], 'p') or 0)
local global_pause = tonumber(redis.call('HGET', KEYS[4], 'p') or 0)
if slot < math.max(lane_pause, global_pause) then return park(slot) end
if now - slot > tolerance then return late(slot, true) end
return {1, slot, now}
