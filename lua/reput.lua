-- reput.lua: what put does first with a job that already exists: takes it
-- out of where it was. Loaded by put only then.

-- With a new non-empty depends list, old dependencies not in it are dropped.
function QlessJob.drop_old_dependencies(jid, depends)
  local wanted = {}
  for _, dep in ipairs(depends) do
    wanted[dep] = true
  end
  for _, dep in ipairs(rcall('smembers', 'ql:j:' .. jid .. '-dependencies')) do
    if not wanted[dep] then
      rcall('srem', 'ql:j:' .. dep .. '-dependents', jid)
      rcall('srem', 'ql:j:' .. jid .. '-dependencies', dep)
    end
  end
end

-- Takes a re-put job out of where it was: old queue sets, old worker (who is
-- told unless it is the one putting), completed list, failure group.
function QlessJob.detach(jid, p, old)
  local oldqueue, state, oldworker = old[3], old[4], old[7]
  if oldqueue and oldqueue ~= '' then
    local prefix = 'ql:q:' .. oldqueue
    rcall('zrem', prefix .. '-work', jid)
    rcall('zrem', prefix .. '-locks', jid)
    rcall('zrem', prefix .. '-depends', jid)
    rcall('zrem', prefix .. '-scheduled', jid)
  end
  if oldworker and oldworker ~= '' then
    rcall('zrem', 'ql:w:' .. oldworker .. ':jobs', jid)
    if oldworker ~= p.worker then
      load_module('job') -- Qless.lock_lost
      Qless.lock_lost(jid, oldworker)
    end
  end
  if state == 'complete' then
    rcall('zrem', 'ql:completed', jid)
  elseif state == 'failed' then
    load_module('failure')
    QlessJob.unfail_record(jid, oldqueue ~= '' and oldqueue or p.queue, old[5])
  end
end
