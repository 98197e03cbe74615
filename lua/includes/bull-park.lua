-- includes/bull-park.lua: a job parked in BullMQ 6's delayed set: its job hash as BullMQ's addDelayedJob writes
-- it and its member scored as BullMQ scores one (test/integration/throttle/bull-format.test.ts holds the two
-- to each other: a BullMQ upgrade that changes the format fails there). Needs includes/now.lua (now_ms,
-- int, whole).
--
-- Two things BullMQ's add does are left out, because a parked job has no use for them and each cost a
-- read of the delayed set with its scores formatted by Redis and parsed by Lua (~15k and ~23k Redis
-- instructions of an admission sent alone, bench/throttle-admit-instructions.sh):
-- * The marker is not moved. It wakes a worker blocked on it when the first delayed job falls due; a
--   parked job falls due an hour later (src/throttle/dispatcher.ts PARK_MS) only if its dispatch was
--   lost, and every BullMQ worker blocks for at most 10 s before its next fetch, which promotes every
--   delayed job due by then (moveToActive's promoteDelayedJobs). Moving it woke an idle worker for
--   nothing on every admission batch (BZPOPMIN answered, the same wait sent again).
-- * The sequence within a ms counts on from the previous job parked in the same ms by this script run
--   (a batch), not from what the set holds: jobs parked in one ms by two runs may share a score. Nothing
--   reads that order: the dispatcher takes a parked job by its id, and BullMQ would only use it to
--   promote, an hour later, the lost dispatches of one ms in order.
-- Per delayed set (a batch may park jobs of several throttles, interleaved): the last due ms and score.
local parked = {}

-- The delayed set's score: the due timestamp (ms) times 4096, plus one more than the job this run parked
-- before it in the same ms and set (at most 4095 more).
local function bull_delayed_score(delayed_key, due_ms)
  local min_score = due_ms * 0x1000
  local last = parked[delayed_key]
  if last and last[1] == due_ms then return math.min(last[2] + 1, min_score + 0xFFF) end
  return min_score
end

-- Writes job `job_id` (hash `job_key`) with its data and options JSON (the id goes into the JSON as it
-- is: sluice's job ids are base64url, a '.s<n>' shard suffix at most, nothing to escape), delayed `delay_text` ms from Redis's
-- now (BullMQ's timestamp is the adder's clock; here the server's).
-- `delay_text`: the delay in ms as its decimal text (it goes into the hash as it is).
-- The timestamp is Redis's TIME of this run (now_ms: read once, never the caller's injected now), its text
-- made once too.
local park_ms, park_ms_text = nil, nil

local function park_job(job_key, delayed_key, job_id, name, data, opts_tail, delay_text)
  if not park_ms then
    park_ms = now_ms()
    park_ms_text = int(park_ms)
  end
  redis.call('HSET', job_key, 'name', name, 'data', data, 'opts', '{"jobId":"' .. job_id .. '"' .. opts_tail,
    'timestamp', park_ms_text, 'delay', delay_text, 'priority', '0')
  local due_ms = park_ms + tonumber(delay_text)
  local score = bull_delayed_score(delayed_key, due_ms)
  redis.call('ZADD', delayed_key, whole(score), job_id)
  parked[delayed_key] = { due_ms, score }
end
