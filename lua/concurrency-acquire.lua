-- concurrency-acquire.lua: concurrency limit, take a lease (one atomic decision).
-- KEYS[1]  state: sorted set of lease members scored by their expiry time in ms
-- ARGV[1]  now: ms since the epoch, or '' to read Redis TIME
-- ARGV[2]  limit: integer, units in flight
-- ARGV[3]  leaseMs: lease length in ms: a holder that dies without releasing loses its slot after this
-- ARGV[4]  cost: integer >= 1, units this operation holds
-- ARGV[5]  record: 1 = record, 0 = peek (decide, change nothing)
-- ARGV[6]  leaseId: see includes/lease.lua for how cost is encoded in it
-- returns {allowed 0|1, remaining, retryAfterMs, resetAtMs}
-- retryAfterMs is when enough leases *expire*; holders that release early free slots sooner.
-- @include now
-- @include batch
-- @include lease

local now = now_ms(ARGV[1])
local limit = tonumber(ARGV[2])
local lease_ms = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local record = ARGV[5] == '1'
local key = KEYS[1]

if record then redis.call('ZREMRANGEBYSCORE', key, '-inf', now) end
local held = redis.call('ZCOUNT', key, '(' .. int(now), '+inf')
local allowed = held + cost <= limit

if allowed and record then
  batched('ZADD', key, now + lease_ms, lease_members(ARGV[6]))
  keep_alive(key, lease_ms)
  held = held + cost
end

local latest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
local reset_at = now
if latest[2] and tonumber(latest[2]) > now then reset_at = tonumber(latest[2]) end
if allowed then return {1, math.max(0, limit - held), 0, reset_at} end

local need = held + cost - limit
local dead = redis.call('ZCOUNT', key, '-inf', now)
local freeing = redis.call('ZRANGE', key, dead + need - 1, dead + need - 1, 'WITHSCORES')
return {0, math.max(0, limit - held), tonumber(freeing[2]) - now, reset_at}
