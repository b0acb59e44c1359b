-- worker.lua: the worker registry (`ql:workers`, `ql:w:<worker>:jobs`).

local QlessWorker = {}

-- Forgets workers not seen for `max-worker-age` seconds, and their job sets.
local function prune_workers(now)
  local age = config_number('max-worker-age', 86400)
  local cutoff = now - age
  local old = rcall('zrangebyscore', 'ql:workers', '-inf', cutoff)
  for _, worker in ipairs(old) do
    rcall('del', 'ql:w:' .. worker .. ':jobs')
  end
  if #old > 0 then
    rcall('zremrangebyscore', 'ql:workers', '-inf', cutoff)
  end
end

-- workers(): [{name, jobs, stalled}] newest-active first;
-- workers(worker): {jobs: [jid...], stalled: [jid...]}.
function QlessWorker.counts(now, worker)
  prune_workers(now)
  if worker then
    local key = 'ql:w:' .. worker .. ':jobs'
    return {
      jobs = rcall('zrevrangebyscore', key, '+inf', now),
      stalled = rcall('zrevrangebyscore', key, now, '-inf'),
    }
  end
  local result = {}
  for i, name in ipairs(rcall('zrevrange', 'ql:workers', 0, -1)) do
    local key = 'ql:w:' .. name .. ':jobs'
    result[i] = {
      name = name,
      jobs = rcall('zcount', key, now, '+inf'),
      stalled = rcall('zcount', key, '-inf', now),
    }
  end
  return result
end

--[[ workers() -> JSON [{name, jobs, stalled}] newest-active first;
     workers(worker) -> JSON {jobs: [jids, lock in the future], stalled: [jids, lock expired]}
  First forgets workers not seen for max-worker-age (default 86400) and their job sets.
]]
QlessAPI['workers'] = function(now, a)
  return encode(QlessWorker.counts(now, a[1]))
end

--[[ worker.deregister(worker...) -> nil: removes the names from ql:workers only.
  Errors: WorkerDeregister(): Arg "worker" missing
]]
QlessAPI['worker.deregister'] = function(_, a)
  need_name(a[1], 'WorkerDeregister(): Arg "worker" missing')
  call_chunked('zrem', 'ql:workers', a)
end
