-- queue.lua: put/requeue, queue counts, length, pause and forget.

local PUT_OPTIONS = { ['priority'] = true, ['tags'] = true, ['retries'] = true, ['depends'] = true }

local function is_json(raw)
  local ok, value = pcall(decode, raw)
  return ok and value ~= nil
end

-- qless-py 0.11 sends put without the worker argument: 5 positionals plus
-- pairs (an odd count), where a well-formed call has 6 plus pairs. An odd
-- count whose 4th/5th arguments look like data/delay is that legacy form.
local function put_positionals(args)
  local n = #args
  if n % 2 == 1 and finite(args[6]) == nil and finite(args[5]) ~= nil and is_json(args[4]) then
    return extend({ '' }, args)
  end
  return args
end

-- Parses put's arguments; raises before anything is written.
function QlessQueue.parse_put(args)
  local a = put_positionals(args)
  local p = {
    worker = a[1] or '',
    queue = need(a[2], 'Put(): Arg "queue" missing'),
    jid = need(a[3], 'Put(): Arg "jid" missing'),
    klass = need(a[4], 'Put(): Arg "klass" missing'),
    raw = a[5],
  }
  if a[5] == nil or not decode(a[5]) then
    error('Put(): Arg "data" missing or not JSON: ' .. tostring(a[5]))
  end
  p.delay = need_number(a[6], 'Put(): Arg "delay" not a number: ')
  local options = parse_options(a, 7, PUT_OPTIONS, 'Put(): Unrecognized option ')
  if options['retries'] then
    p.retries = need_number(options['retries'], 'Put(): Arg "retries" not a number: ')
  end
  if options['priority'] then
    p.priority = need_number(options['priority'], 'Put(): Arg "priority" not a number')
  end
  if options['tags'] then
    p.tags = json_list(options['tags'], 'Put(): Arg "tags" not JSON')
  end
  p.depends = json_list(options['depends'] or '[]', 'Put(): Arg "depends" not JSON: ')
  return p
end

-- With a new non-empty depends list, old dependencies not in it are dropped.
local function drop_old_dependencies(jid, depends)
  local wanted = {}
  for _, dep in ipairs(depends) do
    wanted[dep] = true
  end
  for _, dep in ipairs(rcall('smembers', 'ql:j:' .. jid .. '-dependencies')) do
    if not wanted[dep] then
      rcall('srem', 'ql:j:' .. dep .. '-dependents', jid)
      rcall('srem', 'ql:j:' .. jid .. '-dependencies', dep)
    end
  end
end

-- Takes a re-put job out of where it was: old queue sets, old worker (who is
-- told unless it is the one putting), completed list, failure group.
local function detach(jid, p, old)
  local oldqueue, state, oldworker = old[3], old[4], old[7]
  if oldqueue and oldqueue ~= '' then
    local prefix = 'ql:q:' .. oldqueue
    rcall('zrem', prefix .. '-work', jid)
    rcall('zrem', prefix .. '-locks', jid)
    rcall('zrem', prefix .. '-depends', jid)
    rcall('zrem', prefix .. '-scheduled', jid)
  end
  if oldworker and oldworker ~= '' then
    rcall('zrem', 'ql:w:' .. oldworker .. ':jobs', jid)
    if oldworker ~= p.worker then
      Qless.lock_lost(jid, oldworker)
    end
  end
  if state == 'complete' then
    rcall('zrem', 'ql:completed', jid)
  elseif state == 'failed' then
    QlessJob.unfail_record(jid, oldqueue ~= '' and oldqueue or p.queue, old[5])
  end
end

-- Writes the job hash and places the job in one of its queue's sets.
local function place(now, p, existed, settings)
  local jid, prefix = p.jid, 'ql:q:' .. p.queue
  local outstanding = 0
  if existed or #settings.live > 0 then
    outstanding = rcall('scard', 'ql:j:' .. jid .. '-dependencies')
  end
  local state = 'waiting'
  if outstanding > 0 then
    state = 'depends'
  elseif p.delay > 0 then
    state = 'scheduled'
  end
  local fields = { 'jid', jid, 'klass', p.klass, 'data', p.raw, 'priority', settings.priority,
    'tags', encode(settings.tags), 'state', state, 'worker', '', 'expires', 0, 'queue', p.queue,
    'retries', settings.retries, 'remaining', settings.retries, 'time', string.format('%.20f', now) }
  if state == 'depends' and p.delay > 0 then
    extend(fields, { 'scheduled', now + p.delay })
  end
  rcall('hmset', 'ql:j:' .. jid, unpack(fields))
  if state == 'depends' then
    rcall('zadd', prefix .. '-depends', now, jid)
  elseif state == 'scheduled' then
    rcall('zadd', prefix .. '-scheduled', now + p.delay, jid)
  else
    rcall('zadd', prefix .. '-work', settings.priority - now / 1e10, jid)
  end
end

-- put(worker, queue, jid, klass, data, delay, [options]) with parsed args.
function QlessQueue.put(now, p)
  local jid = p.jid
  local old = rcall('hmget', 'ql:j:' .. jid, 'priority', 'tags', 'queue', 'state', 'failure', 'retries', 'worker', 'history')
  local old_tags = old[2] and decode(old[2]) or {}
  local settings = {
    retries = p.retries or tonumber(old[6]) or 5,
    priority = p.priority or tonumber(old[1]) or 0,
    tags = p.tags or old_tags,
    live = QlessJob.live_dependencies(jid, p.depends, 'Put(): '),
  }
  local cap = Qless.config.numbers({ { 'max-job-history', 100 } })[1]
  -- Every check is done: from here on the call only writes.
  local existed = old[4] ~= false
  QlessJob.retag(jid, old_tags, settings.tags, now)
  if #p.depends > 0 and existed then
    drop_old_dependencies(jid, p.depends)
  end
  Qless.publish('log', encode({ jid = jid, event = 'put', queue = p.queue }))
  QlessJob.migrate_history(jid, old[8])
  QlessJob.add_history(jid, now, 'put', { q = p.queue }, cap)
  if existed then
    detach(jid, p, old)
  end
  QlessJob.add_dependencies(jid, settings.live)
  place(now, p, existed, settings)
  rcall('zadd', 'ql:queues', 'NX', now, p.queue)
  if is_tracked(jid) then
    Qless.publish('put', jid)
  end
  return jid
end

-- requeue: put of a job that must already exist.
function QlessQueue.requeue(now, args)
  local a = put_positionals(args)
  local jid = need(a[3], 'Requeue(): Arg "jid" missing')
  if rcall('exists', 'ql:j:' .. jid) == 0 then
    error('Requeue(): Job ' .. jid .. ' does not exist')
  end
  return QlessQueue.put(now, QlessQueue.parse_put(args))
end

-- Moves up to `count` due scheduled jobs of a queue into its work set.
function QlessQueue.release_scheduled(queue, now, count)
  if count <= 0 then
    return
  end
  local prefix = 'ql:q:' .. queue
  local due = rcall('zrangebyscore', prefix .. '-scheduled', '-inf', now, 'LIMIT', 0, count)
  for _, jid in ipairs(due) do
    local priority = tonumber(rcall('hget', 'ql:j:' .. jid, 'priority')) or 0
    rcall('zadd', prefix .. '-work', priority - now / 1e10, jid)
    rcall('hset', 'ql:j:' .. jid, 'state', 'waiting')
  end
  call_chunked('zrem', prefix .. '-scheduled', due)
end

-- The counts object of one queue. Due scheduled jobs count as waiting even
-- when more than SWEEP of them are still to be moved.
function QlessQueue.counts(now, queue)
  local prefix = 'ql:q:' .. queue
  QlessQueue.release_scheduled(queue, now, SWEEP)
  local stalled = rcall('zcount', prefix .. '-locks', '-inf', now)
  local due = rcall('zcount', prefix .. '-scheduled', '-inf', now)
  return {
    name = queue,
    waiting = rcall('zcard', prefix .. '-work') + due,
    stalled = stalled,
    running = rcall('zcard', prefix .. '-locks') - stalled,
    scheduled = rcall('zcard', prefix .. '-scheduled') - due,
    depends = rcall('zcard', prefix .. '-depends'),
    recurring = rcall('zcard', prefix .. '-recur'),
    paused = rcall('sismember', 'ql:paused_queues', queue) == 1,
  }
end

-- queues: counts of every known queue, in first-seen order.
function QlessQueue.all_counts(now)
  local result = {}
  for i, queue in ipairs(rcall('zrange', 'ql:queues', 0, -1)) do
    result[i] = QlessQueue.counts(now, queue)
  end
  return result
end

function QlessQueue.length(queue)
  local prefix = 'ql:q:' .. queue
  return rcall('zcard', prefix .. '-locks') + rcall('zcard', prefix .. '-work')
    + rcall('zcard', prefix .. '-scheduled')
end
