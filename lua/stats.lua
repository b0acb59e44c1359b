-- stats.lua: recording statistics: per queue and day wait/run samples
-- (`ql:s:wait|run:<day>:<queue>`) and the failure counters
-- (`ql:s:stats:<day>:<queue>`). The stats command is in report.lua.

-- The stats bin of a timestamp (UTC midnight) as it appears in key names:
-- %d gives the same text as Lua's %.14g for 0 < day < 1e14, more cheaply.
local function day_text(now)
  local day = now - (now % 86400)
  if day > 0 and day < 1e14 then
    return string.format('%d', day)
  end
  return tostring(day)
end

-- A whole number as the text Redis would print for it as a redis.call argument
-- (%.17g), by the cheaper %d; any other value is returned as it is (see the note on
-- numbers in base.lua). Here rather than in base.lua, whose top level every call runs:
-- only the commands that load this module print such numbers.
local function whole_text(n)
  if n ~= 0 and n > -1e15 and n < 1e15 and n == floor(n) then
    return string.format('%d', n)
  end
  return n
end
Qless.whole_text = whole_text

-- `now` as the job hash's `time` field stores it (%.20f, a long print), remembered for
-- the next call with the same number: complete.pop stores it for the completed job and
-- for the popped ones.
local time_number, time_string
function Qless.time_text(n)
  if n ~= time_number then
    time_number, time_string = n, string.format('%.20f', n)
  end
  return time_string
end

-- The histogram field a duration (seconds) is counted in.
local function bucket(seconds)
  seconds = floor(seconds)
  if seconds < 60 then
    return 's' .. seconds
  elseif seconds < 3600 then
    return 'm' .. floor(seconds / 60)
  elseif seconds < 86400 then
    return 'h' .. floor(seconds / 3600)
  end
  return 'd' .. floor(seconds / 86400)
end

-- Adds one sample to `ql:s:<stat>:<day>:<queue>`: count, Welford running mean
-- and sum of squared deviations (vk), and the histogram bucket.
function QlessQueue.stat(queue, now, stat, value)
  local key = 'ql:s:' .. stat .. ':' .. day_text(now) .. ':' .. queue
  local field = bucket(value)
  local current = rcall('hmget', key, 'total', 'mean', 'vk', field)
  local count = tonumber(current[1]) or 0
  local mean, vk
  if count == 0 then
    count, mean, vk = 1, value, 0
  else
    count = count + 1
    local old = tonumber(current[2])
    mean = old + (value - old) / count
    vk = tonumber(current[3]) + (value - mean) * (value - old)
  end
  -- The counts are whole numbers: printed by whole_text, the same text more cheaply.
  rcall('hmset', key, 'total', whole_text(count), 'mean', mean, 'vk', vk, field,
    whole_text((tonumber(current[4]) or 0) + 1))
end

-- Adds `delta` to a counter (failures, failed, retries) of the day of `when`.
function QlessQueue.count_stat(queue, when, field, delta)
  rcall('hincrby', 'ql:s:stats:' .. day_text(when) .. ':' .. queue, field, delta)
end
