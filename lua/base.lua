-- base.lua: the class tables every module hangs its functions on, the lazy
-- module loader, and the few helpers nearly every command uses.
--
-- The whole build is one Lua 5.1 chunk (200 locals at most), so functions
-- live on the class tables and only shared helpers are top-level locals.
-- Nothing writes a global: Redis >= 6.2.7 makes the global table read-only.

local Qless = {}
local QlessQueue = {}
local QlessJob = {}
local QlessRecurringJob -- created by recurring.lua, the only module that fills it
local QlessAPI = {}

-- Lazy modules. The chunk's top level runs again on every EVALSHA, and in
-- Redis' Lua every closure, table or captured local made costs 0.05-0.8 us:
-- defining every function up front would cost more than a whole put. So
-- build.py wraps the module files (every file but this one and api.lua) in
-- one function, `run_module(name)`, one branch per file: a module's
-- functions exist only once a command loaded it. api.lua runs the modules
-- each command always needs; code that needs another module only on some
-- path calls load_module(name) right there. There is no fallback (a
-- metatable loading everything on a miss cost ~1% of every call): calling a
-- function of a module nobody loaded is an error, which the test suite,
-- running every command path on the built script, would show.
local run_module -- assigned by the build, right after this file

-- The modules loaded on demand, made by the first load_module: most calls
-- need none, and api.lua's own loads are not recorded (running a module a
-- second time only makes its functions again, as pop's rare lock expiry
-- does with stats).
local LOADED

-- Runs a module's body, at most once per call through here.
local function load_module(name)
  if not LOADED then
    LOADED = {}
  elseif LOADED[name] then
    return
  end
  LOADED[name] = true
  run_module(name)
end

-- At most this many members go into one redis.call: unpack() of a longer list
-- overflows the Lua C stack ("too many results to unpack").
local CHUNK = 1000
-- Housekeeping done as a side effect of another command (expiring completed
-- jobs, releasing due scheduled jobs from `queues`) touches at most this many
-- jobs per call, so one call never stalls Redis behind a large backlog.
local SWEEP = 100
local SWEEP_TEXT = '100' -- as an argument to redis.call (see the note on numbers below)

local floor = math.floor
local rcall = redis.call
local encode = cjson.encode
local decode = cjson.decode

-- Returns value as a finite number, or nil (tonumber accepts "nan" and "inf").
local function finite(value)
  local n = tonumber(value)
  if n == nil or n ~= n or n == math.huge or n == -math.huge then
    return nil
  end
  return n
end

-- Raises `message .. tostring(value)` unless value is a finite number.
local function need_number(value, message)
  local n = finite(value)
  if n == nil then
    error(message .. tostring(value))
  end
  return n
end

-- The checks of option values, need_integer and json_list, are in
-- options.lua: a command loads it where an option needs checking (put only
-- for values other than '[]', which most puts send), and recurring.lua,
-- which always checks its options, loads it up front.
local need_integer, json_list

-- A count or offset argument: a finite number, floored, and clamped to
-- +-1e15 so it still prints as an integer when passed to Redis (a LIMIT of
-- 1e+18 would fail after the call has started writing).
local function need_count(value, message)
  return math.max(math.min(floor(need_number(value, message)), 1e15), -1e15)
end

-- Raises message when value is nil (an argument the caller left out).
local function need(value, message)
  if value == nil then
    error(message)
  end
  return value
end

-- An identifier (jid, klass, queue, worker, failure group, config option):
-- like need, and an empty string is refused too, since it would be written
-- into keys and sets (`ql:q:-work`, a job with jid '') that no client can use.
local function need_name(value, message)
  if value == '' then
    error(message .. ' or empty')
  end
  return need(value, message)
end


-- Reads `name value` pairs from args[first..] into a table; refuses an odd
-- count. With `unknown` (an error prefix), names not in `allowed`
-- (space-separated, e.g. ' next delay ') are refused; without it they are
-- ignored, as put and complete must for clients that send extra pairs.
local function parse_options(args, first, allowed, unknown)
  local options = {}
  local n = #args
  if (n - first + 1) % 2 == 1 then
    error('Odd number of additional args: ' .. table.concat(args, ' ', first, n))
  end
  for i = first, n, 2 do
    local name = args[i]
    if not string.find(name, ' ', 1, true) and string.find(allowed, ' ' .. name .. ' ', 1, true) then
      options[name] = args[i + 1]
    elseif unknown then
      error(unknown .. '"' .. name .. '"')
    end
  end
  return options
end

-- Runs `cmd key member...` in slices of CHUNK members.
local function call_chunked(cmd, key, members)
  local n = #members
  for first = 1, n, CHUNK do
    rcall(cmd, key, unpack(members, first, math.min(first + CHUNK - 1, n)))
  end
end

-- Numbers cost more than strings on their way to text. Redis prints every
-- number argument of redis.call with %.17g and Lua prints a number joined
-- with `..` with %.14g: both go through glibc's exact float printer (0.2-0.3
-- us each for a timestamp, as much as a small Redis command; ~15% of a pop's
-- instructions were spent there). So constants are passed as strings ('0',
-- not 0), timestamps in key names and history entries are printed with %d
-- (the same text as %.14g for 0 < n < 1e14; day_text in stats.lua, here in
-- add_history), and pop prints a score it passes to several commands once
-- (score_text in pop.lua).

-- Appends the items of `more` to `list`; returns list.
local function extend(list, more)
  local n = #list
  for i = 1, #more do
    list[n + i] = more[i]
  end
  return list
end

-- One numeric option of `ql:config`, or the fallback when unset or not a number.
local function config_number(name, fallback)
  return finite(rcall('hget', 'ql:config', name)) or fallback
end

-- Moves a job's legacy `history` blob (already read by the caller; nil or
-- false when there is none) into its history list: see legacy.lua.
local function migrate_history(jid, blob)
  if blob then
    load_module('legacy')
    QlessJob.migrate_history(jid, blob)
  end
end

local function is_tracked(jid)
  return rcall('zscore', 'ql:tracked', jid) ~= false
end

function Qless.publish(channel, message)
  rcall('publish', 'ql:' .. channel, message)
end


-- The JSON of a one-key object, e.g. {"q":"name"}: what cjson makes of
-- { [key] = value }, without the table and the second cjson call.
local function json_pair(key, value)
  return '{"' .. key .. '":' .. encode(value) .. '}'
end

-- Appends one history event: [floor(when), what] or [floor(when), what, extra].
-- `what` and `extra` are JSON texts: callers spell out the fixed words
-- ('"done"') and one-key objects (json_pair), which saves cjson calls and
-- tables on every put, pop and complete. `cap` is config max-job-history
-- (<= 0: unbounded), or nil to read it only when needed: a list of two
-- entries is never trimmed (a cap below 2 behaves as 2). Over the cap the
-- first entry (the original put) and the newest ones survive. Callers first
-- migrate a legacy `history` hash field (migrate_history).
local function add_history(jid, now, what, extra, cap)
  local key = 'ql:j:' .. jid .. '-history'
  -- %d truncates: the floor of a positive number. (JSON texts hold no NUL
  -- byte, which %s would cut at.)
  local entry
  if now < 0 or now >= 1e14 then
    entry = '[' .. floor(now) .. ',' .. what .. (extra and ',' .. extra or '') .. ']'
  elseif extra == nil then
    entry = string.format('[%d,%s]', now, what)
  else
    entry = string.format('[%d,%s,%s]', now, what, extra)
  end
  local length = rcall('rpush', key, entry)
  if length <= 2 then
    return
  end
  cap = floor(cap or config_number('max-job-history', 100))
  if cap > 0 and length > cap then
    local first = rcall('lpop', key)
    rcall('ltrim', key, -math.max(cap - 1, 1), -1)
    rcall('lpush', key, first)
  end
end
