-- stats.lua: per queue and day wait/run statistics and the failure counters.

-- The histogram fields, in the order `stats` reports them.
local HISTOGRAM_FIELDS = {}
for i = 0, 59 do HISTOGRAM_FIELDS[#HISTOGRAM_FIELDS + 1] = 's' .. i end
for i = 1, 59 do HISTOGRAM_FIELDS[#HISTOGRAM_FIELDS + 1] = 'm' .. i end
for i = 1, 23 do HISTOGRAM_FIELDS[#HISTOGRAM_FIELDS + 1] = 'h' .. i end
for i = 1, 6 do HISTOGRAM_FIELDS[#HISTOGRAM_FIELDS + 1] = 'd' .. i end

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
  local key = 'ql:s:' .. stat .. ':' .. day_of(now) .. ':' .. queue
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
  rcall('hmset', key, 'total', count, 'mean', mean, 'vk', vk, field, (tonumber(current[4]) or 0) + 1)
end

-- Adds `delta` to a counter of `ql:s:stats:<day>:<queue>`.
function QlessQueue.count_stat(queue, when, field, delta)
  rcall('hincrby', 'ql:s:stats:' .. day_of(when) .. ':' .. queue, field, delta)
end

local function summary(key)
  local values = rcall('hmget', key, 'total', 'mean', 'vk', unpack(HISTOGRAM_FIELDS))
  local count = tonumber(values[1]) or 0
  local vk = tonumber(values[3]) or 0
  local histogram = {}
  for i = 1, #HISTOGRAM_FIELDS do
    histogram[i] = tonumber(values[i + 3]) or 0
  end
  local std = 0
  if count > 1 then
    std = math.sqrt(vk / (count - 1))
  end
  return { count = count, mean = tonumber(values[2]) or 0, std = std, histogram = histogram }
end

-- stats(queue, date): the day's counters and wait/run summaries.
function QlessQueue.stats(queue, date)
  local day = day_of(date)
  local counters = rcall('hmget', 'ql:s:stats:' .. day .. ':' .. queue, 'retries', 'failed', 'failures')
  return {
    retries = tonumber(counters[1]) or 0,
    failed = tonumber(counters[2]) or 0,
    failures = tonumber(counters[3]) or 0,
    wait = summary('ql:s:wait:' .. day .. ':' .. queue),
    run = summary('ql:s:run:' .. day .. ':' .. queue),
  }
end
