-- recurring.lua: recurring templates (`ql:r:<jid>`) and the jobs they spawn.

QlessRecurringJob = {}
load_module('options') -- need_integer, json_list, even without options

-- Parses recur's arguments after the queue; raises before anything is written.
local function parse_recur(args)
  local p = {
    jid = need_name(args[2], 'RecurringJob On(): Arg "jid" missing'),
    -- An empty klass is accepted, as put accepts it (it names no key).
    klass = need(args[3], 'RecurringJob On(): Arg "klass" missing'),
    raw = args[4],
  }
  local spec = need(args[5], 'RecurringJob On(): Arg "spec" missing')
  if args[4] == nil or not decode(args[4]) then
    error('RecurringJob On(): Arg "data" not JSON: ' .. tostring(args[4]))
  end
  if spec ~= 'interval' then
    error('Recur(): schedule type "' .. spec .. '" unknown')
  end
  p.interval = need_number(args[6], 'Recur(): Arg "interval" not a number: ')
  p.offset = need_number(args[7], 'Recur(): Arg "offset" not a number: ')
  if p.interval <= 0 then
    error('Recur(): Arg "interval" must be greater than 0')
  end
  local options = parse_options(args, 8, ' priority tags retries backlog ', 'Recur(): Unrecognized option ')
  p.tags = json_list(options['tags'] or '[]', 'Recur(): Arg "tags" must be JSON string array: ')
  p.priority = need_number(options['priority'] or 0, 'Recur(): Arg "priority" not a number: ')
  p.retries = need_integer(options['retries'] or 0, 'Recur(): Arg "retries" not a number: ')
  p.backlog = need_number(options['backlog'] or 0, 'Recur(): Arg "backlog" not a number: ')
  return p
end

-- recur(queue, jid, klass, data, 'interval', seconds, offset, [options]).
function QlessRecurringJob.recur(now, args)
  local queue = need_name(args[1], 'Recur(): Arg "queue" missing')
  local p = parse_recur(args)
  local key = 'ql:r:' .. p.jid
  local old = rcall('hmget', key, 'count', 'queue')
  if old[2] then
    rcall('zrem', 'ql:q:' .. old[2] .. '-recur', p.jid)
  end
  rcall('hmset', key, 'jid', p.jid, 'klass', p.klass, 'data', p.raw, 'priority', p.priority,
    'tags', encode(p.tags), 'state', 'recur', 'queue', queue, 'type', 'interval',
    'count', old[1] or 0, 'interval', p.interval, 'retries', p.retries, 'backlog', p.backlog)
  rcall('zadd', 'ql:q:' .. queue .. '-recur', now + p.offset, p.jid)
  rcall('zadd', 'ql:queues', 'NX', now, queue)
  return p.jid
end

-- unrecur(jid): deletes the template; jobs it spawned stay.
function QlessRecurringJob.unrecur(jid)
  need_name(jid, 'Unrecur(): Arg "jid" missing')
  local queue = rcall('hget', 'ql:r:' .. jid, 'queue')
  if queue then
    rcall('zrem', 'ql:q:' .. queue .. '-recur', jid)
    rcall('del', 'ql:r:' .. jid)
  end
  return true
end

-- recur.get(jid): the template object, or nil.
function QlessRecurringJob.data(jid)
  need(jid, 'Recur(): Arg "jid" missing')
  local v = rcall('hmget', 'ql:r:' .. jid, 'jid', 'klass', 'state', 'queue', 'priority', 'interval',
    'retries', 'count', 'data', 'tags', 'backlog')
  if not v[1] then
    return nil
  end
  return {
    jid = v[1], klass = v[2], state = v[3], queue = v[4],
    priority = tonumber(v[5]), interval = tonumber(v[6]), retries = tonumber(v[7]),
    count = tonumber(v[8]), data = v[9], tags = decode(v[10] or '{}'), backlog = tonumber(v[11] or 0),
  }
end

local UPDATE_NUMBERS = { ['priority'] = true, ['interval'] = true, ['retries'] = true, ['backlog'] = true }

-- Checks every `key value` pair of recur.update before any is applied.
local function parse_update(args)
  local pairs_ = {}
  for i = 2, #args, 2 do
    local name, value = args[i], args[i + 1]
    need(value, 'No value provided for ' .. tostring(name))
    if UPDATE_NUMBERS[name] then
      if name == 'backlog' then
        value = need_number(value, 'Recur(): Arg "backlog" not a number: ')
      elseif name == 'retries' then
        value = need_integer(value, 'Recur(): Arg "retries" must be a number: ')
      else
        value = need_number(value, 'Recur(): Arg "' .. name .. '" must be a number: ')
      end
      if name == 'interval' and value <= 0 then
        error('Recur(): Arg "interval" must be greater than 0')
      end
    elseif name == 'data' then
      if not decode(value) then
        error('Recur(): Arg "data" is not JSON-encoded: ' .. value)
      end
    elseif name == 'queue' then
      need_name(value, 'Recur(): Arg "queue" missing')
    elseif name ~= 'klass' then
      -- (klass may be empty, as recur accepts it; need() above refused a missing one)
      error('Recur(): Unrecognized option "' .. name .. '"')
    end
    pairs_[#pairs_ + 1] = { name, value }
  end
  return pairs_
end

-- Applies one checked recur.update pair.
local function apply_update(now, jid, name, value)
  local key = 'ql:r:' .. jid
  if name == 'interval' then
    local current = rcall('hmget', key, 'queue', 'interval')
    rcall('zincrby', 'ql:q:' .. current[1] .. '-recur', value - (tonumber(current[2]) or value), jid)
  elseif name == 'queue' then
    local old = rcall('hget', key, 'queue')
    local score = rcall('zscore', 'ql:q:' .. old .. '-recur', jid)
    rcall('zrem', 'ql:q:' .. old .. '-recur', jid)
    if score then
      rcall('zadd', 'ql:q:' .. value .. '-recur', score, jid)
    end
    rcall('zadd', 'ql:queues', 'NX', now, value)
  end
  rcall('hset', key, name, value)
end

-- recur.update(jid, key, value...): changes a template; returns 1.
function QlessRecurringJob.update(now, args)
  local jid = need_name(args[1], 'Recur(): Arg "jid" missing')
  local updates = parse_update(args)
  if rcall('exists', 'ql:r:' .. jid) == 0 then
    error('Recur(): No recurring job ' .. jid)
  end
  for _, item in ipairs(updates) do
    apply_update(now, jid, item[1], item[2])
  end
  return true
end

-- recur.tag / recur.untag (jid, tag...): the resulting tag list as JSON.
function QlessRecurringJob.retag(jid, tags, adding)
  local raw = rcall('hget', 'ql:r:' .. jid, 'tags')
  if not raw then
    error((adding and 'Tag(): Job ' or 'Untag(): Job ') .. jid .. ' does not exist')
  end
  local current = decode(raw)
  local result = {}
  local seen = {}
  local drop = {}
  if not adding then
    for _, tag in ipairs(tags) do drop[tag] = true end
  end
  for _, tag in ipairs(current) do
    if not drop[tag] and not seen[tag] then
      seen[tag] = true
      result[#result + 1] = tag
    end
  end
  if adding then
    for _, tag in ipairs(tags) do
      if not seen[tag] then
        seen[tag] = true
        result[#result + 1] = tag
      end
    end
  end
  local encoded = encode(result)
  rcall('hset', 'ql:r:' .. jid, 'tags', encoded)
  return encoded
end

-- Creates one job from a template, scheduled (and history-stamped) at `at`.
local function spawn(queue, now, template, at)
  local jid = template.jid
  local count = rcall('hincrby', 'ql:r:' .. jid, 'count', 1)
  local child = jid .. '-' .. count
  load_module('tagindex')
  QlessJob.index_tags(child, template.tag_list, now)
  rcall('hmset', 'ql:j:' .. child, 'jid', child, 'klass', template.klass, 'data', template.data,
    'priority', template.priority, 'tags', template.tags, 'state', 'waiting', 'worker', '',
    'expires', 0, 'queue', queue, 'retries', template.retries, 'remaining', template.retries,
    'time', string.format('%.20f', at), 'spawned_from_jid', jid)
  add_history(child, at, '"put"', json_pair('q', queue), template.cap)
  rcall('zadd', 'ql:q:' .. queue .. '-work', (tonumber(template.priority) or 0) - at / 1e10, child)
end

local function load_template(jid, cap)
  local v = rcall('hmget', 'ql:r:' .. jid, 'klass', 'data', 'priority', 'tags', 'retries', 'interval', 'backlog')
  return {
    jid = jid, klass = v[1], data = v[2], priority = v[3], tags = v[4] or '{}', retries = v[5],
    interval = tonumber(v[6]), backlog = tonumber(v[7] or 0) or 0, tag_list = decode(v[4] or '{}'), cap = cap,
  }
end

-- Spawns the jobs of the queue's `due` templates, at most `budget` in total.
-- A template that missed more than `backlog` runs (backlog > 0) skips ahead.
function QlessRecurringJob.spawn_due(queue, now, budget, due)
  local key = 'ql:q:' .. queue .. '-recur'
  local cap = config_number('max-job-history', 100)
  local spawned = 0
  for _, jid in ipairs(due) do
    local template = load_template(jid, cap)
    local at = floor(tonumber(rcall('zscore', key, jid)))
    local interval = template.interval
    if template.backlog ~= 0 then
      local missed = (now - at) / interval
      if missed > template.backlog then
        at = at + math.ceil(missed - template.backlog) * interval
      end
    end
    local before = spawned
    while at <= now and spawned < budget do
      spawn(queue, now, template, at)
      spawned = spawned + 1
      at = at + interval
    end
    if spawned > before then
      rcall('zadd', key, at, jid)
    end
  end
end

--[[ recur(queue, jid, klass, data, 'interval', seconds, offset,
         [priority p] [tags T] [retries n] [backlog n]) -> jid
  Writes the template (count kept), first spawn at now + offset, registers the queue.
  Errors: Recur(): Arg "queue" missing; RecurringJob On(): Arg "jid"/"klass"/"spec" missing |
          Arg "data" not JSON: <v>; Recur(): schedule type "<x>" unknown |
          Arg "interval"/"offset" not a number: <v> | Arg "interval" must be greater than 0 |
          Arg "priority"/"retries"/"backlog" not a number: <v> |
          Arg "tags" must be JSON string array: <v> | Unrecognized option "<x>" |
          Odd number of additional args: <args>
]]
QlessAPI['recur'] = function(now, a)
  return QlessRecurringJob.recur(now, a)
end

--[[ unrecur(jid) -> 1 (also for unknown jids); spawned jobs stay. ]]
QlessAPI['unrecur'] = function(_, a)
  return QlessRecurringJob.unrecur(a[1])
end

--[[ recur.get(jid) -> JSON {jid, klass, state:"recur", queue, priority, interval,
  retries, count, data, tags, backlog} or nil ]]
QlessAPI['recur.get'] = function(_, a)
  local object = QlessRecurringJob.data(a[1])
  return object and encode(object) or nil
end

--[[ recur.update(jid, (key, value)...) -> 1; keys priority interval retries data klass
  queue backlog. All pairs are checked before any is applied.
  Errors: Recur(): Arg "jid" missing | No recurring job <jid> | Unrecognized option "<k>" |
          Arg "<k>" must be a number: <v> | Arg "backlog" not a number: <v> |
          Arg "interval" must be greater than 0 | Arg "data" is not JSON-encoded: <v>;
          No value provided for <k>
]]
QlessAPI['recur.update'] = function(now, a)
  return QlessRecurringJob.update(now, a)
end

-- The tags after the jid, for recur.tag / recur.untag.
local function tag_args(a, message)
  local jid = need_name(a[1], message)
  local tags = {}
  for i = 2, #a do
    tags[#tags + 1] = a[i]
  end
  return jid, tags
end

--[[ recur.tag(jid, tag...) -> JSON string of the template's tag list.
  Errors: Tag(): Arg "jid" missing | Tag(): Job <jid> does not exist
]]
QlessAPI['recur.tag'] = function(_, a)
  local jid, tags = tag_args(a, 'Tag(): Arg "jid" missing')
  return QlessRecurringJob.retag(jid, tags, true)
end

--[[ recur.untag(jid, tag...) -> JSON string of the template's tag list.
  Errors: Untag(): Arg "jid" missing | Untag(): Job <jid> does not exist
]]
QlessAPI['recur.untag'] = function(_, a)
  local jid, tags = tag_args(a, 'Untag(): Arg "jid" missing')
  return QlessRecurringJob.retag(jid, tags, false)
end
