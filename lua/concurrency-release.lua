-- concurrency-release.lua: give a lease back.
-- KEYS[1]  state: sorted set of lease members scored by expiry (see concurrency-acquire.lua)
-- ARGV[1]  leaseId: the lease to give back
-- returns the number of units released (0: unknown, already released or expired and swept)
-- @include now
-- @include batch
-- @include lease

return batched('ZREM', KEYS[1], nil, lease_members(ARGV[1]))
