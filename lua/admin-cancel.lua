-- admin-cancel.lua: cancel a queued job and free its lane units, in one atomic step. The job is
-- removed only if no worker holds it (no lock) and it waits in delayed, wait, paused or prioritized;
-- its keys are deleted as BullMQ's removeJob does for a job without parent or children, and BullMQ's
-- `removed` event is emitted. Its lane member (if still queued: a retry attempt's member has already
-- left) goes too, and the busy-lane index and the dispatch sets follow.
-- KEYS[1]  lane: hash (see includes/lane.lua)
-- KEYS[2]  laneQueue: sorted set of "<job id>|<cost>"
-- KEYS[3]  busy: the throttle's busy set
-- KEYS[4]  waiting: the throttle's waiting set
-- KEYS[5]  job: the BullMQ job hash
-- KEYS[6]  lock: the job's lock key (<job hash>:lock)
-- KEYS[7]  delayed: BullMQ's delayed set
-- KEYS[8]  wait: BullMQ's wait list
-- KEYS[9]  paused: BullMQ's paused list
-- KEYS[10] prioritized: BullMQ's prioritized set
-- KEYS[11] completed: BullMQ's completed set
-- KEYS[12] failed: BullMQ's failed set
-- KEYS[13] events: BullMQ's events stream
-- KEYS[14] ready: the throttle's ready set
-- ARGV[1]  now: µs since the epoch, or '' to read Redis TIME
-- ARGV[2]  jobId: job id
-- ARGV[3]  laneId: lane id the caller read from the job (checked again here)
-- ARGV[4]  tenant: tenant that must own the job ('' = any: an admin)
-- returns {1, freed cost units, previous BullMQ state}  cancelled
--         {0, state}  not cancelled: 'missing' (no such job, or another tenant's), 'moved' (its lane is
--                     not ARGV[3]: read it again), 'active', 'completed' or 'failed'
-- @include now
-- @include lane

local now = now_us(ARGV[1])
local job_id = ARGV[2]
local raw = redis.call('HGET', KEYS[5], 'data')
if not raw then return {0, 'missing'} end
local ok, data = pcall(cjson.decode, raw)
if not ok or type(data) ~= 'table' then return {0, 'missing'} end
if ARGV[4] ~= '' and data.t ~= ARGV[4] then return {0, 'missing'} end
if data.l ~= ARGV[3] then return {0, 'moved'} end
if redis.call('EXISTS', KEYS[6]) == 1 then return {0, 'active'} end
if redis.call('ZSCORE', KEYS[11], job_id) then return {0, 'completed'} end
if redis.call('ZSCORE', KEYS[12], job_id) then return {0, 'failed'} end

local prev
if redis.call('ZREM', KEYS[7], job_id) == 1 then prev = 'delayed'
elseif redis.call('ZREM', KEYS[10], job_id) == 1 then prev = 'prioritized'
elseif redis.call('LREM', KEYS[8], '1', job_id) == 1 then prev = 'wait'
elseif redis.call('LREM', KEYS[9], '1', job_id) == 1 then prev = 'paused'
else return {0, 'active'} end -- in the active list (its lock lapsed: a stalled run) or about to be

redis.call('DEL', KEYS[5], KEYS[5] .. ':logs')
redis.call('XADD', KEYS[13], 'MAXLEN', '~', '10000', '*', 'event', 'removed', 'jobId', job_id, 'prev', prev)

local cost = tonumber(data.c) or 1
local member = job_id .. '|' .. cost
local freed = 0
if redis.call('ZREM', KEYS[2], member) == 1 then
  freed = cost
  local state = redis.call('HMGET', KEYS[1], 'd', 'c')
  local depth = math.max(0, tonumber(state[1] or 0) - cost)
  redis.call('HSET', KEYS[1], 'd', depth)
  if depth == 0 then deactivate_lane(ARGV[3], KEYS[4], KEYS[14]) end
  settle_lane(KEYS[1], KEYS[3], ARGV[3], depth, now, tonumber(state[2] or 0))
end
return {1, freed, prev}
