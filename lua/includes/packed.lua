-- includes/packed.lua: a few small integers stored as ONE decimal integer, so Redis keeps the value
-- int-encoded (a 16-byte object) instead of as a 32- or 48-byte string.
-- pack_ints(head, {a, b, ...}): head, then each of a, b, ... zero-padded to one width w, then w itself:
--   (29933537, {1}) -> "29933537" .. "1" .. "1";  (29933537, {12, 0}) -> "29933537" .. "12" .. "00" .. "2".
-- Read from the right it needs no separator. When it would not fit in 18 digits (int64 holds 18
-- safely), or a number is negative, the value is written "head:a:b" instead; both forms are read back.
local function pack_ints(head, rest)
  local parts, w = {}, 1
  for i = 1, #rest do
    parts[i] = int(rest[i])
    if #parts[i] > w then w = #parts[i] end
  end
  local h = int(head)
  local fits = #h + w * #rest + 1 <= 18 and w <= 9
  for i = 1, #rest do if rest[i] < 0 then fits = false end end
  if not fits then return h .. ':' .. table.concat(parts, ':') end
  local out = {h}
  for i = 1, #rest do out[i + 1] = string.rep('0', w - #parts[i]) .. parts[i] end
  out[#rest + 2] = tostring(w)
  return table.concat(out)
end

-- unpack_ints(value, n): the head and the n numbers after it, from either form.
local function unpack_ints(value, n)
  local out = {}
  if string.find(value, ':', 1, true) then
    local i = 1
    for part in string.gmatch(value, '[^:]+') do
      out[i] = tonumber(part)
      i = i + 1
    end
    return out
  end
  local w = tonumber(string.sub(value, -1))
  local stop = #value - 1
  for i = n + 1, 2, -1 do
    out[i] = tonumber(string.sub(value, stop - w + 1, stop))
    stop = stop - w
  end
  out[1] = tonumber(string.sub(value, 1, stop))
  return out
end
