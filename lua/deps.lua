-- deps.lua: job dependencies (`-dependencies` / `-dependents` sets), the
-- depends command and cancel (which must respect dependents).

-- True when `target` is reachable from any of `starts` along
-- `-dependencies` edges, i.e. one of them (transitively) waits on target.
local function waits_on(starts, target)
  local seen = {}
  local stack = extend({}, starts)
  while #stack > 0 do
    local jid = table.remove(stack)
    if jid == target then
      return true
    end
    if not seen[jid] then
      seen[jid] = true
      extend(stack, rcall('smembers', 'ql:j:' .. jid .. '-dependencies'))
    end
  end
  return false
end

-- The jids of `depends` a job would really wait on: those that exist and are
-- not complete. Refuses a self-dependency and a dependency cycle (read-only).
function QlessJob.live_dependencies(jid, depends, prefix)
  local live = {}
  for _, dep in ipairs(depends) do
    if dep == jid then
      error(prefix .. 'Job ' .. jid .. ' cannot depend on itself')
    end
    local state = rcall('hget', 'ql:j:' .. dep, 'state')
    if state and state ~= 'complete' then
      live[#live + 1] = dep
    end
  end
  if #live > 0 and waits_on(live, jid) then
    error(prefix .. 'Job ' .. jid .. ' depending on ' .. table.concat(live, ', ') .. ' would create a dependency cycle')
  end
  return live
end

-- Records that `jid` waits on each of `deps`.
function QlessJob.add_dependencies(jid, deps)
  for _, dep in ipairs(deps) do
    rcall('sadd', 'ql:j:' .. dep .. '-dependents', jid)
    rcall('sadd', 'ql:j:' .. jid .. '-dependencies', dep)
  end
end

-- Moves a job whose last dependency went away from `depends` to its queue's
-- work set (state waiting) or, when it carries a `scheduled` time, to the
-- scheduled set (`honour_schedule`, as complete does; depends-off does not).
function QlessJob.undepend(now, jid, honour_schedule)
  local current = rcall('hmget', 'ql:j:' .. jid, 'queue', 'priority', 'scheduled')
  local queue, priority, scheduled = current[1], current[2], current[3]
  if not queue then
    return
  end
  rcall('zrem', 'ql:q:' .. queue .. '-depends', jid)
  if honour_schedule and scheduled then
    rcall('zadd', 'ql:q:' .. queue .. '-scheduled', scheduled, jid)
    rcall('hset', 'ql:j:' .. jid, 'state', 'scheduled')
    rcall('hdel', 'ql:j:' .. jid, 'scheduled')
  else
    rcall('zadd', 'ql:q:' .. queue .. '-work', (tonumber(priority) or 0) - now / 1e10, jid)
    rcall('hset', 'ql:j:' .. jid, 'state', 'waiting')
  end
end

-- After `jid` completed: each dependent forgets it, and runs when it was the last.
function QlessJob.release_dependents(now, jid)
  local key = 'ql:j:' .. jid .. '-dependents'
  local dependents = rcall('smembers', key)
  for _, dependent in ipairs(dependents) do
    local deps_key = 'ql:j:' .. dependent .. '-dependencies'
    rcall('srem', deps_key, jid)
    if rcall('scard', deps_key) == 0 then
      QlessJob.undepend(now, dependent, true)
    end
  end
  if #dependents > 0 then
    rcall('del', key)
  end
end

local function depends_off(now, jid, args)
  local deps_key = 'ql:j:' .. jid .. '-dependencies'
  if args[3] == 'all' then
    for _, dep in ipairs(rcall('smembers', deps_key)) do
      rcall('srem', 'ql:j:' .. dep .. '-dependents', jid)
    end
    rcall('del', deps_key)
    QlessJob.undepend(now, jid, false)
    return
  end
  for i = 3, #args do
    rcall('srem', 'ql:j:' .. args[i] .. '-dependents', jid)
    rcall('srem', deps_key, args[i])
  end
  if #args >= 3 and rcall('scard', deps_key) == 0 then
    QlessJob.undepend(now, jid, false)
  end
end

-- depends(jid, on|off, jid...|all): edits the dependencies of a job that is
-- in the depends state.
function QlessJob.depends(now, args)
  local jid = need(args[1], 'Depends(): Arg "jid" missing')
  local command = need(args[2], 'Depends(): Arg "command" missing')
  local state = rcall('hget', 'ql:j:' .. jid, 'state')
  if state ~= 'depends' then
    error('Depends(): Job ' .. jid .. ' not in the depends state: ' .. tostring(state))
  end
  if command == 'on' then
    local wanted = {}
    for i = 3, #args do
      wanted[#wanted + 1] = args[i]
    end
    QlessJob.add_dependencies(jid, QlessJob.live_dependencies(jid, wanted, 'Depends(): '))
  elseif command == 'off' then
    depends_off(now, jid, args)
  else
    error('Depends(): Argument "command" must be "on" or "off"')
  end
  return true
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

-- Removes every trace of one job that is not complete.
local function cancel_one(jid)
  local current = rcall('hmget', 'ql:j:' .. jid, 'state', 'queue', 'failure', 'worker', 'tags')
  local state, queue, failure, worker, tags = current[1], current[2], current[3], current[4], current[5]
  if state == 'complete' then
    return
  end
  local message = encode({ jid = jid, event = 'canceled', worker = worker, queue = queue })
  Qless.publish('log', message)
  if worker and worker ~= '' then
    rcall('zrem', 'ql:w:' .. worker .. ':jobs', jid)
    Qless.publish('w:' .. worker, message)
  end
  if queue then
    local prefix = 'ql:q:' .. queue
    rcall('zrem', prefix .. '-work', jid)
    rcall('zrem', prefix .. '-locks', jid)
    rcall('zrem', prefix .. '-scheduled', jid)
    rcall('zrem', prefix .. '-depends', jid)
  end
  for _, dep in ipairs(rcall('smembers', 'ql:j:' .. jid .. '-dependencies')) do
    rcall('srem', 'ql:j:' .. dep .. '-dependents', jid)
  end
  if state == 'failed' then
    QlessJob.unfail_record(jid, queue, failure)
  end
  QlessJob.unindex_tags(jid, decode(tags or '{}'))
  if is_tracked(jid) then
    Qless.publish('canceled', jid)
  end
  rcall('del', 'ql:j:' .. jid, 'ql:j:' .. jid .. '-history', 'ql:j:' .. jid .. '-dependencies')
end

-- cancel(jid...): refuses when a listed job has a dependent that is not
-- listed too; otherwise deletes every listed job that is not complete.
function Qless.cancel(jids)
  local listed = {}
  for _, jid in ipairs(jids) do
    listed[jid] = true
  end
  for _, jid in ipairs(jids) do
    for _, dependent in ipairs(rcall('smembers', 'ql:j:' .. jid .. '-dependents')) do
      if not listed[dependent] then
        error('Cancel(): ' .. jid .. ' is a dependency of ' .. dependent .. ' but is not mentioned to be canceled')
      end
    end
  end
  for _, jid in ipairs(jids) do
    cancel_one(jid)
  end
  return jids
end
