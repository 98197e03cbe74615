-- token-bucket.lua: token bucket, one atomic decision.
-- KEYS[1]  state: integer, the µs at which the bucket is full again (absent or past = a full bucket).
--          The level follows from it: tokens x interval = capacity x interval - (full_at - now), an exact
--          integer in µs of refill, so one integer is all the state (the classic {tokens, last refill}
--          pair in src/limiters/token-bucket.model.ts decides identically; the property tests hold them
--          together).
-- ARGV[1]  now: µs since the epoch, or '' to read Redis TIME
-- ARGV[2]  capacity: integer, tokens
-- ARGV[3]  intervalUs: µs it takes to refill one token (integer, 1e6 / refill per second)
-- ARGV[4]  cost: integer >= 1, tokens
-- ARGV[5]  record: 1 = record, 0 = peek (decide, change nothing)
-- returns {allowed 0|1, remaining tokens, retryAfterUs, resetAtUs (when the bucket is full again)}
-- @include decide-token-bucket

return decide_token_bucket(KEYS[1], ARGV, 0, ARGV[5] == '1')
