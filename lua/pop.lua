-- pop.lua: pop and peek, with the lazy work they do first: expired locks,
-- recurring spawns and due scheduled jobs.

-- Handles one expired lock: the first time a courtesy notice and a grace
-- period, the next time a retry is used up. Returns true when the job
-- should be handed to the popping worker.
local function expire_lock(now, queue, jid, settings)
  local key = 'ql:j:' .. jid
  local current = rcall('hmget', key, 'worker', 'grace', 'history')
  local worker = current[1] or ''
  rcall('zrem', 'ql:w:' .. worker .. ':jobs', jid)
  local grace = settings.grace
  local notify = tonumber(current[2]) ~= 1
  local invalidate = not notify
  if grace <= 0 then
    notify, invalidate = true, true
  end
  QlessJob.migrate_history(jid, current[3])
  if notify then
    if is_tracked(jid) then
      Qless.publish('stalled', jid)
    end
    QlessJob.add_history(jid, now, 'timed-out', nil, settings.cap)
    rcall('hset', key, 'grace', 1)
    Qless.lock_lost(jid, worker)
    rcall('zadd', 'ql:q:' .. queue .. '-locks', now + grace, jid)
    QlessQueue.count_stat(queue, now, 'retries', 1)
  end
  if not invalidate then
    return false
  end
  rcall('hdel', key, 'grace')
  if tonumber(rcall('hincrby', key, 'remaining', -1)) >= 0 then
    return true
  end
  local group, message = QlessJob.exhaust(now, jid, queue, false, settings.cap)
  Qless.publish('log', encode({ jid = jid, event = 'failed', group = group, worker = worker, message = message }))
  return false
end

-- Jobs whose lock expired (at most `count`); pop acts on them, peek lists them.
local function expired_locks(queue, now, count)
  if count <= 0 then
    return {}
  end
  return rcall('zrangebyscore', 'ql:q:' .. queue .. '-locks', '-inf', now, 'LIMIT', 0, count)
end

-- The top `count` jids of the work set.
local function top_of_work(queue, count)
  if count <= 0 then
    return {}
  end
  return rcall('zrevrange', 'ql:q:' .. queue .. '-work', 0, count - 1)
end

-- The jids a pop/peek of `count` returns, after spawning recurring jobs and
-- releasing due scheduled ones (both limited by what is still wanted).
local function candidates(queue, now, count, expired)
  QlessRecurringJob.spawn_due(queue, now, count - #expired)
  QlessQueue.release_scheduled(queue, now, count - #expired)
  return extend(expired, top_of_work(queue, count - #expired))
end

-- Hands one job to `worker`; returns its job object (nil if the hash is gone).
local function pop_one(now, queue, jid, worker, settings)
  local key = 'ql:j:' .. jid
  local v = QlessJob.read(jid)
  if not v[1] then
    return nil
  end
  QlessJob.migrate_history(jid, v[14])
  v[14] = false
  QlessJob.add_history(jid, now, 'popped', { worker = worker }, settings.cap)
  QlessQueue.stat(queue, now, 'wait', now - (tonumber(v[15]) or now))
  local expires = settings.expires
  rcall('hmset', key, 'time', string.format('%.20f', now), 'worker', worker, 'expires', expires, 'state', 'running')
  rcall('zadd', 'ql:w:' .. worker .. ':jobs', expires, jid)
  rcall('zadd', 'ql:q:' .. queue .. '-locks', expires, jid)
  v[3], v[5], v[7] = 'running', worker, expires
  local object = QlessJob.object(jid, v)
  if object.tracked then
    Qless.publish('popped', jid)
  end
  return object
end

-- How many jobs a pop may take under `<queue>-max-concurrency`.
local function allowed(queue, now, count, limit)
  if limit > 0 then
    local running = rcall('zcount', 'ql:q:' .. queue .. '-locks', now, '+inf')
    return math.min(count, math.max(0, limit - running))
  end
  return count
end

-- pop(queue, worker, count): up to `count` job objects, now owned by worker.
function QlessQueue.pop(now, queue, worker, count)
  need(queue, 'Pop(): Arg "queue" missing')
  need(worker, 'Pop(): Arg "worker" missing')
  count = floor(need_number(count, 'Pop(): Arg "count" missing or not a number: '))
  local heartbeat, config = QlessJob.heartbeat_for(queue,
    { { queue .. '-max-concurrency', 0 }, { 'grace-period', 10 }, { 'max-job-history', 100 } })
  local settings = { expires = now + heartbeat, grace = config[4], cap = config[5] }
  if rcall('sismember', 'ql:paused_queues', queue) == 1 then
    return {}
  end
  rcall('zadd', 'ql:workers', now, worker)
  count = allowed(queue, now, count, config[3])
  local jids = {}
  for _, jid in ipairs(expired_locks(queue, now, count)) do
    if expire_lock(now, queue, jid, settings) then
      jids[#jids + 1] = jid
    end
  end
  jids = candidates(queue, now, count, jids)
  local popped = {}
  for _, jid in ipairs(jids) do
    popped[#popped + 1] = pop_one(now, queue, jid, worker, settings)
  end
  call_chunked('zrem', 'ql:q:' .. queue .. '-work', jids)
  return popped
end

-- peek(queue, count): the jobs a pop would get, left unchanged.
function QlessQueue.peek(now, queue, count)
  need(queue, 'Peek(): Arg "queue" missing')
  count = floor(need_number(count, 'Peek(): Arg "count" missing or not a number: '))
  local jids = candidates(queue, now, count, expired_locks(queue, now, count))
  local result = {}
  for _, jid in ipairs(jids) do
    result[#result + 1] = QlessJob.data(jid)
  end
  return result
end
