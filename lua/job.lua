-- job.lua: the small per-job commands: get, multiget, heartbeat, priority,
-- timeout, log.

-- lock_lost goes to the worker's own channel and to the log (timeout here;
-- re-put and lock expiry load this module for it).
function Qless.lock_lost(jid, worker)
  local message = encode({ jid = jid, event = 'lock_lost', worker = worker })
  rcall('publish', 'ql:w:' .. worker, message)
  rcall('publish', 'ql:log', message)
end

-- The lock length for jobs of a queue: `<queue>-heartbeat`, else `heartbeat`.
function QlessJob.heartbeat_for(queue)
  local values = rcall('hmget', 'ql:config', queue .. '-heartbeat', 'heartbeat')
  return finite(values[1]) or finite(values[2]) or 60
end

-- Checks a heartbeat; returns the job's queue.
local function check_heartbeat(jid, worker)
  local current = rcall('hmget', 'ql:j:' .. jid, 'worker', 'state', 'queue')
  local owner, state = current[1], current[2]
  if not owner then
    error('Heartbeat(): Job ' .. jid .. ' does not exist')
  elseif state ~= 'running' then
    error('Heartbeat(): Job ' .. jid .. ' not currently running: ' .. tostring(state))
  elseif owner ~= worker or owner == '' then
    error('Heartbeat(): Job ' .. jid .. ' given out to another worker: ' .. owner)
  end
  return current[3]
end

--[[ heartbeat(jid, worker, [data]) -> new lock expiry (integer-truncated)
  Renews the lock of a running job owned by worker; data (JSON) replaces the job data.
  Errors: Heartbeat(): Arg "jid" missing; Heatbeat(): Arg "worker" missing (sic);
          Heartbeat(): Job <jid> does not exist | not currently running: <state> |
          given out to another worker: <worker>; cjson's text for bad data.
  Writes ql:j:<jid> (expires, worker, data), ql:w:<worker>:jobs, ql:workers, ql:q:<queue>-locks.
]]
QlessAPI['heartbeat'] = function(now, a)
  local jid = need_name(a[1], 'Heartbeat(): Arg "jid" missing')
  local worker = need_name(a[2], 'Heatbeat(): Arg "worker" missing')
  local raw = a[3]
  local data = raw and decode(raw)
  local queue = check_heartbeat(jid, worker)
  local expires = now + QlessJob.heartbeat_for(queue)
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

--[[ get(jid) -> job JSON (see README) or nil
  Errors: Get(): Arg "jid" missing. Read-only.
]]
QlessAPI['get'] = function(_, a)
  local object = QlessJob.data(need(a[1], 'Get(): Arg "jid" missing'))
  return object and encode(object) or nil
end

--[[ multiget(jid...) -> JSON list of the jobs that exist (`{}` when none). Read-only. ]]
QlessAPI['multiget'] = function(_, a)
  local result = {}
  for _, jid in ipairs(a) do
    result[#result + 1] = QlessJob.data(jid)
  end
  return encode(result)
end

--[[ priority(jid, priority) -> priority (integer-truncated; the hash keeps the exact value)
  A waiting job is re-scored to exactly `priority` (ahead of equal-priority peers).
  Errors: Priority(): Arg "jid" missing | Arg "priority" missing or not a number: <v> |
          Job <jid> does not exist
]]
QlessAPI['priority'] = function(_, a)
  local jid = need_name(a[1], 'Priority(): Arg "jid" missing')
  local priority = need_number(a[2], 'Priority(): Arg "priority" missing or not a number: ')
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

-- Checks one timeout target; returns {queue, state, worker, legacy history}.
local function timeout_target(jid)
  local current = rcall('hmget', 'ql:j:' .. jid, 'queue', 'state', 'worker', 'history')
  if not current[2] then
    error('Timeout(): Job ' .. jid .. ' does not exist')
  elseif current[2] ~= 'running' then
    error('Timeout(): Job ' .. jid .. ' not running')
  end
  return current
end

--[[ timeout(jid...) -> nil
  Ends the lock of running jobs now: history timed-out, state stalled, expires 0,
  front of their queue (score +inf), worker kept. All jids are checked first.
  Errors: Timeout(): Job <jid> does not exist | not running
  Publishes lock_lost {jid, event, worker} on ql:w:<worker> and ql:log.
]]
QlessAPI['timeout'] = function(now, jids)
  local targets = {}
  for _, jid in ipairs(jids) do
    if not targets[jid] then
      targets[jid] = timeout_target(jid)
    end
  end
  local cap = config_number('max-job-history', 100)
  for _, jid in ipairs(jids) do
    local target = targets[jid]
    if target then
      targets[jid] = nil -- a jid listed twice is timed out once
      migrate_history(jid, target[4])
      add_history(jid, now, '"timed-out"', nil, cap)
      rcall('zrem', 'ql:q:' .. target[1] .. '-locks', jid)
      rcall('zadd', 'ql:q:' .. target[1] .. '-work', '+inf', jid)
      rcall('hmset', 'ql:j:' .. jid, 'state', 'stalled', 'expires', 0)
      Qless.lock_lost(jid, target[3])
    end
  end
end

--[[ log(jid, message, [data]) -> nil
  Appends history entry [now, message, data]; data must be a JSON object.
  Errors: Log(): Argument "jid" missing | Argument "message" missing |
          Argument "data" not a JSON object: <v> | Job <jid> does not exist
]]
QlessAPI['log'] = function(now, a)
  local jid = need_name(a[1], 'Log(): Argument "jid" missing')
  local message = need(a[2], 'Log(): Argument "message" missing')
  local data = nil
  if a[3] then
    data = decode(a[3])
    if type(data) ~= 'table' then
      error('Log(): Argument "data" not a JSON object: ' .. a[3])
    end
  end
  local current = rcall('hmget', 'ql:j:' .. jid, 'jid', 'history')
  if not current[1] then
    error('Log(): Job ' .. jid .. ' does not exist')
  end
  migrate_history(jid, current[2])
  add_history(jid, now, encode(message), data and encode(data))
end
