-- includes/admit-memo.lua: what the admissions of one script run (a batch, src/redis/scripts.ts) may
-- read once. A throttle's global hash is only read by an admission (the dispatcher, the gate, pauses and
-- the shares allocator write it, never inside an admission batch): the first admission of a throttle in
-- the run reads it, the others of the same throttle reuse the answer.
local global_memo = {}

-- HMGET of the global hash's fields s, p, xi, xe, v (the meter, the pause, the share and its expiry,
-- the virtual time).
local function global_state(key)
  local g = global_memo[key]
  if not g then
    g = redis.call('HMGET', key, 's', 'p', 'xi', 'xe', 'v')
    global_memo[key] = g
  end
  return g
end
