-- gcra.lua: leaky bucket as a meter (GCRA, virtual scheduling), one atomic decision.
-- KEYS[1]  state: string, the theoretical arrival time (TAT) in µs; absent = idle
-- ARGV[1]  now: µs since the epoch, or '' to read Redis TIME
-- ARGV[2]  intervalUs: emission interval T in µs (integer, 1e6 / rate per second)
-- ARGV[3]  burst: how many calls beyond the steady rate may arrive together (integer >= 0); tolerance = burst x T
-- ARGV[4]  cost: integer >= 1; a call of cost c counts as c back-to-back calls
-- ARGV[5]  record: 1 = record, 0 = peek (decide, change nothing)
-- returns {allowed 0|1, remaining, retryAfterUs, resetAtUs (when the TAT is back to now: idle)}
-- A call conforms when it is not earlier than TAT - tolerance; conforming moves TAT by cost x T.
-- @include now

local now = now_us(ARGV[1])
local interval = tonumber(ARGV[2])
local tolerance = tonumber(ARGV[3]) * interval
local cost = tonumber(ARGV[4])
local record = ARGV[5] == '1'

local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end

local new_tat = tat + cost * interval
local allow_at = new_tat - interval - tolerance
if now < allow_at then
  return {0, math.max(0, math.floor((tolerance + interval - (tat - now)) / interval)), allow_at - now, tat}
end
if record then
  tat = new_tat
  redis.call('SET', KEYS[1], int(tat), 'PX', ttl((tat - now) / 1000))
end
return {1, math.max(0, math.floor((tolerance + interval - (tat - now)) / interval)), 0, tat}
