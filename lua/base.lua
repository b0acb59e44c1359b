-- base.lua: the class tables every module hangs its functions on, and the small
-- helpers they share (argument checks, chunked bulk calls, publishing, history).
--
-- The whole build is one Lua 5.1 chunk (200 locals at most), so public functions
-- live on these tables and only hot or widely shared helpers are top-level locals.
-- Nothing here writes a global: Redis >= 6.2.7 makes the global table read-only.

local Qless = { ns = 'ql:' }
local QlessQueue = { ns = 'ql:q:' }
local QlessJob = { ns = 'ql:j:' }
local QlessRecurringJob = { ns = 'ql:r:' }
local QlessWorker = { ns = 'ql:w:' }
local QlessAPI = {}

-- At most this many members go into one redis.call: unpack() of a longer list
-- overflows the Lua C stack ("too many results to unpack").
local CHUNK = 1000
-- Housekeeping done as a side effect of another command (expiring completed
-- jobs, releasing due scheduled jobs from `queues`) touches at most this many
-- jobs per call, so one call never stalls Redis behind a large backlog.
local SWEEP = 100

local HUGE = math.huge
local floor = math.floor
local rcall = redis.call
local encode = cjson.encode
local decode = cjson.decode

-- Returns value as a finite number, or nil (tonumber accepts "nan" and "inf").
local function finite(value)
  local n = tonumber(value)
  if n == nil or n ~= n or n == HUGE or n == -HUGE then
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

-- Raises message when value is nil (an argument the caller left out).
local function need(value, message)
  if value == nil then
    error(message)
  end
  return value
end

-- Decodes a JSON argument that must be an array of strings (tags, depends).
-- Invalid JSON raises cjson's own error text, as the reference script does.
local function json_list(raw, message)
  local list = decode(raw)
  if type(list) ~= 'table' then
    error(message .. tostring(raw))
  end
  for _, item in ipairs(list) do
    local kind = type(item)
    if kind ~= 'string' and kind ~= 'number' then
      error(message .. tostring(raw))
    end
  end
  return list
end

-- Reads `name value` pairs from args[first..]; refuses an odd count and names
-- not in `allowed` (a set), so a typo never silently changes nothing.
local function parse_options(args, first, allowed, unknown)
  local options = {}
  local n = #args
  if (n - first + 1) % 2 == 1 then
    error('Odd number of additional args: ' .. table.concat(args, ' ', first, n))
  end
  for i = first, n, 2 do
    local name = args[i]
    if not allowed[name] then
      error(unknown .. '"' .. name .. '"')
    end
    options[name] = args[i + 1]
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

-- UTC midnight of a timestamp: the stats bin.
local function day_of(now)
  return now - (now % 86400)
end

local function extend(list, more)
  local n = #list
  for i = 1, #more do
    list[n + i] = more[i]
  end
  return list
end

local function is_tracked(jid)
  return rcall('zscore', 'ql:tracked', jid) ~= false
end

function Qless.publish(channel, message)
  rcall('publish', 'ql:' .. channel, message)
end

-- lock_lost goes to the worker's own channel and to the log.
function Qless.lock_lost(jid, worker)
  local message = encode({ jid = jid, event = 'lock_lost', worker = worker })
  rcall('publish', 'ql:w:' .. worker, message)
  rcall('publish', 'ql:log', message)
end

-- History entries are JSON arrays [floor(when), what] or [floor(when), what, extra].
local function history_entry(when, what, extra)
  if extra == nil then
    return encode({ floor(when), what })
  end
  return encode({ floor(when), what, extra })
end

-- Converts an old-style history blob (one object per put) into entries.
local function legacy_entries(blob)
  local entries = {}
  for _, item in ipairs(decode(blob)) do
    if item.put then
      entries[#entries + 1] = history_entry(item.put, 'put', { q = item.q })
    end
    if item.popped then
      entries[#entries + 1] = history_entry(item.popped, 'popped', { worker = item.worker })
    end
    if item.failed then
      entries[#entries + 1] = history_entry(item.failed, 'failed')
    end
    if item.done then
      entries[#entries + 1] = history_entry(item.done, 'done')
    end
  end
  return entries
end

-- Moves a legacy `history` hash field (read by the caller) into the list.
function QlessJob.migrate_history(jid, blob)
  if blob then
    local entries = legacy_entries(blob)
    if #entries > 0 then
      call_chunked('rpush', 'ql:j:' .. jid .. '-history', entries)
    end
    rcall('hdel', 'ql:j:' .. jid, 'history')
  end
end

-- Appends one event. `cap` is config max-job-history (<= 0: unbounded); over
-- the cap the first entry (the original put) and the newest ones survive.
function QlessJob.add_history(jid, now, what, extra, cap)
  local key = 'ql:j:' .. jid .. '-history'
  local length = rcall('rpush', key, history_entry(now, what, extra))
  cap = floor(cap)
  if cap > 0 and length > cap then
    local keep = math.max(cap - 1, 1)
    local first = rcall('lpop', key)
    rcall('ltrim', key, -keep, -1)
    rcall('lpush', key, first)
  end
end

-- The history as objects {when, what, ...extra}; `blob` is the legacy field.
function QlessJob.read_history(jid, blob)
  local raw = rcall('lrange', 'ql:j:' .. jid .. '-history', 0, -1)
  if blob then
    extend(raw, legacy_entries(blob))
  end
  local history = {}
  for i, item in ipairs(raw) do
    local entry = decode(item)
    local object = entry[3]
    if type(object) ~= 'table' then
      object = {}
    end
    object.when = entry[1]
    object.what = entry[2]
    history[i] = object
  end
  return history
end
