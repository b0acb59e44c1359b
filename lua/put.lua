-- put.lua: put and requeue.

-- qless-py 0.11 sends put without the worker argument: 5 positionals plus
-- pairs (an odd count), where a well-formed call has 6 plus pairs. It is
-- taken for that legacy form only when it cannot be a malformed new-style
-- call: odd count, a number where the legacy delay is (5th) and nothing or a
-- put option name 6th. Every other odd call keeps its usual error.
local LEGACY_OPTION = ' priority tags retries depends '

local function put_positionals(args)
  local sixth = args[6]
  if #args % 2 == 1 and tonumber(args[5]) ~= nil
    and (sixth == nil or (not string.find(sixth, ' ', 1, true)
      and string.find(LEGACY_OPTION, ' ' .. sixth .. ' ', 1, true))) then
    return extend({ '' }, args)
  end
  return args
end

-- Parses put's arguments; raises before anything is written.
function QlessQueue.parse_put(args)
  local a = put_positionals(args)
  -- Every field put sets is named here, nil ones too: the constructor then
  -- sizes the table once instead of it growing.
  local p = {
    worker = a[1] or '',
    queue = need_name(a[2], 'Put(): Arg "queue" missing'),
    jid = need_name(a[3], 'Put(): Arg "jid" missing'),
    -- An empty klass is accepted, as qless-core does: it names no key, and the Ruby
    -- gem puts jobs of anonymous classes with one.
    klass = need(a[4], 'Put(): Arg "klass" missing'),
    raw = a[5],
    delay = nil, retries = nil, priority = nil, tags = nil, depends = nil, live = nil,
  }
  if a[5] == nil or not decode(a[5]) then
    error('Put(): Arg "data" missing or not JSON: ' .. tostring(a[5]))
  end
  p.delay = need_number(a[6], 'Put(): Arg "delay" not a number: ')
  local options = parse_options(a, 7, ' priority tags retries depends ')
  local retries, tags, depends = options['retries'], options['tags'], options['depends']
  -- No tags and no dependencies ('[]', what most puts send) need no check: the
  -- checks (options.lua) are loaded only for other values, saving ~8 us a put.
  if retries or (tags and tags ~= '[]') or (depends and depends ~= '[]') then
    load_module('options') -- need_integer, json_list
  end
  if retries then
    p.retries = need_integer(retries, 'Put(): Arg "retries" not a number: ')
  end
  if options['priority'] then
    p.priority = need_number(options['priority'], 'Put(): Arg "priority" not a number')
  end
  if tags then
    p.tags = tags == '[]' and {} or json_list(tags, 'Put(): Arg "tags" not JSON')
  end
  if depends then
    p.depends = depends == '[]' and {} or json_list(depends, 'Put(): Arg "depends" not JSON: ')
  end
  return p
end

-- Writes the job hash and places the job in one of its queue's sets.
local function place(now, p, existed)
  local jid, prefix, key = p.jid, 'ql:q:' .. p.queue, 'ql:j:' .. p.jid
  local outstanding = 0
  if existed or p.live then
    outstanding = rcall('scard', key .. '-dependencies')
  end
  local state = 'waiting'
  if outstanding > 0 then
    state = 'depends'
  elseif p.delay > 0 then
    state = 'scheduled'
  end
  -- The usual priority and retries go as the text Redis would print for them (see the
  -- note on numbers in base.lua): three float prints fewer, ~5% of a put's instructions.
  -- (-0 keeps its sign: Redis prints it "-0".)
  local priority, retries = p.priority, p.retries
  if priority == 0 and 1 / priority > 0 then
    priority = '0'
  end
  if retries == 5 then
    retries = '5'
  end
  rcall('hmset', key, 'jid', jid, 'klass', p.klass, 'data', p.raw, 'priority', priority,
    'tags', #p.tags == 0 and '{}' or encode(p.tags), 'state', state, 'worker', '', 'expires', '0', 'queue', p.queue,
    'retries', retries, 'remaining', retries, 'time', string.format('%.20f', now))
  if state == 'depends' then
    if p.delay > 0 then
      rcall('hset', key, 'scheduled', now + p.delay)
    end
    rcall('zadd', prefix .. '-depends', now, jid)
  elseif state == 'scheduled' then
    rcall('zadd', prefix .. '-scheduled', now + p.delay, jid)
  else
    rcall('zadd', prefix .. '-work', p.priority - now / 1e10, jid)
  end
end

--[[ put(worker, queue, jid, klass, data, delay, [priority p] [tags T] [retries n] [depends D]) -> jid
  (qless-py's legacy form without worker is accepted too, see README.)
  Creates or replaces the job: waiting, scheduled (delay > 0) or depends (live
  dependencies). A re-put job leaves its old queue, worker, completed list or failure
  group; its old owner gets lock_lost unless it is the putter.
  Errors: Put(): Arg "queue"/"jid"/"klass" missing | Arg "data" missing or not JSON: <v> |
          Arg "delay" not a number: <v> | Arg "retries" not a number: <v> |
          Arg "priority" not a number<v> (sic) | Arg "tags" not JSON<v> (sic) |
          Arg "depends" not JSON: <v> | Odd number of additional args: <args> | Job <jid> cannot depend on itself |
          Job <jid> depending on <jids> would create a dependency cycle;
          cjson's own text for invalid JSON.
  Publishes ql:log {jid, event:"put", queue}; ql:put if tracked; lock_lost (see above).
]]
function QlessQueue.put(now, p)
  local jid = p.jid
  -- Whether the job and ql:tracked exist, in one EXISTS (a key named twice
  -- counts twice: 1 for the job, 2 for tracked). A new jid and no tracked job
  -- are the usual case: reading eight absent fields (HMGET's reply for a
  -- missing hash, spelled out below) or asking ZSCORE costs more.
  local present = rcall('exists', 'ql:j:' .. jid, 'ql:tracked', 'ql:tracked')
  local old
  if present % 2 == 1 then
    old = rcall('hmget', 'ql:j:' .. jid, 'priority', 'tags', 'queue', 'state', 'failure', 'retries', 'worker', 'history')
  else
    old = { false, false, false, false, false, false, false, false }
  end
  local existed = old[4] ~= false
  local old_tags = old[2] and decode(old[2])
  p.retries = p.retries or tonumber(old[6]) or 5
  p.priority = p.priority or tonumber(old[1]) or 0
  p.tags = p.tags or old_tags or {}
  if p.depends and #p.depends > 0 then
    load_module('deps')
    p.live = QlessJob.live_dependencies(jid, p.depends, 'Put(): ')
  end
  -- Every check is done: from here on the call only writes.
  if old_tags or #p.tags > 0 then
    load_module('tagindex')
    QlessJob.retag(jid, old_tags or {}, p.tags, now)
  end
  if existed then
    load_module('reput')
  end
  if p.live and existed then
    QlessJob.drop_old_dependencies(jid, p.depends)
  end
  Qless.publish('log', encode({ jid = jid, event = 'put', queue = p.queue }))
  migrate_history(jid, old[8])
  add_history(jid, now, '"put"', json_pair('q', p.queue))
  if existed then
    QlessJob.detach(jid, p, old)
  end
  if p.live then
    QlessJob.add_dependencies(jid, p.live)
  end
  place(now, p, existed)
  -- The queue is usually known already: ZRANK (no number to print) is cheaper
  -- than ZADD NX, whose score Redis would print and parse on every put.
  if not rcall('zrank', 'ql:queues', p.queue) then
    rcall('zadd', 'ql:queues', 'NX', now, p.queue)
  end
  if present >= 2 and is_tracked(jid) then
    Qless.publish('put', jid)
  end
  return jid
end


QlessAPI['put'] = function(now, a)
  return QlessQueue.put(now, QlessQueue.parse_put(a))
end

--[[ requeue(same arguments as put) -> jid
  Errors: Requeue(): Arg "jid" missing | Job <jid> does not exist, then put's errors.
]]
QlessAPI['requeue'] = function(now, a)
  local jid = need_name(put_positionals(a)[3], 'Requeue(): Arg "jid" missing')
  if rcall('exists', 'ql:j:' .. jid) == 0 then
    error('Requeue(): Job ' .. jid .. ' does not exist')
  end
  return QlessQueue.put(now, QlessQueue.parse_put(a))
end

--[[ put.ifabsent(policy, same arguments as put) -> {jid, outcome}
  Extension (django_qless): a put that never replaces a job. `policy` says which
  existing job blocks it: `any` (any state, completed included) or `active` (any
  state but complete: a completed job is put again, as `put` would). outcome is
  `put` when the job was written, else the state of the job that blocked it; a
  blocked call writes nothing and publishes nothing. Other qless clients never
  send it; put's own reply and behaviour are unchanged.
  Errors: Put.ifabsent(): Arg "policy" must be "any" or "active": <v>, then put's.
]]
QlessAPI['put.ifabsent'] = function(now, a)
  local policy = a[1]
  if policy ~= 'any' and policy ~= 'active' then
    error('Put.ifabsent(): Arg "policy" must be "any" or "active": ' .. tostring(policy))
  end
  local rest = {}
  for i = 2, #a do
    rest[i - 1] = a[i]
  end
  -- Parsed (every argument checked) before the existence check, so a malformed
  -- call raises whether or not the job exists.
  local p = QlessQueue.parse_put(rest)
  local state = rcall('hget', 'ql:j:' .. p.jid, 'state')
  if state and (policy == 'any' or state ~= 'complete') then
    return { p.jid, state }
  end
  QlessQueue.put(now, p)
  return { p.jid, 'put' }
end

--[[ put.many(n1, put args 1 (n1 values), n2, put args 2, ...) -> list of jids
  Extension (django_qless): many plain puts in one call, for bulk enqueue. Each
  group is a count then exactly the arguments `put` takes (worker first). Every
  group is parsed and checked before the first is written, so a refused call
  writes nothing; dependencies are refused here (their checks read what earlier
  puts of the call would write), so the checks cannot fail half-way. The i-th put
  runs at now + (i - 1) * 1e-6, so jobs of equal priority pop in call order.
  Each put writes exactly what the single `put` writes, with the same events.
  Errors: Put.many(): Arg "count" missing or not a number: <v> |
          Put.many(): Arg "depends" not supported: <v>, then put's.
]]
QlessAPI['put.many'] = function(now, a)
  local parsed, i, n = {}, 1, #a
  while i <= n do
    local count = tonumber(a[i])
    if count == nil or count < 1 or count ~= floor(count) or i + count > n then
      error('Put.many(): Arg "count" missing or not a number: ' .. tostring(a[i]))
    end
    local p = QlessQueue.parse_put({ unpack(a, i + 1, i + count) })
    if p.depends and #p.depends > 0 then
      error('Put.many(): Arg "depends" not supported: ' .. encode(p.depends))
    end
    parsed[#parsed + 1] = p
    i = i + count + 1
  end
  local jids = {}
  for k, p in ipairs(parsed) do
    jids[k] = QlessQueue.put(now + (k - 1) * 1e-6, p)
  end
  return jids
end
