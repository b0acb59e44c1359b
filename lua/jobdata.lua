-- jobdata.lua: reading a job into the job object that get, multiget, peek,
-- pop and track reply with.


-- The history as objects {when, what, ...extra}; `blob` is the legacy field
-- (its entries are shown after the list's, where migrating will put them).
-- `newest`, when given, is the object of the list's last entry, which the
-- caller has just appended: it is not read back and decoded again.
function QlessJob.read_history(jid, blob, newest)
  local raw = rcall('lrange', 'ql:j:' .. jid .. '-history', '0', newest and '-2' or '-1')
  if blob then
    load_module('legacy')
    extend(raw, QlessJob.legacy_entries(blob))
  end
  local history = {}
  for i, item in ipairs(raw) do
    local entry = decode(item)
    local object = entry[3]
    if type(object) ~= 'table' then
      object = {}
    end
    object.when = entry[1]
    object.what = entry[2]
    history[i] = object
  end
  history[#history + 1] = newest
  return history
end

-- The members of a set, sorted: Redis <= 4 sorted SMEMBERS replies inside
-- scripts and qless clients (qless-py's tests) expect that order; Redis >= 5
-- returns hash order, which even changes between server starts.
local function sorted_members(key)
  local members = rcall('smembers', key)
  if #members > 1 then
    table.sort(members)
  end
  return members
end

-- Builds the job object from values read as QlessJob.data does (nil if absent).
-- `dependencies` may be passed in by a caller that knows them (pop: a job
-- that can run never has any), `newest` as for read_history, `untracked`
-- when the caller knows ql:tracked does not exist. A `lean` object has no
-- history and no dependents (complete.pop's when asked: read only when needed).
function QlessJob.object(jid, v, dependencies, newest, untracked, lean)
  if not v[1] then
    return nil
  end
  local history, dependents
  if not lean then
    history = QlessJob.read_history(jid, v[11], newest)
    dependents = sorted_members('ql:j:' .. jid .. '-dependents')
  end
  return {
    jid = v[1],
    klass = v[2],
    state = v[13],
    queue = v[3],
    worker = v[14] or '',
    tracked = not untracked and is_tracked(jid),
    priority = tonumber(v[4]),
    expires = tonumber(v[15]) or 0,
    retries = tonumber(v[5]),
    remaining = floor(tonumber(v[6]) or 0),
    data = v[7],
    tags = decode(v[8] or '{}'),
    history = history,
    failure = decode(v[9] or '{}'),
    spawned_from_jid = v[10],
    dependents = dependents,
    dependencies = dependencies or sorted_members('ql:j:' .. jid .. '-dependencies'),
  }
end

-- The job object of a jid, or nil. The HMGET reads what a job object needs,
-- with the legacy `history` blob (11) and `time` (12), the put/pop time stats
-- are measured from; the three that pop overwrites come last: pop reads only
-- the first twelve (pop_one in pop.lua).
function QlessJob.data(jid)
  local v = rcall('hmget', 'ql:j:' .. jid, 'jid', 'klass', 'queue', 'priority', 'retries', 'remaining',
    'data', 'tags', 'failure', 'spawned_from_jid', 'history', 'time', 'state', 'worker', 'expires')
  return QlessJob.object(jid, v)
end
