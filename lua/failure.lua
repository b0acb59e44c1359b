-- failure.lua: fail, retry, unfail, failed, the failure bookkeeping that
-- re-put shares with them, and what pop does with an expired lock (courtesy
-- notice, retry, exhaustion).

load_module('stats') -- QlessQueue.count_stat

local function exhausted_message(queue)
  return 'Job exhausted retries in queue "' .. queue .. '"'
end

-- Marks a job failed and files it under failure.group: job hash, `ql:failures`,
-- `ql:f:<group>`, the tracked `failed` event and the day's counters of `queue`.
function QlessJob.file_failure(now, jid, queue, failure)
  rcall('hmset', 'ql:j:' .. jid, 'state', 'failed', 'worker', '', 'expires', '', 'failure', encode(failure))
  rcall('sadd', 'ql:failures', failure.group)
  rcall('lpush', 'ql:f:' .. failure.group, jid)
  if is_tracked(jid) then
    Qless.publish('failed', jid)
  end
  QlessQueue.count_stat(queue, now, 'failures', 1)
  QlessQueue.count_stat(queue, now, 'failed', 1)
end

-- A running job whose lock expired and has no retries left (called by pop).
function QlessJob.exhaust(now, jid, queue, cap)
  local group = 'failed-retries-' .. queue
  local prefix = 'ql:q:' .. queue
  rcall('zrem', prefix .. '-work', jid)
  rcall('zrem', prefix .. '-locks', jid)
  rcall('zrem', prefix .. '-scheduled', jid)
  add_history(jid, now, '"failed"', json_pair('group', group), cap)
  local message = exhausted_message(queue)
  QlessJob.file_failure(now, jid, queue, { group = group, message = message, when = now, worker = '' })
  return group, message
end

-- Handles one expired lock: the first time a courtesy notice and a grace
-- period, the next time a retry is used up. Returns true when the job
-- should be handed to the popping worker. (pop loads this module only when
-- a lock has expired.)
function QlessJob.expire_lock(now, queue, jid, grace, cap)
  local key = 'ql:j:' .. jid
  local current = rcall('hmget', key, 'worker', 'grace', 'history')
  local worker = current[1] or ''
  rcall('zrem', 'ql:w:' .. worker .. ':jobs', jid)
  local notify = tonumber(current[2]) ~= 1
  local invalidate = not notify
  if grace <= 0 then
    notify, invalidate = true, true
  end
  migrate_history(jid, current[3])
  if notify then
    if is_tracked(jid) then
      Qless.publish('stalled', jid)
    end
    add_history(jid, now, '"timed-out"', nil, cap)
    rcall('hset', key, 'grace', 1)
    load_module('job') -- Qless.lock_lost
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
  local group, message = QlessJob.exhaust(now, jid, queue, cap)
  Qless.publish('log', encode({ jid = jid, event = 'failed', group = group, worker = worker, message = message }))
  return false
end

local function history_cap()
  return config_number('max-job-history', 100)
end

-- Removes a failed job from its failure group and its day's `failed` counter.
function QlessJob.unfail_record(jid, queue, failure)
  failure = decode(failure or '{}')
  local group = failure.group
  if not group then
    return
  end
  local key = 'ql:f:' .. group
  rcall('lrem', key, 0, jid)
  if rcall('llen', key) == 0 then
    rcall('srem', 'ql:failures', group)
  end
  if failure.when then
    QlessQueue.count_stat(queue, failure.when, 'failed', -1)
  end
end

--[[ fail(jid, worker, group, message, [data]) -> jid
  A running job owned by worker fails: state failed, worker "", expires "", failure
  {group, message, when, worker}, LPUSH ql:f:<group>, stats failures+1 failed+1.
  Errors: Fail(): Arg "jid"/"worker"/"group"/"message" missing |
          Job <jid>does not exist | Job <jid>not currently running: <state> (sic) |
          Job <jid> running with another worker: <worker>; cjson's text for bad data.
  Publishes ql:log {jid, event:"failed", worker, group, message}; ql:failed if tracked.
]]
function QlessJob.fail(now, jid, worker, group, message, raw)
  need_name(jid, 'Fail(): Arg "jid" missing')
  need_name(worker, 'Fail(): Arg "worker" missing')
  need_name(group, 'Fail(): Arg "group" missing')
  need(message, 'Fail(): Arg "message" missing')
  local data = raw and decode(raw)
  local current = rcall('hmget', 'ql:j:' .. jid, 'queue', 'state', 'worker', 'history')
  local queue, state, owner = current[1], current[2], current[3]
  if not state then
    error('Fail(): Job ' .. jid .. 'does not exist')
  elseif state ~= 'running' then
    error('Fail(): Job ' .. jid .. 'not currently running: ' .. state)
  elseif worker ~= owner then
    error('Fail(): Job ' .. jid .. ' running with another worker: ' .. tostring(owner))
  end
  Qless.publish('log', encode({ jid = jid, event = 'failed', worker = worker, group = group, message = message }))
  rcall('zrem', 'ql:w:' .. worker .. ':jobs', jid)
  migrate_history(jid, current[4])
  add_history(jid, now, '"failed"', encode({ worker = worker, group = group }), history_cap())
  local prefix = 'ql:q:' .. queue
  rcall('zrem', prefix .. '-work', jid)
  rcall('zrem', prefix .. '-locks', jid)
  rcall('zrem', prefix .. '-scheduled', jid)
  if raw then
    rcall('hset', 'ql:j:' .. jid, 'data', encode(data))
  end
  QlessJob.file_failure(now, jid, queue,
    { group = group, message = message, when = floor(now), worker = worker })
  return jid
end

-- The retry of a job that used up its retries: it fails instead.
local function retry_exhausted(now, jid, args, current)
  local queue, worker, group, message = args.queue, args.worker, args.group, args.message
  local oldqueue = current[1]
  group = group or ('failed-retries-' .. queue)
  migrate_history(jid, current[7])
  add_history(jid, now, '"failed"', json_pair('group', group), history_cap())
  local failure
  if message ~= nil then
    failure = { group = group, message = message, when = floor(now), worker = worker }
  else
    failure = { group = group, message = exhausted_message(oldqueue), when = now, worker = '' }
  end
  -- The day's counters of the queue given to retry, as qless-core does (it is
  -- the job's own queue for every known client).
  QlessJob.file_failure(now, jid, queue, failure)
end

--[[ retry(jid, queue, worker, [delay=0], [group, message]) -> retries left
  Gives a running job owned by worker back to `queue` (scheduled when delay > 0);
  with no retry left it fails instead (group given or failed-retries-<queue>) and the
  reply is negative. A given group+message is stored as `failure` while it waits.
  Errors: Retry(): Arg "jid"/"queue"/"worker" missing | Arg "delay" not a number: <v> |
          Job <jid> does not exist | is not currently running: <state> |
          has been given to another worker: <worker>
  Publishes ql:failed (tracked) on exhaustion; no ql:log event.
]]
function QlessJob.retry(now, jid, args)
  need_name(jid, 'Retry(): Arg "jid" missing')
  local queue = need_name(args.queue, 'Retry(): Arg "queue" missing')
  local worker = need_name(args.worker, 'Retry(): Arg "worker" missing')
  local delay = need_number(args.delay or 0, 'Retry(): Arg "delay" not a number: ')
  if args.group ~= nil then
    need_name(args.group, 'Retry(): Arg "group" missing')
  end
  local key = 'ql:j:' .. jid
  local current = rcall('hmget', key, 'queue', 'state', 'retries', 'worker', 'priority', 'failure', 'history')
  local state, owner = current[2], current[4]
  if not owner then
    error('Retry(): Job ' .. jid .. ' does not exist')
  elseif state ~= 'running' then
    error('Retry(): Job ' .. jid .. ' is not currently running: ' .. tostring(state))
  elseif owner ~= worker then
    error('Retry(): Job ' .. jid .. ' has been given to another worker: ' .. owner)
  end
  local remaining = tonumber(rcall('hincrby', key, 'remaining', -1))
  rcall('hdel', key, 'grace')
  rcall('zrem', 'ql:q:' .. current[1] .. '-locks', jid)
  rcall('zrem', 'ql:w:' .. worker .. ':jobs', jid)
  if remaining < 0 then
    retry_exhausted(now, jid, args, current)
    return floor(remaining)
  end
  if delay > 0 then
    rcall('zadd', 'ql:q:' .. queue .. '-scheduled', now + delay, jid)
    rcall('hset', key, 'state', 'scheduled')
  else
    rcall('zadd', 'ql:q:' .. queue .. '-work', (tonumber(current[5]) or 0) - now / 1e10, jid)
    rcall('hset', key, 'state', 'waiting')
  end
  if args.group ~= nil and args.message ~= nil then
    rcall('hset', key, 'failure', encode({ group = args.group, message = args.message, when = floor(now), worker = worker }))
  end
  return floor(remaining)
end

--[[ unfail(queue, group, [count=25]) -> number of jids taken from the group
  Puts the `count` oldest failed jobs of the group into `queue` (waiting, history put).
  Errors: Unfail(): Arg "queue" missing | Arg "group" missing | Arg "count" not a number: <v>
]]
function QlessQueue.unfail(now, queue, group, count)
  need_name(queue, 'Unfail(): Arg "queue" missing')
  need_name(group, 'Unfail(): Arg "group" missing')
  count = need_count(count or 25, 'Unfail(): Arg "count" not a number: ')
  if count <= 0 then
    return 0
  end
  local key = 'ql:f:' .. group
  local jids = rcall('lrange', key, -count, -1)
  local cap = history_cap()
  for _, jid in ipairs(jids) do
    local current = rcall('hmget', 'ql:j:' .. jid, 'jid', 'retries', 'priority', 'history')
    if current[1] then
      migrate_history(jid, current[4])
      add_history(jid, now, '"put"', json_pair('q', queue), cap)
      rcall('hmset', 'ql:j:' .. jid, 'state', 'waiting', 'worker', '', 'expires', 0,
        'queue', queue, 'remaining', tonumber(current[2]) or 5)
      rcall('zadd', 'ql:q:' .. queue .. '-work', (tonumber(current[3]) or 0) - now / 1e10, jid)
    end
  end
  rcall('ltrim', key, 0, -count - 1)
  if rcall('llen', key) == 0 then
    rcall('srem', 'ql:failures', group)
  end
  return #jids
end

--[[ failed() -> JSON {group: count}; failed(group, [start=0], [limit=25]) -> JSON {total, jobs}
  Errors: Failed(): Arg "start"/"limit" is not a number: <v>. Read-only.
]]
function Qless.failed(group, start, limit)
  start = need_count(start or 0, 'Failed(): Arg "start" is not a number: ')
  limit = need_count(limit or 25, 'Failed(): Arg "limit" is not a number: ')
  if group then
    return {
      total = rcall('llen', 'ql:f:' .. group),
      jobs = rcall('lrange', 'ql:f:' .. group, start, start + limit - 1),
    }
  end
  local counts = {}
  for _, name in ipairs(rcall('smembers', 'ql:failures')) do
    counts[name] = rcall('llen', 'ql:f:' .. name)
  end
  return counts
end

QlessAPI['fail'] = function(now, a)
  return QlessJob.fail(now, a[1], a[2], a[3], a[4], a[5])
end

QlessAPI['retry'] = function(now, a)
  return QlessJob.retry(now, a[1], { queue = a[2], worker = a[3], delay = a[4], group = a[5], message = a[6] })
end

QlessAPI['unfail'] = function(now, a)
  return QlessQueue.unfail(now, a[1], a[2], a[3])
end

QlessAPI['failed'] = function(_, a)
  return encode(Qless.failed(a[1], a[2], a[3]))
end
