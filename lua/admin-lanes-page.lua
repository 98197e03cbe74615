-- admin-lanes-page.lua: one page of a throttle's busy lanes, busiest first, after a cursor.
-- The busy set orders lanes by (queued units desc, lane id desc): Redis orders equal scores by member,
-- so (depth, lane id) is a total order and the last one seen is an exact cursor. When the cursor's
-- lane has since changed depth or left the set, it is put back at the cursor's place while the page
-- is read, then restored, all inside this script: no lane is skipped or repeated because the page
-- boundary moved. Cost: O(log N + page), whatever the number of lanes.
-- KEYS[1]  busy: the throttle's busy set: lane id -> queued cost units
-- ARGV[1]  pageSize: page size (lanes, >= 1)
-- ARGV[2]  afterDepth: cursor, the depth of the last lane of the previous page ('' for the first page)
-- ARGV[3]  afterLane: cursor, the id of the last lane of the previous page ('' for the first page)
-- returns {busy lanes in total, lane id 1, depth 1, lane id 2, depth 2, ...}

local size = tonumber(ARGV[1])
local reply = {redis.call('ZCARD', KEYS[1])}
local restore
local from = 0
if ARGV[2] ~= '' then
  local lane = ARGV[3]
  local current = redis.call('ZSCORE', KEYS[1], lane)
  if not current or tonumber(current) ~= tonumber(ARGV[2]) then
    -- Put the cursor where it was; the page is read past it before the lane is put back as it is.
    redis.call('ZADD', KEYS[1], ARGV[2], lane)
    restore = current or false
  end
  from = redis.call('ZREVRANK', KEYS[1], lane) + 1
end
local page = redis.call('ZREVRANGE', KEYS[1], from, from + size - 1, 'WITHSCORES')
if restore == false then
  redis.call('ZREM', KEYS[1], ARGV[3])
elseif restore then
  redis.call('ZADD', KEYS[1], restore, ARGV[3])
end
for i = 1, #page do reply[#reply + 1] = page[i] end
return reply
