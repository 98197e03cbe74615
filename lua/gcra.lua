-- gcra.lua: leaky bucket as a meter (GCRA, virtual scheduling), one atomic decision.
-- KEYS[1]  state: string, the theoretical arrival time (TAT) in µs; absent = idle
-- ARGV[1]  now: µs since the epoch, or '' to read Redis TIME
-- ARGV[2]  intervalUs: emission interval T in µs (integer, 1e6 / rate per second)
-- ARGV[3]  burst: how many calls beyond the steady rate may arrive together (integer >= 0); tolerance = burst x T
-- ARGV[4]  cost: integer >= 1; a call of cost c counts as c back-to-back calls
-- ARGV[5]  record: 1 = record, 0 = peek (decide, change nothing)
-- returns {allowed 0|1, remaining, retryAfterUs, resetAtUs (when the TAT is back to now: idle)}
-- A call conforms when it is not earlier than TAT - tolerance; conforming moves TAT by cost x T.
-- @include decide-gcra

return decide_gcra(KEYS[1], ARGV, 0, ARGV[5] == '1')
