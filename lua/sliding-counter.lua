-- sliding-counter.lua: sliding window counter (weighted previous window), one atomic decision.
-- KEYS[1]  state: the window index, the count in that window and the count in the window before,
--          packed into one integer by includes/packed.lua (or "<index>:<count>:<count before>")
-- ARGV[1]  now: ms since the epoch, or '' to read Redis TIME
-- ARGV[2]  limit: integer, units per window
-- ARGV[3]  windowMs: window length in ms (integer)
-- ARGV[4]  cost: integer >= 1
-- ARGV[5]  record: 1 = record, 0 = peek (decide, change nothing)
-- ARGV[6]  rounding: of the weighted estimate, 'floor' (lenient, the default) or 'ceil' (strict)
-- returns {allowed 0|1, remaining, retryAfterMs, resetAtMs}
-- estimate = current + previous * (window - position) / window, rounded; allowed while
-- estimate + cost <= limit. All arithmetic is on integers (limit * window < 2^53 is checked by the caller).
-- @include decide-sliding-counter

return decide_sliding_counter(KEYS[1], ARGV, 0, ARGV[5] == '1')
