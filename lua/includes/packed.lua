-- includes/packed.lua: a few small integers stored as ONE decimal integer, so Redis keeps the value
-- int-encoded (a 16-byte object) instead of as a 32- or 48-byte string.
-- pack_ints(head, {a, b, ...}): head, then each of a, b, ... zero-padded to one width w, then w itself:
--   (29933537, {1}) -> "29933537" .. "1" .. "1";  (29933537, {12, 0}) -> "29933537" .. "12" .. "00" .. "2".
-- Read from the right it needs no separator. When it would not fit in 18 digits (int64 holds 18
-- safely), or a number is negative, the value is written "head:a:b" instead; both forms are read back.
-- One and two numbers (the fixed window's and the sliding counter's state, written on every allowed
-- decision) take a path without tables, string.rep or table.concat: the same bytes, a third of the time.

-- Zero padding by length: in the packed form w <= 9, so at most 8 zeros.
local PACK_ZEROS = {[0] = '', '0', '00', '000', '0000', '00000', '000000', '0000000', '00000000'}

local function pack_ints(head, rest)
  local h = int(head)
  local n = #rest
  if n == 1 then
    local a = rest[1]
    local sa = int(a)
    local w = #sa
    if a >= 0 and #h + w + 1 <= 18 and w <= 9 then return h .. sa .. w end
    return h .. ':' .. sa
  end
  if n == 2 then
    local a, b = rest[1], rest[2]
    local sa, sb = int(a), int(b)
    local w = #sa
    if #sb > w then w = #sb end
    if a >= 0 and b >= 0 and #h + 2 * w + 1 <= 18 and w <= 9 then return h .. PACK_ZEROS[w - #sa] .. sa .. PACK_ZEROS[w - #sb] .. sb .. w end
    return h .. ':' .. sa .. ':' .. sb
  end
  local parts, w = {}, 1
  for i = 1, n do
    parts[i] = int(rest[i])
    if #parts[i] > w then w = #parts[i] end
  end
  local fits = #h + w * n + 1 <= 18 and w <= 9
  for i = 1, n do if rest[i] < 0 then fits = false end end
  if not fits then return h .. ':' .. table.concat(parts, ':') end
  local out = {h}
  for i = 1, n do out[i + 1] = string.rep('0', w - #parts[i]) .. parts[i] end
  out[n + 2] = tostring(w)
  return table.concat(out)
end

-- unpack_ints(value, n): the head and the n numbers after it, from either form, or from the table of
-- them that a batch holds (includes/state-cache.lua), which is returned as it is (read it, never change it).
local function unpack_ints(value, n)
  if type(value) == 'table' then return value end
  local out = {}
  if string.find(value, ':', 1, true) then
    local i = 1
    for part in string.gmatch(value, '[^:]+') do
      out[i] = tonumber(part)
      i = i + 1
    end
    return out
  end
  local stop = #value - 1
  local w = string.byte(value, stop + 1) - 48
  for i = n + 1, 2, -1 do
    out[i] = tonumber(string.sub(value, stop - w + 1, stop))
    stop = stop - w
  end
  out[1] = tonumber(string.sub(value, 1, stop))
  return out
end
