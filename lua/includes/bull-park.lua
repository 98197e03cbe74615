-- includes/bull-park.lua: a job parked in BullMQ 6's delayed set, written as its addDelayedJob writes it
-- (test/integration/throttle/bull-format.test.ts holds the two to each other: a BullMQ upgrade that
-- changes the format fails there). Needs includes/now.lua (read_time, int, whole).
--
-- What one script run learnt about a delayed set, kept for the next admission of the same run (a batch,
-- src/redis/scripts.ts): nothing else writes to it meanwhile, so the last score written in a ms and the
-- set's first score are known without asking again, and the state left is what asking would leave.
local parked = { key = nil, due_ms = nil, score = nil, first = nil }

-- The delayed set's score: the due timestamp (ms) times 4096, plus one more than the last job due in the
-- same ms (at most 4095 more), so that jobs due in one ms keep their order.
local function bull_delayed_score(delayed_key, due_ms)
  local min_score = due_ms * 0x1000
  local max_score = (due_ms + 1) * 0x1000 - 1
  local top
  if parked.key == delayed_key and parked.due_ms == due_ms then
    top = parked.score
  else
    local last = redis.call('ZREVRANGEBYSCORE', delayed_key, whole(max_score), whole(min_score), 'WITHSCORES', 'LIMIT', '0', '1')
    top = tonumber(last[2])
  end
  if top == nil then return min_score end
  if top >= max_score then return max_score end
  return top + 1
end

-- Writes job `job_id` (hash `job_key`) with its data and options JSON (the id goes into the JSON as it
-- is: sluice's job ids are base64url, a '.s<n>' shard suffix at most, nothing to escape), delayed `delay_text` ms from Redis's
-- now (BullMQ's timestamp is the adder's clock; here the server's), and moves the marker to the next
-- delayed timestamp so a worker blocked on it wakes when the park runs out.
-- `delay_text`: the delay in ms as its decimal text (it goes into the hash as it is).
-- The timestamp is Redis's TIME of this run (read once), its text made once too.
local park_ms, park_ms_text = nil, nil

local function park_job(job_key, delayed_key, marker_key, job_id, name, data, opts_tail, delay_text)
  if not park_ms then
    local t = read_time()
    park_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    park_ms_text = int(park_ms)
  end
  local timestamp = park_ms
  redis.call('HSET', job_key, 'name', name, 'data', data, 'opts', '{"jobId":"' .. job_id .. '"' .. opts_tail,
    'timestamp', park_ms_text, 'delay', delay_text, 'priority', '0')
  local due_ms = timestamp + tonumber(delay_text)
  local score = bull_delayed_score(delayed_key, due_ms)
  redis.call('ZADD', delayed_key, whole(score), job_id)
  if parked.key ~= delayed_key then
    parked.key, parked.first = delayed_key, nil
  end
  parked.due_ms, parked.score = due_ms, score
  -- The marker at the first delayed score, as BullMQ sets it after every add; once this run knows that
  -- score, only a job that comes before it moves the marker (setting it again to the same would change nothing).
  if parked.first == nil then
    local first = redis.call('ZRANGE', delayed_key, '0', '0', 'WITHSCORES')
    parked.first = tonumber(first[2])
    redis.call('ZADD', marker_key, whole(parked.first / 0x1000), '1')
  elseif score < parked.first then
    parked.first = score
    redis.call('ZADD', marker_key, whole(score / 0x1000), '1')
  end
end
