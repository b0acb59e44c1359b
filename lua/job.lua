-- job.lua: the job object (get/multiget/peek/pop replies) and the small
-- per-job commands: heartbeat, priority, timeout, log.

-- Hash fields read to build a job object, in this order.
QlessJob.FIELDS = {
  'jid', 'klass', 'state', 'queue', 'worker', 'priority', 'expires', 'retries',
  'remaining', 'data', 'tags', 'failure', 'spawned_from_jid', 'history', 'time',
}
local F_JID, F_KLASS, F_STATE, F_QUEUE, F_WORKER, F_PRIORITY, F_EXPIRES = 1, 2, 3, 4, 5, 6, 7
local F_RETRIES, F_REMAINING, F_DATA, F_TAGS, F_FAILURE, F_SPAWNED, F_HISTORY = 8, 9, 10, 11, 12, 13, 14

-- HMGET of FIELDS: everything a job object needs, the legacy history blob
-- and `time` (the put/pop time stats are measured from).
function QlessJob.read(jid)
  return rcall('hmget', 'ql:j:' .. jid, unpack(QlessJob.FIELDS))
end

-- Builds the job object from values read by QlessJob.read (nil if absent).
function QlessJob.object(jid, v)
  if not v[F_JID] then
    return nil
  end
  return {
    jid = v[F_JID],
    klass = v[F_KLASS],
    state = v[F_STATE],
    queue = v[F_QUEUE],
    worker = v[F_WORKER] or '',
    tracked = is_tracked(jid),
    priority = tonumber(v[F_PRIORITY]),
    expires = tonumber(v[F_EXPIRES]) or 0,
    retries = tonumber(v[F_RETRIES]),
    remaining = floor(tonumber(v[F_REMAINING]) or 0),
    data = v[F_DATA],
    tags = decode(v[F_TAGS] or '{}'),
    history = QlessJob.read_history(jid, v[F_HISTORY]),
    failure = decode(v[F_FAILURE] or '{}'),
    spawned_from_jid = v[F_SPAWNED],
    dependents = rcall('smembers', 'ql:j:' .. jid .. '-dependents'),
    dependencies = rcall('smembers', 'ql:j:' .. jid .. '-dependencies'),
  }
end

-- get(jid): the job object, or nil.
function QlessJob.data(jid)
  return QlessJob.object(jid, QlessJob.read(jid))
end

-- multiget(jid...): objects of the jids that exist.
function QlessJob.multiget(jids)
  local result = {}
  for _, jid in ipairs(jids) do
    local object = QlessJob.data(jid)
    if object then
      result[#result + 1] = object
    end
  end
  return result
end

-- The lock length for jobs of a queue: `<queue>-heartbeat`, else `heartbeat`.
function QlessJob.heartbeat_for(queue, extra)
  local wanted = { { queue .. '-heartbeat', false }, { 'heartbeat', 60 } }
  extend(wanted, extra or {})
  local values = Qless.config.numbers(wanted)
  return values[1] or values[2], values
end

-- heartbeat(jid, worker, [data]): renews the lock of a running job.
function QlessJob.heartbeat(now, jid, worker, raw)
  need(jid, 'Heartbeat(): Arg "jid" missing')
  need(worker, 'Heatbeat(): Arg "worker" missing')
  local data = raw and decode(raw)
  local current = rcall('hmget', 'ql:j:' .. jid, 'worker', 'state', 'queue')
  local owner, state, queue = current[1], current[2], current[3]
  if not owner then
    error('Heartbeat(): Job ' .. jid .. ' does not exist')
  elseif state ~= 'running' then
    error('Heartbeat(): Job ' .. jid .. ' not currently running: ' .. tostring(state))
  elseif owner ~= worker or owner == '' then
    error('Heartbeat(): Job ' .. jid .. ' given out to another worker: ' .. owner)
  end
  local expires = now + QlessJob.heartbeat_for(queue or '')
  if raw then
    rcall('hmset', 'ql:j:' .. jid, 'expires', expires, 'worker', worker, 'data', encode(data))
  else
    rcall('hmset', 'ql:j:' .. jid, 'expires', expires, 'worker', worker)
  end
  rcall('zadd', 'ql:w:' .. worker .. ':jobs', expires, jid)
  rcall('zadd', 'ql:workers', now, worker)
  rcall('zadd', 'ql:q:' .. queue .. '-locks', expires, jid)
  return expires
end

-- priority(jid, priority): stores it and re-scores a waiting job.
function QlessJob.priority(jid, value)
  need(jid, 'Priority(): Arg "jid" missing')
  local priority = need_number(value, 'Priority(): Arg "priority" missing or not a number: ')
  local queue = rcall('hget', 'ql:j:' .. jid, 'queue')
  if not queue then
    error('Priority(): Job ' .. jid .. ' does not exist')
  end
  if queue ~= '' then
    local key = 'ql:q:' .. queue .. '-work'
    if rcall('zscore', key, jid) then
      rcall('zadd', key, priority, jid)
    end
  end
  rcall('hset', 'ql:j:' .. jid, 'priority', priority)
  return priority
end

-- Checks one timeout target; returns the fields the write needs.
local function timeout_target(jid)
  local current = rcall('hmget', 'ql:j:' .. jid, 'queue', 'state', 'worker', 'history')
  if not current[2] then
    error('Timeout(): Job ' .. jid .. ' does not exist')
  elseif current[2] ~= 'running' then
    error('Timeout(): Job ' .. jid .. ' not running')
  end
  return current
end

-- timeout(jid...): ends the lock of running jobs now; they go to the front of
-- their queue as `stalled`. All jids are checked before any is changed.
function QlessJob.timeout(now, jids)
  local targets = {}
  for i, jid in ipairs(jids) do
    targets[i] = timeout_target(jid)
  end
  local cap = Qless.config.numbers({ { 'max-job-history', 100 } })[1]
  for i, jid in ipairs(jids) do
    local queue, worker, legacy = targets[i][1], targets[i][3], targets[i][4]
    QlessJob.migrate_history(jid, legacy)
    QlessJob.add_history(jid, now, 'timed-out', nil, cap)
    rcall('zrem', 'ql:q:' .. queue .. '-locks', jid)
    rcall('zadd', 'ql:q:' .. queue .. '-work', '+inf', jid)
    rcall('hmset', 'ql:j:' .. jid, 'state', 'stalled', 'expires', 0)
    Qless.lock_lost(jid, worker)
  end
end

-- log(jid, message, [data]): appends a custom history event.
function QlessJob.log(now, jid, message, raw)
  need(jid, 'Log(): Argument "jid" missing')
  need(message, 'Log(): Argument "message" missing')
  local data = nil
  if raw then
    data = decode(raw)
    if type(data) ~= 'table' then
      error('Log(): Argument "data" not a JSON object: ' .. raw)
    end
  end
  local legacy = rcall('hmget', 'ql:j:' .. jid, 'jid', 'history')
  if not legacy[1] then
    error('Log(): Job ' .. jid .. ' does not exist')
  end
  QlessJob.migrate_history(jid, legacy[2])
  QlessJob.add_history(jid, now, message, data, Qless.config.numbers({ { 'max-job-history', 100 } })[1])
end
