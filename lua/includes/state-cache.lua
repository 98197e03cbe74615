-- includes/state-cache.lua: in a batch, the string state of a key that calls touch one after the
-- other is read once and written once.
-- The batched forms of the decision scripts and of lua/limits.lua (src/redis/script-forms.ts) run many
-- calls in one script. The calls of one busy caller, or a limit every caller shares (a route's, a
-- tenant's: the same place in every request of a rule set), touch the same key call after call: a GET
-- and a SET each. Within one script nothing else runs and no key expires, so such a key's value can
-- stay in Lua from the moment it repeats and be written once, at the batch's end: every call sees
-- exactly the state the calls before it left, and Redis ends up with what the calls one after the
-- other would have left (the last value; the expiry of the last write that set one, else the key's own).
-- A key becomes held when a call reads it at the place the call before read it (per place: a one-key
-- decision's key, or the n-th string-state limit of a request). Other keys go straight to Redis, as
-- outside a batch: holding every key a batch touched cost more to grow its table than it saved when
-- no key repeats (+3.6k Redis instructions per decision over 10,000 callers, measured), and scanning a
-- few slots per key cost more still.
-- A script run outside a batch never begins the cache: get_states and put_state go straight to Redis.
-- begin_states(last_key): from here on (until flush_states) reads and writes go through the cache.
-- get_state(key): with the cache on (decide_held's read), the key's value (false when absent), as a
-- call's only key (place 1).
-- get_states(keys, m): the values of keys[1..m] (place i for keys[i]), those not held in one MGET;
-- in a batch, in one table reused by every call: read it before the next call.
-- put_state(key, value, px): the value to SET (its text, or held numbers), with PX px or, when px is
-- false, keeping the key's expiry (includes/now.lua set_state).
-- flush_states(): writes every changed key held and ends the cache. A path that reads or writes keys by
-- other commands (DUMP, RESTORE) calls suspend_states first and resume_states after.
-- While the cache is on, a decision gives its new state as numbers rather than text: a fixed window's or
-- sliding counter's table {head, a[, b]} (as includes/packed.lua unpack_ints reads it), a bucket's or
-- GCRA's whole number. A held key keeps them, so the next call reads them without parsing, and the text
-- is made once, when the key is written; a key not held is written at once, as its text (write_state):
-- the same text the call's own SET would have written.
-- @include now
-- @include packed

-- Per run (nil: no cache): each held key's value (false: absent) and pending expiry (nil: unchanged
-- since read; false: changed, keep the key's expiry; a number: changed, PX that); the held keys in the
-- order they were taken; per place, the key the previous call read there; get_states' reply and the
-- places of the keys it did not hold.
local held_value, held_px, held_keys, held_count, last_at = nil, nil, nil, 0, nil
local states_out, states_missing, states_missing_at = nil, nil, nil

-- `last_key`: the key the call before read at place 1 (a one-key batch begins the cache when it sees a
-- key repeat), or nil.
local function begin_states(last_key)
  held_value, held_px, held_keys, held_count, last_at = {}, {}, {}, 0, {last_key}
  states_out, states_missing, states_missing_at = {}, {}, {}
end

-- SET of a state value, held (the numbers) or not (its text).
local function write_state(key, value, px)
  local kind = type(value)
  if kind == 'table' then
    if #value == 2 then value = pack_ints(value[1], {value[2]}) else value = pack_ints(value[1], {value[2], value[3]}) end
  elseif kind == 'number' then
    value = int(value)
  end
  return set_state(key, value, px)
end

-- Starts holding `key` with the value just read from Redis.
local function hold(key, value)
  held_value[key] = value
  held_count = held_count + 1
  held_keys[held_count] = key
end

local function get_state(key)
  local v = held_value[key]
  if v ~= nil then return v end
  v = redis.call('GET', key)
  if last_at[1] == key then hold(key, v) else last_at[1] = key end
  return v
end

-- MGET for a call's several keys: a command from a script costs ~1 µs of bridging beyond its own work,
-- more than a GET itself, so the keys not held go in one.
local function get_states(keys, m)
  local held = held_value
  if not held then
    if m == 1 then return {redis.call('GET', keys[1])} end
    return redis.call('MGET', unpack(keys, 1, m))
  end
  local out, missing, at, last = states_out, states_missing, states_missing_at, last_at
  local n = 0
  for i = 1, m do
    local key = keys[i]
    local v = held[key]
    if v == nil then
      n = n + 1
      missing[n], at[n] = key, i
    end
    out[i] = v
  end
  if n == 1 then
    missing[1] = redis.call('GET', missing[1])
  elseif n > 1 then
    local values = redis.call('MGET', unpack(missing, 1, n))
    for j = 1, n do missing[j] = values[j] end
  end
  for j = 1, n do
    local i = at[j]
    local key, v = keys[i], missing[j]
    out[i] = v
    -- Read here by the call before too: held from now on. (A key twice in one call: the first hold stands.)
    if last[i] == key then
      if held[key] == nil then hold(key, v) end
    else
      last[i] = key
    end
  end
  return out
end

local function put_state(key, value, px)
  local held = held_value
  -- Outside a batch's cache a decision gives its state as text: no conversion to look for.
  if not held then return set_state(key, value, px) end
  if held[key] == nil then return write_state(key, value, px) end
  if held_px[key] == nil or px then held_px[key] = px end
  held[key] = value
end

-- A one-key decision in a batch that holds states: `of(state, argv, o, record)` (a decide include's
-- *_of function) on the key's value, its write held or sent. (The decide functions test held_value
-- themselves, so a decision outside a cache pays no call for it.)
local function decide_held(of, key, argv, o, record)
  local reply, value, px = of(get_state(key), argv, o, record)
  if value then put_state(key, value, px) end
  return reply
end

local function flush_states()
  if not held_value then return end
  for i = 1, held_count do
    local key = held_keys[i]
    local px = held_px[key]
    if px ~= nil then write_state(key, held_value[key], px) end
  end
  held_value = nil
end

-- For a path that reads or writes keys by other commands: the changed keys written, the cache off.
-- Returns whether it was on, for resume_states.
local function suspend_states()
  if not held_value then return false end
  flush_states()
  return true
end

local function resume_states(was_on)
  if was_on then begin_states() end
end
