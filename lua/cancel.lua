-- cancel.lua: the cancel command.

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

--[[ cancel(jid...) -> the jids given (array)
  Refuses (nothing written) when a listed job has a dependent that is not listed.
  Then for each listed job that is not complete: removed from its worker and queue
  sets, its dependencies' dependents, its failure group (failed -1 on the failure's
  day), its tags; hash, history and dependencies deleted. It stays in ql:tracked.
  Errors: Cancel(): <jid> is a dependency of <dep> but is not mentioned to be canceled
  Publishes ql:log {jid, event:"canceled", worker, queue} (also on ql:w:<worker> when
  owned, and the jid on ql:canceled when tracked), also for unknown jids.
]]
QlessAPI['cancel'] = function(_, jids)
  local listed = {}
  for _, jid in ipairs(jids) do
    need_name(jid, 'Cancel(): Arg "jid" missing')
    listed[jid] = true
  end
  for _, jid in ipairs(jids) do
    local dependents = rcall('smembers', 'ql:j:' .. jid .. '-dependents')
    table.sort(dependents) -- the error names the same dependent every time
    for _, dependent in ipairs(dependents) do
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
