-- throttle-demand.lua: what one shard of a sharded throttle asks of the global cap (src/throttle/shares.ts):
-- the sum of its busy lanes' own rates. Read-only; O(sample) whatever the number of lanes: the lanes
-- beyond the sample are counted at the sample's mean rate.
-- KEYS[1]  busy: the shard's busy set (lane id -> queued units)
-- KEYS[2]  global: the shard's global hash (its share: `xi` µs between starts, `xe` until when it holds)
-- ARGV[1]  lanePrefix: a lane's key is lanePrefix .. lane id
-- ARGV[2]  sample: read the rates of at most this many busy lanes
-- ARGV[3]  laneIntervalUs: the interval of a lane that has none stored (the throttle's own)
-- returns {busy lanes, demand in milli-starts per second (cost units), share µs or 0, share until µs or 0}
local busy = redis.call('ZCARD', KEYS[1])
local share = redis.call('HMGET', KEYS[2], 'xi', 'xe')
local xi = tonumber(share[1] or 0)
local xe = tonumber(share[2] or 0)
if busy == 0 then return {0, 0, xi, xe} end
local ids = redis.call('ZRANGE', KEYS[1], '0', tonumber(ARGV[2]) - 1)
local default = tonumber(ARGV[3])
local sum = 0
for _, id in ipairs(ids) do
  local i = tonumber(redis.call('HGET', ARGV[1] .. id, 'i') or default)
  if i == nil or i <= 0 then i = default end
  sum = sum + 1e9 / i
end
return {busy, math.floor(sum * busy / #ids), xi, xe}
