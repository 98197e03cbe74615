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
-- @include decide-concurrency-acquire

return decide_concurrency(KEYS[1], ARGV, 0, ARGV[5] == '1')
