-- advance.lua: the end of a complete with `next` (complete.lua loads it
-- then): the job waits in the next queue instead of being completed.

-- The rest of complete with `next`: the job waits in the next queue.
function QlessJob.advance(now, jid, p, current)
  local nextq, live = p.next, p.live
  Qless.publish('log', encode({ jid = jid, event = 'advanced', queue = p.queue, to = nextq }))
  add_history(jid, now, '"put"', json_pair('q', nextq), p.cap)
  rcall('zadd', 'ql:queues', 'NX', now, nextq)
  local fields = { 'state', 'waiting', 'worker', '', 'failure', '{}', 'queue', nextq,
    'expires', 0, 'remaining', tonumber(current[3]), 'data', p.raw, 'time', string.format('%.20f', now) }
  local prefix = 'ql:q:' .. nextq
  if p.delay > 0 and not (p.depends and #p.depends > 0) then
    rcall('hmset', 'ql:j:' .. jid, unpack(fields))
    rcall('zadd', prefix .. '-scheduled', now + p.delay, jid)
    return 'scheduled'
  end
  if live and #live > 0 then
    fields[2] = 'depends'
    if p.delay > 0 then
      extend(fields, { 'scheduled', now + p.delay })
    end
    rcall('hmset', 'ql:j:' .. jid, unpack(fields))
    QlessJob.add_dependencies(jid, live)
    rcall('zadd', prefix .. '-depends', now, jid)
    return 'depends'
  end
  rcall('hmset', 'ql:j:' .. jid, unpack(fields))
  local priority = tonumber(rcall('hget', 'ql:j:' .. jid, 'priority')) or 0
  rcall('zadd', prefix .. '-work', priority - now / 1e10, jid)
  return 'waiting'
end
