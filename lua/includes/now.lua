-- includes/now.lua: the clock every script uses.
-- Redis before 5 needs effects replication before a script may read TIME and then write;
-- from 5 on this is the default, and Redis 7 (which has REDIS_VERSION) skips the call: a pcall on
-- every decision is measurable at 100k+ decisions/s.
if redis.replicate_commands and not redis.REDIS_VERSION then pcall(redis.replicate_commands) end

-- Redis TIME, read once per script run: a batched call (src/redis/scripts.ts) makes all its decisions
-- at one instant, as one atomic script should.
local redis_time
local function read_time()
  if not redis_time then redis_time = redis.call('TIME') end
  return redis_time
end

-- now_us(arg): the caller's time in microseconds when given (tests, simulations, client clock),
-- else Redis TIME, so app servers with skewed clocks still agree.
-- Both are worked out once per run too: a batch of 32 three-limit calls asks 96 times.
local redis_now_us, redis_now_ms
local function now_us(arg)
  if arg ~= nil and arg ~= '' then return tonumber(arg) end
  if not redis_now_us then
    local t = read_time()
    redis_now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  return redis_now_us
end

-- now_ms(arg): the same in whole milliseconds.
local function now_ms(arg)
  if arg ~= nil and arg ~= '' then return tonumber(arg) end
  if not redis_now_ms then
    local t = read_time()
    redis_now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return redis_now_ms
end

-- The numbers of texts every call sends alike (a policy's limit, window, capacity, interval, cost; a
-- throttle's intervals and margins), kept from call to call where a function library keeps its upper-case
-- tables (src/redis/lua-functions.ts): tonumber() of a text is a strtod() each time, ~1k instructions for
-- '1000000000', where a lookup of the (interned) text is a few dozen. Bounded: emptied at 4,096 texts, so
-- texts that vary (a weighted cost) cost a parse each, as without it. Under EVAL it starts empty on every
-- call, as every table of an include does.
local PARSED_NUMBERS = { count = 0, of = {} }

local function number_of(text)
  local of = PARSED_NUMBERS.of
  local n = of[text]
  if n then return n end
  n = tonumber(text)
  if n == nil then return nil end
  if PARSED_NUMBERS.count >= 4096 then
    of = {}
    PARSED_NUMBERS.of, PARSED_NUMBERS.count = of, 0
  end
  of[text] = n
  PARSED_NUMBERS.count = PARSED_NUMBERS.count + 1
  return n
end

-- Integer formatting that never falls into %.14g exponent notation for large values. A whole number
-- within 2^53 goes through '%d' (Lua 5.1 casts it to a C long: exact), printf's integer path; '%.0f'
-- runs the floating-point digit generator, about twice the work for a 16-digit timestamp in µs, and
-- the state of every decision is written through here. Anything else (a fraction, NaN, an infinity)
-- keeps '%.0f' and its rounding.
local function exact_whole(x) return x % 1 == 0 and x < 9007199254740992 and x > -9007199254740992 end

local function int(x)
  if exact_whole(x) then return string.format('%d', x) end
  return string.format('%.0f', x)
end

-- A whole number as the text redis.call would send for it, made by '%d': a number given to redis.call
-- is turned into text by Redis with '%.17g', glibc's float formatting (~0.5 µs a number, more for a
-- 16-digit µs timestamp, measured in a script of 100,000 ZADDs: docs/decisions/admit-and-park.md), an
-- integer format is a fraction of that. The same digits for every whole number below 2^53 (no exponent
-- below 17 digits). Unlike int(), anything else is given back as the number (redis.call then sends its
-- 17 digits as before), never rounded: a fair tag or a marker score may be a fraction.
local function whole(x)
  if exact_whole(x) then return string.format('%d', x) end
  return x
end

-- TTL in ms for state that matters for `ms` more: one extra second, so state never vanishes early
-- when the caller's clock (injected time, the client clock source) runs apart from Redis's.
-- Every value carries its own time, so state that lives a little longer is never misread.
local function ttl(ms) return math.ceil(ms) + 1000 end

-- Writes a decision's string state: with its PX ttl, or, when `px` is false, keeping the key's expiry
-- (KEEPTTL): a window algorithm's later writes in one window would set the very expiry its first write
-- set (the window's end plus the margin), and a SET with PX costs Redis a third more than one without
-- (the expiry entry rewritten, the command rewritten with an absolute PXAT for replication).
local function set_state(key, value, px)
  if px then return redis.call('SET', key, value, 'PX', px) end
  return redis.call('SET', key, value, 'KEEPTTL')
end
