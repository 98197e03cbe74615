-- admin-override-end.lua: remove a lane's override that has ended by itself (its `until` passed), only
-- if it is still the one that ended: an operator may have set a new one meanwhile, which stays.
-- KEYS[1]  overrides: the queue's overrides hash (lane -> stored override JSON)
-- ARGV[1]  lane: lane id
-- ARGV[2]  stored: the ended override's JSON as read
-- returns 1 when it was removed here, 0 when it was not there any more (removed, or replaced)
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
return redis.call('HDEL', KEYS[1], ARGV[1])
