-- includes/decide-limits.lua: the body of lua/limits.lua as a function, so its tables are made once
-- per script run, not once per call of a batch (src/redis/scripts.ts runs a batch's calls through
-- the body, the includes outside it).
-- decide_limits(keys, argv, k0, a0, n): one call's keys keys[k0 + 1 .. k0 + n] and arguments from
-- argv[a0 + 1] on, laid out as lua/limits.lua's KEYS and ARGV (lua/limits.lua: 0, 0, #KEYS; its batched
-- form, src/redis/scripts.ts, passes each call's offsets instead of copying its keys and arguments);
-- returns lua/limits.lua's reply and the offset in argv of the call's last argument (where the next
-- call's begin, in a batch).
-- @include decide-fixed-window
-- @include decide-sliding-counter
-- @include decide-sliding-log
-- @include decide-token-bucket
-- @include decide-gcra
-- @include decide-concurrency-acquire

-- Each decision script by name: decide(key, argv, o, record), its arguments at argv[o + 1 ..].
local LIMIT_DECIDERS = {
  ['fixed-window'] = decide_fixed_window,
  ['sliding-counter'] = decide_sliding_counter,
  ['sliding-log'] = decide_sliding_log,
  ['token-bucket'] = decide_token_bucket,
  gcra = decide_gcra,
  ['concurrency-acquire'] = decide_concurrency,
}
-- How many ARGV each decision script takes (its header; src/redis/script-table.ts): a limit's
-- arguments follow its script's name without a count.
local LIMIT_ARGC = {
  ['fixed-window'] = 5,
  ['sliding-counter'] = 6,
  ['sliding-log'] = 6,
  ['token-bucket'] = 5,
  gcra = 5,
  ['concurrency-acquire'] = 6,
}
-- The algorithms whose whole state is one string value: decided on the value read, written after.
local LIMIT_OF_STATE = {
  ['fixed-window'] = fixed_window_of,
  ['sliding-counter'] = sliding_counter_of,
  ['token-bucket'] = token_bucket_of,
  gcra = gcra_of,
}

-- Per limit i of the call being decided: its decision script, the offset of its arguments in argv,
-- the value read (string-state limits), the value to write (nil: nothing to write) and its ttl (false: keep the key's; includes/now.lua set_state). Reused by every call of a batch: a call runs to its
-- end before the next begins, and every entry it reads it has set.
local lim_name, lim_at, lim_read, lim_write, lim_px, lim_replies = {}, {}, {}, {}, {}, {}
-- The keys of the string-state limits, in order, for their one MGET; the call's keys.
local lim_key, lim_keys = {}, {}

-- The reply as lua/limits.lua returns it: allowed, then each limit's four numbers in turn (one flat
-- array: the client parses one array per call, not one per limit).
-- Up to three limits the table is made at its full size at once: grown entry by entry, Lua
-- reallocated it four times for three limits, on every call.
local function flat_reply(replies, n)
  local a, b, c = replies[2], replies[3], replies[4]
  if n == 3 then return {replies[1], a[1], a[2], a[3], a[4], b[1], b[2], b[3], b[4], c[1], c[2], c[3], c[4]} end
  if n == 2 then return {replies[1], a[1], a[2], a[3], a[4], b[1], b[2], b[3], b[4]} end
  if n == 1 then return {replies[1], a[1], a[2], a[3], a[4]} end
  local out = {replies[1]}
  local j = 1
  for i = 1, n do
    local r = replies[i + 1]
    out[j + 1], out[j + 2], out[j + 3], out[j + 4] = r[1], r[2], r[3], r[4]
    j = j + 4
  end
  return out
end

-- Every limit checked, then all charged in order, the keys saved first and put back if a charge
-- refuses: for two limits on one key, where a check cannot foresee the charge before it.
local function decide_limits_shared(keys, argv, n)
  local replies = {0}
  local all = true
  for i = 1, n do
    local reply = LIMIT_DECIDERS[lim_name[i]](keys[i], argv, lim_at[i], false)
    replies[i + 1] = reply
    if reply[1] ~= 1 then all = false end
  end
  if not all then return replies end
  local saved = {}
  for i = 1, n do
    local key = keys[i]
    if saved[key] == nil then
      local dump = redis.call('DUMP', key)
      if dump then saved[key] = {dump, math.max(0, redis.call('PTTL', key))} else saved[key] = false end
    end
  end
  for i = 1, n do
    local o = lim_at[i]
    local reply = LIMIT_DECIDERS[lim_name[i]](keys[i], argv, o, argv[o + 5] == '1')
    replies[i + 1] = reply
    if reply[1] ~= 1 then
      -- A later charge refused: undo every charge made, report this refusal.
      for key, s in pairs(saved) do
        redis.call('DEL', key)
        if s then redis.call('RESTORE', key, s[2], s[1]) end
      end
      return replies
    end
  end
  replies[1] = 1
  return replies
end

local function decide_limits(all_keys, argv, k0, a0, n)
  local keys = lim_keys
  for i = 1, n do keys[i] = all_keys[k0 + i] end
  local at = a0 + 1
  local shared = false
  for i = 1, n do
    local name = argv[at]
    local argc = LIMIT_ARGC[name]
    if not argc then return redis.error_reply('limits: unknown decision script ' .. tostring(name)) end
    lim_name[i], lim_at[i] = name, at
    at = at + 1 + argc
    local key = keys[i]
    for j = 1, i - 1 do
      if keys[j] == key then shared = true end
    end
  end
  local last = at - 1
  if shared then
    -- DUMP and RESTORE read and write the keys themselves: a batch's cache is written out first.
    local cached = suspend_states()
    local replies = decide_limits_shared(keys, argv, n)
    resume_states(cached)
    return flat_reply(replies, n), last
  end

  -- The string values, all in one MGET: a command from a script costs ~1 µs of bridging beyond its own
  -- work, more than a GET itself. Nothing is written before the last decision, so they stay current.
  -- In a batch a key held since an earlier call (includes/state-cache.lua) is not read again.
  local m = 0
  for i = 1, n do
    if LIMIT_OF_STATE[lim_name[i]] then
      m = m + 1
      lim_key[m] = keys[i]
    end
  end
  local values = m > 0 and get_states(lim_key, m)

  -- The call's replies, in a table every call reuses (flat_reply copies them out).
  local replies = lim_replies
  replies[1] = 0
  local all = true
  local v = 0
  for i = 1, n do
    local name, o = lim_name[i], lim_at[i]
    local of = LIMIT_OF_STATE[name]
    local reply
    if of then
      v = v + 1
      local state = values[v]
      -- Until a limit refuses, each is decided as its charge; after, as a check (nothing is charged).
      reply, lim_write[i], lim_px[i] = of(state, argv, o, all and argv[o + 5] == '1')
      lim_read[i] = state
    else
      -- Sorted-set state: checked now, charged once all have allowed.
      reply = LIMIT_DECIDERS[name](keys[i], argv, o, false)
      lim_write[i] = nil
    end
    replies[i + 1] = reply
    if reply[1] ~= 1 then all = false end
  end

  if not all then
    -- A limit decided as a charge before the refusal is reported as its check: the same value read.
    for i = 1, n do
      if lim_write[i] then replies[i + 1] = LIMIT_OF_STATE[lim_name[i]](lim_read[i], argv, lim_at[i], false) end
    end
    return flat_reply(replies, n), last
  end

  for i = 1, n do
    local o = lim_at[i]
    if lim_write[i] then
      put_state(keys[i], lim_write[i], lim_px[i])
    elseif not LIMIT_OF_STATE[lim_name[i]] then
      local reply = LIMIT_DECIDERS[lim_name[i]](keys[i], argv, o, argv[o + 5] == '1')
      replies[i + 1] = reply
      -- On a key no other limit touches, at the instant of its check, a charge allows as the check did.
      if reply[1] ~= 1 then return flat_reply(replies, n), last end
    end
  end
  replies[1] = 1
  return flat_reply(replies, n), last
end
