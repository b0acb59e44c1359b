-- config.lua: the config.get / config.set / config.unset commands.
-- (Numeric options are read by the other modules with config_numbers.)

Qless.config = {}

-- Values a reader gets when `ql:config` has no override.
Qless.config.defaults = {
  ['application'] = 'qless',
  ['heartbeat'] = 60,
  ['grace-period'] = 10,
  ['stats-history'] = 30,
  ['histogram-history'] = 7,
  ['jobs-history-count'] = 50000,
  ['jobs-history'] = 604800,
}

-- Options that must hold numbers; `<queue>-heartbeat` and
-- `<queue>-max-concurrency` are recognised by suffix.
local NUMERIC_OPTIONS = {
  ['heartbeat'] = true,
  ['grace-period'] = true,
  ['jobs-history'] = true,
  ['jobs-history-count'] = true,
  ['max-job-history'] = true,
  ['max-worker-age'] = true,
  ['stats-history'] = true,
  ['histogram-history'] = true,
}

local function is_numeric_option(option)
  return NUMERIC_OPTIONS[option]
    or option:sub(-10) == '-heartbeat'
    or option:sub(-16) == '-max-concurrency'
end

-- config.get(key): the stored string, else the default, else nil.
-- config.get(): every default overlaid with every override.
function Qless.config.get(key)
  if key then
    return rcall('hget', 'ql:config', key) or Qless.config.defaults[key]
  end
  local all = {}
  for name, value in pairs(Qless.config.defaults) do
    all[name] = value
  end
  local stored = rcall('hgetall', 'ql:config')
  for i = 1, #stored, 2 do
    all[stored[i]] = stored[i + 1]
  end
  return all
end

-- config.set(option, value): numeric options refuse anything but a number.
function Qless.config.set(option, value)
  need_name(option, 'config.set(): Arg "option" missing')
  need(value, 'config.set(): Arg "value" missing')
  if is_numeric_option(option) and finite(value) == nil then
    error('config.set(): Arg "value" must be a number for "' .. option .. '": ' .. value)
  end
  Qless.publish('log', encode({ event = 'config_set', option = option, value = value }))
  rcall('hset', 'ql:config', option, value)
end

function Qless.config.unset(option)
  need_name(option, 'config.unset(): Arg "option" missing')
  Qless.publish('log', encode({ event = 'config_unset', option = option }))
  rcall('hdel', 'ql:config', option)
end

--[[ config.get([key])
  key given: the raw value (stored string, or default: numbers reply as integers), or nil.
  no key: JSON object of every default overlaid with the stored overrides (strings).
]]
QlessAPI['config.get'] = function(_, a)
  if a[1] then
    return Qless.config.get(a[1])
  end
  return encode(Qless.config.get())
end

--[[ config.set(key, value) -> nil
  Errors: config.set(): Arg "option" missing | Arg "value" missing |
          Arg "value" must be a number for "<key>": <value>
  Publishes ql:log {event:"config_set", option, value}. Writes ql:config.
]]
QlessAPI['config.set'] = function(_, a)
  Qless.config.set(a[1], a[2])
end

--[[ config.unset(key) -> nil
  Publishes ql:log {event:"config_unset", option}. Writes ql:config.
]]
QlessAPI['config.unset'] = function(_, a)
  Qless.config.unset(a[1])
end
