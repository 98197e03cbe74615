-- fixed-window.lua: fixed window counter, one atomic decision.
-- KEYS[1]  state: the window index and the count in it, packed into one integer by includes/packed.lua
--          (or "<window index>:<count>" when that does not fit), expiring at the end of that window
-- ARGV[1]  now: ms since the epoch, or '' to read Redis TIME
-- ARGV[2]  limit: integer, units per window
-- ARGV[3]  windowMs: window length in ms (integer)
-- ARGV[4]  cost: integer >= 1
-- ARGV[5]  record: 1 = record an allowed call, 0 = peek (decide, change nothing)
-- returns {allowed 0|1, remaining, retryAfterMs, resetAtMs}
-- The window index lives in the value, not the key name, so the key is known before the script
-- reads the time (every key a script touches is passed in KEYS). A refused call is not counted.
-- @include decide-fixed-window

return decide_fixed_window(KEYS[1], ARGV, 0, ARGV[5] == '1')
