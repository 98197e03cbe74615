-- includes/lease.lua: the members of one concurrency lease.
-- A lease of cost c holds c members: "<id>" when c = 1, "<id>#1" .. "<id>#c" otherwise; the id of a
-- lease with c > 1 ends in "~c", so release and extend know how many members to touch.
local function lease_members(id)
  local cost = tonumber(string.match(id, '~(%d+)$')) or 1
  if cost == 1 then return {id} end
  local members = {}
  for i = 1, cost do members[i] = id .. '#' .. i end
  return members
end

-- Keeps the key alive at least until its latest lease expires.
local function keep_alive(key, ttl_ms)
  if redis.call('PTTL', key) < ttl_ms then redis.call('PEXPIRE', key, ttl(ttl_ms)) end
end

