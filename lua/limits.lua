-- limits.lua: every enforcing limit of one request, decided all-or-nothing in one atomic call.
-- KEYS[1..]  states: the state key of each limit, in the order of the decisions
-- ARGV[1..]  decisions: per limit: its decision script (fixed-window, sliding-counter, sliding-log, token-bucket, gcra, concurrency-acquire), then its ARGV as that script's header lays them out (their count is the script's)
-- returns {allowed 0|1, then per limit allowed 0|1, remaining, retryAfter, resetAt} in one flat array:
-- allowed = 1 when every limit allowed and all were charged; each limit's four numbers are its
-- decision script's reply.
-- Every limit is decided before anything is written, at one instant (Redis TIME is read once per run),
-- and all are charged only if all allow, so nothing is ever partly charged. One pass: the limits
-- whose state is one string value (fixed-window, sliding-counter, token-bucket, gcra) are read in one
-- MGET and each decided as its charge on its value, their SETs waiting until every limit has allowed;
-- a sorted-set limit (sliding-log, concurrency-acquire) is checked in the pass and charged after it.
-- When one refuses, each limit is reported as its check (record = 0) would report it, and nothing is
-- written. Two limits on one key (two rules with one policy and one descriptor) are the exception:
-- the second decision must see the first charge, so every limit is checked, then all are charged in
-- order, the keys saved first (DUMP) and put back if a charge refuses. The logic is in
-- includes/decide-limits.lua.
-- @include decide-limits

return decide_limits(KEYS, ARGV, 0, 0, #KEYS)
