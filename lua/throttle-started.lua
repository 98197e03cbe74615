-- throttle-started.lua: a worker started a job's handler (or a schedule() call its function) at the
-- start the gate gave it: the job's unit of its lane's capacity is free again, now. Sent as the handler
-- starts, with the job's 'started' event when there is one (one call, the event's XADD in it).
-- KEYS[1]  lane: hash (see includes/lane.lua)
-- KEYS[2]  laneOutgoing: the lane's jobs handed to the workers, by start µs
-- KEYS[3]  events: the throttle's job event stream (src/throttle/events.ts)
-- ARGV[1]  member: the job's member "<job id>|<cost>"
-- ARGV[2]  startUs: the start the job was given (the gate's answer), Redis µs
-- ARGV[3]  eventJobId: the job id of the 'started' event to append ('': none)
-- ARGV[4]  eventDetail: that event's detail JSON
-- ARGV[5]  eventMaxLen: the event stream's approximate cap (MAXLEN ~)
-- returns 1 when the member was still out (its unit freed here), 0 when it was not (an admission took it
-- for started a second past its start, its lane expired, or it went back to its lane meanwhile)
-- A lane whose hash expired is not written again (the unit went with it, and a hash written now would
-- have no expiry). The lane's latest confirmed start (ls) tells a late job whether a later job of its
-- lane has started already (lua/throttle-start.lua movable_later): then it must not move them.
-- @include now
-- @include lane

local member = ARGV[1]
local start = tonumber(ARGV[2])
local freed = 0
local st = redis.call('HMGET', KEYS[1], 'od', 'ls')
local later = start > tonumber(st[2] or 0)
if redis.call('ZREM', KEYS[2], member) == 1 then
  freed = 1
  local od = math.max(0, tonumber(st[1] or 0) - member_cost(member))
  -- One write of both fields (a command less per job).
  if later then redis.call('HSET', KEYS[1], 'od', od, 'ls', ARGV[2]) else redis.call('HSET', KEYS[1], 'od', od) end
elseif later and redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], 'ls', ARGV[2])
end
if ARGV[3] ~= '' then redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[5], '*', 'e', 'started', 'j', ARGV[3], 'd', ARGV[4]) end
return freed
