-- sliding-log.lua: sliding window log, one atomic decision.
-- KEYS[1]  state: sorted set, one member per unit of cost, scored by its time in ms
-- ARGV[1]  now: ms since the epoch, or '' to read Redis TIME
-- ARGV[2]  limit: integer, units per window
-- ARGV[3]  windowMs: window length in ms (integer)
-- ARGV[4]  cost: integer >= 1
-- ARGV[5]  record: 1 = record, 0 = peek (decide, change nothing)
-- ARGV[6]  recordRejected: 1 = record refused calls too (strict "log-all"), 0 = log accepted calls only
-- returns {allowed 0|1, remaining, retryAfterMs, resetAtMs}
-- An entry leaves the log once its age reaches the window (score <= now - window).
-- @include decide-sliding-log

return decide_sliding_log(KEYS[1], ARGV, 0, ARGV[5] == '1')
