-- includes/batch.lua: commands over many members.
-- Runs `command` (ZADD with one score, or ZREM) over many members in batches: unpack() of a huge
-- table would overflow Lua's C stack. Returns the sum of the replies.
local function batched(command, key, score, members)
  local total, i = 0, 1
  while i <= #members do
    local args = {}
    for j = i, math.min(#members, i + 499) do
      if score then args[#args + 1] = score end
      args[#args + 1] = members[j]
    end
    total = total + redis.call(command, key, unpack(args))
    i = i + 500
  end
  return total
end
