-- includes/quota.lua: spend quotas (src/throttle/quota.ts), counted where starts are decided.
-- The quotas come as one argument: per quota `scope,unit,limit,mode,prev,start,end,next` (scope k = each
-- lane, q = the queue; unit n = calls, c = cost units; mode r = refuse, d = defer; the window
-- boundaries in µs: the window before, the current one and the next one, computed by the caller's
-- calendar), quotas separated by ';'. A window's counter is a string key beside the lane's hash (scope
-- k) or the throttle's global hash (scope q), `:qu:<index>:<window start µs>`, in the same hash tag, and
-- expires an hour after its window ends.
-- @include now

-- True while the throttle's slot is being migrated (cluster resharding): its keys may be on either node
-- and a quota counter is not among a script's declared keys, so it could be read as missing or written
-- on the wrong node (the next MIGRATE would fail BUSYKEY). Two keys of the slot, one never existing,
-- fail EXISTS only then (as lua/throttle-dispatch.lua checks): the quota work is skipped. Only scripts
-- of a queue with quotas pay for the check.
local function quota_slot_migrating(key)
  return type(redis.pcall('EXISTS', key, key .. ':migrating')) == 'table'
end

local function parse_quotas(spec)
  local quotas = {}
  if not spec or spec == '' then return quotas end
  for part in string.gmatch(spec, '[^;]+') do
    local f = {}
    for field in string.gmatch(part, '[^,]+') do f[#f + 1] = field end
    quotas[#quotas + 1] = {
      index = #quotas,
      lane = f[1] == 'k',
      cost = f[2] == 'c',
      limit = tonumber(f[3]),
      refuse = f[4] == 'r',
      -- window starts as given (strings: key names never see a float's exponent form) and as numbers
      bounds = {f[5], f[6], f[7], f[8]},
      at = {tonumber(f[5]), tonumber(f[6]), tonumber(f[7]), tonumber(f[8])},
    }
  end
  return quotas
end

-- The window of quota `q` that holds instant `t` µs: its counter key and its end µs (nil: `t` lies
-- outside the three windows the caller computed, which a start within the horizon never does).
local function quota_window(q, lane_key, global_key, t)
  local i
  if t >= q.at[1] and t < q.at[2] then i = 1 elseif t >= q.at[2] and t < q.at[3] then i = 2 elseif t >= q.at[3] and t < q.at[4] then i = 3 end
  if not i then return nil, nil end
  return (q.lane and lane_key or global_key) .. ':qu:' .. q.index .. ':' .. q.bounds[i], q.at[i + 1]
end

local function quota_units(q, cost)
  if q.cost then return cost end
  return 1
end

-- The quota that keeps a start of `cost` at `t` out: {reset µs, lane-scoped} of the one whose window
-- ends last (nil when every quota has room).
local function quota_blocked(quotas, lane_key, global_key, t, cost)
  local reset, lane_scoped
  for _, q in ipairs(quotas) do
    local key, window_end = quota_window(q, lane_key, global_key, t)
    if key then
      local used = tonumber(redis.call('GET', key) or 0)
      if used + quota_units(q, cost) > q.limit and (not reset or window_end > reset) then
        reset = window_end
        lane_scoped = q.lane
      end
    end
  end
  if reset then return {reset, lane_scoped} end
  return nil
end

-- Adds `units` (negative: gives them back) to the counter `key` of a window ending at `window_end`.
-- INCRBYFLOAT: a reconciled cost may be fractional.
local function quota_add(key, units, window_end, now)
  local used = tonumber(redis.call('INCRBYFLOAT', key, units))
  if used <= 0 then redis.call('DEL', key) else redis.call('PEXPIRE', key, ttl((window_end - now) / 1000 + 3600000)) end
end

-- Counts (sign 1) or gives back (sign -1) a start of `cost` at `t` in every quota's window.
local function quota_charge(quotas, lane_key, global_key, t, cost, now, sign)
  for _, q in ipairs(quotas) do
    local key, window_end = quota_window(q, lane_key, global_key, t)
    if key then quota_add(key, sign * quota_units(q, cost), window_end, now) end
  end
end

-- A started job's actual cost differed by `diff` units: the cost quotas of its start's window follow.
local function quota_reconcile(quotas, lane_key, global_key, t, diff, now)
  for _, q in ipairs(quotas) do
    if q.cost then
      local key, window_end = quota_window(q, lane_key, global_key, t)
      if key then quota_add(key, diff, window_end, now) end
    end
  end
end

-- True when instants a and b fall in different windows of some quota (a start moved across a reset).
local function quota_crosses(quotas, a, b)
  for _, q in ipairs(quotas) do
    local ka = quota_window(q, '', '', a)
    local kb = quota_window(q, '', '', b)
    if ka ~= kb then return true end
  end
  return false
end
