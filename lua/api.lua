-- api.lua: one entry per command, and the dispatcher. The only ARGV reader.
--
-- Call: EVALSHA <sha> 0 <command> <now> <args...>. Every entry receives `now`
-- (a finite number) and `a`, the arguments after now (a[1] is the first).
-- Replies: JSON strings where the protocol says JSON (an empty list encodes
-- as `{}`), plain values otherwise (Redis truncates numbers to integers).

-- Every entry whose reply is a JSON string wraps its result with this.
local function json(value)
  return encode(value)
end

-- get(jid) -> job JSON or nil
QlessAPI['get'] = function(_, a)
  local object = QlessJob.data(need(a[1], 'Get(): Arg "jid" missing'))
  return object and json(object) or nil
end

-- multiget(jid...) -> JSON list of the jobs that exist
QlessAPI['multiget'] = function(_, a)
  return json(QlessJob.multiget(a))
end

-- put(worker, queue, jid, klass, data, delay, [priority p] [tags T] [retries n] [depends D]) -> jid
QlessAPI['put'] = function(now, a)
  return QlessQueue.put(now, QlessQueue.parse_put(a))
end

-- requeue(same as put) -> jid; the job must exist
QlessAPI['requeue'] = function(now, a)
  return QlessQueue.requeue(now, a)
end

-- pop(queue, worker, count) -> JSON list of job objects
QlessAPI['pop'] = function(now, a)
  return json(QlessQueue.pop(now, a[1], a[2], a[3]))
end

-- peek(queue, count) -> JSON list of job objects
QlessAPI['peek'] = function(now, a)
  return json(QlessQueue.peek(now, a[1], a[2]))
end

-- complete(jid, worker, queue, data, [next q] [delay s] [depends D]) -> state word
QlessAPI['complete'] = function(now, a)
  return QlessJob.complete(now, a)
end

-- fail(jid, worker, group, message, [data]) -> jid
QlessAPI['fail'] = function(now, a)
  return QlessJob.fail(now, a[1], a[2], a[3], a[4], a[5])
end

-- retry(jid, queue, worker, [delay], [group, message]) -> retries left
QlessAPI['retry'] = function(now, a)
  return QlessJob.retry(now, a[1], { queue = a[2], worker = a[3], delay = a[4], group = a[5], message = a[6] })
end

-- heartbeat(jid, worker, [data]) -> new expiry
QlessAPI['heartbeat'] = function(now, a)
  return QlessJob.heartbeat(now, a[1], a[2], a[3])
end

-- cancel(jid...) -> the jids given
QlessAPI['cancel'] = function(_, a)
  return Qless.cancel(a)
end

-- timeout(jid...) -> nil
QlessAPI['timeout'] = function(now, a)
  QlessJob.timeout(now, a)
end

-- depends(jid, on, jid...) / (jid, off, jid...) / (jid, off, all) -> 1
QlessAPI['depends'] = function(now, a)
  return QlessJob.depends(now, a)
end

-- priority(jid, priority) -> priority
QlessAPI['priority'] = function(_, a)
  return QlessJob.priority(a[1], a[2])
end

-- tag(add|remove|get|top, ...) -> JSON
QlessAPI['tag'] = function(now, a)
  return json(Qless.tag(now, a))
end

-- track() -> JSON {jobs, expired}; track(track|untrack, jid) -> JSON 1/0
QlessAPI['track'] = function(now, a)
  return json(Qless.track(now, a[1], a[2]))
end

-- log(jid, message, [data]) -> nil
QlessAPI['log'] = function(now, a)
  QlessJob.log(now, a[1], a[2], a[3])
end

-- jobs(complete, [offset, count]) / jobs(state, queue, [offset, count]) -> array of jids
QlessAPI['jobs'] = function(now, a)
  return Qless.jobs(now, a)
end

-- failed([group, [start, limit]]) -> JSON
QlessAPI['failed'] = function(_, a)
  return json(Qless.failed(a[1], a[2], a[3]))
end

-- unfail(queue, group, [count]) -> number moved
QlessAPI['unfail'] = function(now, a)
  return QlessQueue.unfail(now, a[1], a[2], a[3])
end

-- queues([queue]) -> JSON counts (list, or one object)
QlessAPI['queues'] = function(now, a)
  if a[1] then
    return json(QlessQueue.counts(now, a[1]))
  end
  return json(QlessQueue.all_counts(now))
end

-- workers([worker]) -> JSON
QlessAPI['workers'] = function(now, a)
  return json(QlessWorker.counts(now, a[1]))
end

-- stats(queue, date) -> JSON
QlessAPI['stats'] = function(_, a)
  local queue = need(a[1], 'Stats(): Arg "queue" missing')
  local date = need_number(a[2], 'Stats(): Arg "date" missing or not a number: ')
  return json(QlessQueue.stats(queue, date))
end

-- length(queue) -> integer
QlessAPI['length'] = function(_, a)
  return QlessQueue.length(need(a[1], 'Length(): Arg "queue" missing'))
end

-- Runs `cmd key name...` for a non-empty list of names.
local function for_names(a, cmd, key, message)
  need(a[1], message)
  call_chunked(cmd, key, a)
end

-- pause(queue...) -> nil
QlessAPI['pause'] = function(_, a)
  for_names(a, 'sadd', 'ql:paused_queues', 'Pause(): Arg "queue" missing')
end

-- unpause(queue...) -> nil
QlessAPI['unpause'] = function(_, a)
  for_names(a, 'srem', 'ql:paused_queues', 'Unpause(): Arg "queue" missing')
end

-- queue.forget(queue...) -> nil
QlessAPI['queue.forget'] = function(_, a)
  for_names(a, 'zrem', 'ql:queues', 'QueueForget(): Arg "queue" missing')
end

-- worker.deregister(worker...) -> nil
QlessAPI['worker.deregister'] = function(_, a)
  for_names(a, 'zrem', 'ql:workers', 'WorkerDeregister(): Arg "worker" missing')
end

-- config.get([key]) -> raw value, or JSON of everything
QlessAPI['config.get'] = function(_, a)
  if a[1] then
    return Qless.config.get(a[1])
  end
  return json(Qless.config.get())
end

-- config.set(key, value) -> nil
QlessAPI['config.set'] = function(_, a)
  Qless.config.set(a[1], a[2])
end

-- config.unset(key) -> nil
QlessAPI['config.unset'] = function(_, a)
  Qless.config.unset(a[1])
end

-- recur(queue, jid, klass, data, interval, seconds, offset, [options]) -> jid
QlessAPI['recur'] = function(now, a)
  return QlessRecurringJob.recur(now, a)
end

-- unrecur(jid) -> 1
QlessAPI['unrecur'] = function(_, a)
  return QlessRecurringJob.unrecur(a[1])
end

-- recur.get(jid) -> JSON or nil
QlessAPI['recur.get'] = function(_, a)
  local object = QlessRecurringJob.data(a[1])
  return object and json(object) or nil
end

-- recur.update(jid, key, value...) -> 1
QlessAPI['recur.update'] = function(now, a)
  return QlessRecurringJob.update(now, a)
end

-- The tags after the jid, for recur.tag / recur.untag.
local function tag_args(a, message)
  local jid = need(a[1], message)
  local tags = {}
  for i = 2, #a do
    tags[#tags + 1] = a[i]
  end
  return jid, tags
end

-- recur.tag(jid, tag...) -> JSON tag list
QlessAPI['recur.tag'] = function(_, a)
  local jid, tags = tag_args(a, 'Tag(): Arg "jid" missing')
  return QlessRecurringJob.retag(jid, tags, true)
end

-- recur.untag(jid, tag...) -> JSON tag list
QlessAPI['recur.untag'] = function(_, a)
  local jid, tags = tag_args(a, 'Untag(): Arg "jid" missing')
  return QlessRecurringJob.retag(jid, tags, false)
end

-- The dispatcher: check the calling convention, then run the command.
local function dispatch()
  if #KEYS > 0 then
    error('No Keys should be provided')
  end
  local name = ARGV[1]
  if name == nil then
    error('Must provide a command')
  end
  local command = QlessAPI[name]
  if command == nil then
    error('Unknown command ' .. name)
  end
  local now = finite(ARGV[2])
  if now == nil then
    error('Arg "now" missing or not a number: ' .. tostring(ARGV[2]))
  end
  local args = {}
  for i = 3, #ARGV do
    args[i - 2] = ARGV[i]
  end
  return command(now, args)
end

return dispatch()
