-- pop.lua: pop and peek, with the lazy work they do first: expired locks,
-- recurring spawns and due scheduled jobs.

-- The `dependencies` of every popped job (read-only, never filled).
local NONE = {}

-- Moves up to `count` due scheduled jobs of a queue into its work set.
function QlessQueue.release_scheduled(queue, now, count)
  if count <= 0 then
    return
  end
  local prefix = 'ql:q:' .. queue
  local due = rcall('zrangebyscore', prefix .. '-scheduled', '-inf', score_text(now), 'LIMIT', '0', count)
  for _, jid in ipairs(due) do
    local priority = tonumber(rcall('hget', 'ql:j:' .. jid, 'priority')) or 0
    rcall('zadd', prefix .. '-work', priority - now / 1e10, jid)
    rcall('hset', 'ql:j:' .. jid, 'state', 'waiting')
  end
  call_chunked('zrem', prefix .. '-scheduled', due)
end

-- Handles one expired lock: the first time a courtesy notice and a grace
-- period, the next time a retry is used up. Returns true when the job
-- should be handed to the popping worker.
local function expire_lock(now, queue, jid, grace, cap)
  local key = 'ql:j:' .. jid
  local current = rcall('hmget', key, 'worker', 'grace', 'history')
  local worker = current[1] or ''
  rcall('zrem', 'ql:w:' .. worker .. ':jobs', jid)
  local notify = tonumber(current[2]) ~= 1
  local invalidate = not notify
  if grace <= 0 then
    notify, invalidate = true, true
  end
  if current[3] then
    QlessJob.migrate_history(jid, current[3])
  end
  if notify then
    if is_tracked(jid) then
      Qless.publish('stalled', jid)
    end
    add_history(jid, now, '"timed-out"', nil, cap)
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
  load_module('failure')
  local group, message = QlessJob.exhaust(now, jid, queue, cap)
  Qless.publish('log', encode({ jid = jid, event = 'failed', group = group, worker = worker, message = message }))
  return false
end

-- Jobs whose lock expired (at most `count`); pop acts on them, peek lists them.
local function expired_locks(queue, now, count)
  if count <= 0 then
    return {}
  end
  return rcall('zrangebyscore', 'ql:q:' .. queue .. '-locks', '-inf', score_text(now), 'LIMIT', '0', count)
end

-- The jids a pop/peek of `count` returns after the expired ones: recurring
-- spawns and due scheduled jobs join the work set first (both limited by
-- what is still wanted), then the top of the work set.
local function candidates(queue, now, count, expired)
  local wanted = count - #expired
  if wanted <= 0 then
    return expired
  end
  local prefix = 'ql:q:' .. queue
  local templates = rcall('zrangebyscore', prefix .. '-recur', '-inf', score_text(now), 'LIMIT', '0', wanted)
  if #templates > 0 then
    load_module('recurring')
    QlessRecurringJob.spawn_due(queue, now, wanted, templates)
  end
  QlessQueue.release_scheduled(queue, now, wanted)
  return extend(expired, rcall('zrevrange', prefix .. '-work', '0', wanted - 1))
end

-- Hands one job to `worker`; returns its job object (nil if the hash is gone).
local function pop_one(now, queue, jid, worker, expires, cap)
  local key = 'ql:j:' .. jid
  local v = QlessJob.read(jid)
  if not v[1] then
    return nil
  end
  if v[14] then
    QlessJob.migrate_history(jid, v[14])
    v[14] = false
  end
  add_history(jid, now, '"popped"', json_pair('worker', worker), cap)
  -- That entry as read_history would build it (the same table sizes in the
  -- same order, so the same key order in the JSON), unless its time is out
  -- of the range where add_history printed it exactly.
  local newest
  if now >= 0 and now < 1e14 then
    newest = { worker = worker }
    newest.when = floor(now)
    newest.what = 'popped'
  end
  QlessQueue.stat(queue, now, 'wait', now - (tonumber(v[15]) or now))
  rcall('hmset', key, 'time', string.format('%.20f', now), 'worker', worker, 'expires', expires, 'state', 'running')
  rcall('zadd', 'ql:w:' .. worker .. ':jobs', score_text(expires), jid)
  rcall('zadd', 'ql:q:' .. queue .. '-locks', score_text(expires), jid)
  v[3], v[5], v[7] = 'running', worker, expires
  -- A job that can run has no dependencies left: no need to read them.
  local object = QlessJob.object(jid, v, NONE, newest)
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
  count = need_count(count, 'Pop(): Arg "count" missing or not a number: ')
  local config = rcall('hmget', 'ql:config', queue .. '-heartbeat', 'heartbeat',
    queue .. '-max-concurrency', 'grace-period', 'max-job-history')
  local expires = now + (finite(config[1]) or finite(config[2]) or 60)
  local grace, cap = finite(config[4]) or 10, finite(config[5]) or 100
  if rcall('sismember', 'ql:paused_queues', queue) == 1 then
    return {}
  end
  rcall('zadd', 'ql:workers', score_text(now), worker)
  count = allowed(queue, now, count, finite(config[3]) or 0)
  local jids = {}
  for _, jid in ipairs(expired_locks(queue, now, count)) do
    if expire_lock(now, queue, jid, grace, cap) then
      jids[#jids + 1] = jid
    end
  end
  jids = candidates(queue, now, count, jids)
  local popped = {}
  for _, jid in ipairs(jids) do
    popped[#popped + 1] = pop_one(now, queue, jid, worker, expires, cap)
  end
  call_chunked('zrem', 'ql:q:' .. queue .. '-work', jids)
  return popped
end

--[[ pop(queue, worker, count) -> JSON list of job objects (`{}` when none)
  Paused queue: `{}` before anything else. Otherwise registers the worker, applies
  <queue>-max-concurrency, handles expired locks (courtesy notice, then retry or
  exhaustion), spawns due recurring jobs, releases due scheduled jobs, and hands out
  the top of the work set: history popped, wait stat, lock = now + heartbeat.
  Errors: Pop(): Arg "queue" missing | Arg "worker" missing |
          Arg "count" missing or not a number: <v>
  Publishes lock_lost / ql:stalled / failed (expired locks), ql:popped if tracked.
]]
QlessAPI['pop'] = function(now, a)
  return encode(QlessQueue.pop(now, a[1], a[2], a[3]))
end

--[[ peek(queue, count) -> JSON list of job objects a pop would get (unchanged jobs;
  recurring spawns and scheduled releases still happen).
  Errors: Peek(): Arg "queue" missing | Arg "count" missing or not a number: <v>
]]
QlessAPI['peek'] = function(now, a)
  local queue = need(a[1], 'Peek(): Arg "queue" missing')
  local count = need_count(a[2], 'Peek(): Arg "count" missing or not a number: ')
  local jids = candidates(queue, now, count, expired_locks(queue, now, count))
  local result = {}
  for _, jid in ipairs(jids) do
    result[#result + 1] = QlessJob.data(jid)
  end
  return encode(result)
end
