-- deps.lua: job dependencies (`-dependencies` / `-dependents` sets) and the
-- depends command.

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
  for _, item in ipairs(depends) do
    local dep = tostring(item)
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

--[[ depends(jid, on, jid...) / depends(jid, off, jid...) / depends(jid, off, all) -> 1
  Only for a job in the depends state. `on` adds the listed jobs that exist and are
  not complete; `off` removes; when none is left the job goes to its work set (waiting).
  Errors: Depends(): Arg "jid" missing | Arg "command" missing |
          Job <jid> not in the depends state: <state> |
          Argument "command" must be "on" or "off" |
          Job <jid> cannot depend on itself |
          Job <jid> depending on <jids> would create a dependency cycle
]]
QlessAPI['depends'] = function(now, args)
  local jid = need_name(args[1], 'Depends(): Arg "jid" missing')
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
