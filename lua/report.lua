-- report.lua: the stats command (reads what stats.lua recorded).

-- The histogram fields, in the order `stats` reports them. Built only here:
-- 148 number-to-string conversions cost ~60 us in Redis' Lua.
local function histogram_fields()
  local fields = {}
  for i = 0, 59 do fields[#fields + 1] = 's' .. i end
  for i = 1, 59 do fields[#fields + 1] = 'm' .. i end
  for i = 1, 23 do fields[#fields + 1] = 'h' .. i end
  for i = 1, 6 do fields[#fields + 1] = 'd' .. i end
  return fields
end

-- {count, mean, std, histogram} of one wait/run hash.
local function summary(key, fields)
  local values = rcall('hmget', key, 'total', 'mean', 'vk', unpack(fields))
  local count = tonumber(values[1]) or 0
  local vk = tonumber(values[3]) or 0
  local histogram = {}
  for i = 1, #fields do
    histogram[i] = tonumber(values[i + 3]) or 0
  end
  local std = 0
  if count > 1 then
    std = math.sqrt(vk / (count - 1))
  end
  return { count = count, mean = tonumber(values[2]) or 0, std = std, histogram = histogram }
end

--[[ stats(queue, date) -> JSON
  {retries, failed, failures, wait: {count, mean, std, histogram[148]}, run: {...}}
  for the UTC day containing `date`; std = sqrt(vk / (count - 1)), 0 if count <= 1;
  histogram = s0..s59, m1..m59, h1..h23, d1..d6.
  Errors: Stats(): Arg "queue" missing | Arg "date" missing or not a number: <v>
  Read-only.
]]
QlessAPI['stats'] = function(_, a)
  local queue = need(a[1], 'Stats(): Arg "queue" missing')
  local date = need_number(a[2], 'Stats(): Arg "date" missing or not a number: ')
  local day = date - (date % 86400)
  local fields = histogram_fields()
  local counters = rcall('hmget', 'ql:s:stats:' .. day .. ':' .. queue, 'retries', 'failed', 'failures')
  return encode({
    retries = tonumber(counters[1]) or 0,
    failed = tonumber(counters[2]) or 0,
    failures = tonumber(counters[3]) or 0,
    wait = summary('ql:s:wait:' .. day .. ':' .. queue, fields),
    run = summary('ql:s:run:' .. day .. ':' .. queue, fields),
  })
end
