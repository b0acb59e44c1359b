-- queue.lua: queue counts, length, pause and forget.

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

--[[ queues() -> JSON list of counts objects in first-seen order; queues(queue) -> one object
  {name, waiting, running, stalled, scheduled, depends, recurring, paused}. Due scheduled
  jobs count as waiting; up to SWEEP of them are moved to the work set.
]]
QlessAPI['queues'] = function(now, a)
  if a[1] then
    return encode(QlessQueue.counts(now, a[1]))
  end
  return encode(QlessQueue.all_counts(now))
end

--[[ length(queue) -> locks + waiting + scheduled. Errors: Length(): Arg "queue" missing ]]
QlessAPI['length'] = function(_, a)
  return QlessQueue.length(need(a[1], 'Length(): Arg "queue" missing'))
end

-- Runs `cmd key name...` for a non-empty list of names.
local function for_names(a, cmd, key, message)
  need(a[1], message)
  for i = 1, #a do
    need_name(a[i], message)
  end
  call_chunked(cmd, key, a)
end

--[[ pause(queue...) -> nil: pop of these queues returns nothing (peek still works).
  Errors: Pause(): Arg "queue" missing. Writes ql:paused_queues.
]]
QlessAPI['pause'] = function(_, a)
  for_names(a, 'sadd', 'ql:paused_queues', 'Pause(): Arg "queue" missing')
end

--[[ unpause(queue...) -> nil. Errors: Unpause(): Arg "queue" missing ]]
QlessAPI['unpause'] = function(_, a)
  for_names(a, 'srem', 'ql:paused_queues', 'Unpause(): Arg "queue" missing')
end

--[[ queue.forget(queue...) -> nil: removes the names from ql:queues only.
  Errors: QueueForget(): Arg "queue" missing
]]
QlessAPI['queue.forget'] = function(_, a)
  for_names(a, 'zrem', 'ql:queues', 'QueueForget(): Arg "queue" missing')
end
