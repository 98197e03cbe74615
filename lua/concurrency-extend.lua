-- concurrency-extend.lua: keep a live lease for another lease length (long operations heartbeat).
-- KEYS[1]  state: sorted set of lease members scored by expiry (see concurrency-acquire.lua)
-- ARGV[1]  now: ms since the epoch, or '' to read Redis TIME
-- ARGV[2]  leaseMs: lease length in ms, counted from now
-- ARGV[3]  leaseId: the lease to extend
-- returns the number of units extended (0: the lease is gone; the caller no longer holds a slot)
-- @include now
-- @include lease

local now = now_ms(ARGV[1])
local lease_ms = tonumber(ARGV[2])
local extended = 0
for _, member in ipairs(lease_members(ARGV[3])) do
  local score = redis.call('ZSCORE', KEYS[1], member)
  if score and tonumber(score) > now then
    redis.call('ZADD', KEYS[1], 'XX', now + lease_ms, member)
    extended = extended + 1
  end
end
if extended > 0 then keep_alive(KEYS[1], lease_ms) end
return extended
