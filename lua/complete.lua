-- complete.lua: completing a job (finally, or advancing it to another queue),
-- releasing its dependents, and the bounded expiry of old completed jobs.

-- HMGET's reply for the config options when ql:config does not exist.
local NO_CONFIG = { false, false, false }

-- Parses complete's arguments after jid; raises before anything is written.
-- `stored` is the job's data as it is: data sent back unchanged (what a worker
-- usually does) is already known to be JSON and is neither decoded nor written
-- again, which for a 10 KB payload is most of a complete's cost.
local function parse_complete(args, stored)
  -- Every field complete sets is named here, nil ones too: the constructor
  -- then sizes the table once instead of it growing twice.
  local parsed = {
    worker = need_name(args[2], 'Complete(): Arg "worker" missing'),
    queue = need_name(args[3], 'Complete(): Arg "queue" missing'),
    raw = args[4],
    next = nil, delay = nil, depends = nil, live = nil, cap = nil,
  }
  if args[4] == nil or (args[4] ~= stored and not decode(args[4])) then
    error('Complete(): Arg "data" missing or not JSON: ' .. tostring(args[4]))
  end
  local options = parse_options(args, 5, ' next delay depends ')
  parsed.next = options['next'] and need_name(options['next'], 'Complete(): Arg "next" missing')
  parsed.delay = need_number(options['delay'] or 0, 'Complete(): Arg "delay" not a number: ')
  if options['depends'] then
    load_module('options') -- json_list
    parsed.depends = json_list(options['depends'], 'Complete(): Arg "depends" not JSON: ')
  end
  if options['delay'] and parsed.next == nil then
    error('Complete(): "delay" cannot be used without a "next".')
  end
  if options['depends'] and parsed.next == nil then
    error('Complete(): "depends" cannot be used without a "next".')
  end
  return parsed
end

-- Deletes completed jobs: the hash, the history and the tag index entries.
local function forget_completed(jids)
  if #jids == 0 then
    return
  end
  load_module('tagindex')
  for _, jid in ipairs(jids) do
    local tags = rcall('hget', 'ql:j:' .. jid, 'tags')
    if tags then
      QlessJob.unindex_tags(jid, decode(tags))
    end
    rcall('del', 'ql:j:' .. jid, 'ql:j:' .. jid .. '-history')
  end
  call_chunked('zrem', 'ql:completed', jids)
end

-- Expires completed jobs older than `jobs-history` seconds and beyond the
-- newest `jobs-history-count`, oldest first and at most SWEEP per call; a
-- larger backlog goes away over the following completions.
function QlessJob.expire_completed(now, max_age, max_count)
  local old = rcall('zrangebyscore', 'ql:completed', '-inf', now - max_age, 'LIMIT', '0', SWEEP_TEXT)
  forget_completed(old)
  local budget = SWEEP - #old
  if budget > 0 then
    local excess = rcall('zcard', 'ql:completed') - math.max(floor(max_count), 0)
    if excess > 0 then
      forget_completed(rcall('zrange', 'ql:completed', 0, math.min(excess, budget) - 1))
    end
  end
end

-- After `jid` completed: each dependent forgets it, and runs when it was the last.
local function release_dependents(now, jid)
  local key = 'ql:j:' .. jid .. '-dependents'
  local dependents = rcall('smembers', key)
  for _, dependent in ipairs(dependents) do
    local deps_key = 'ql:j:' .. dependent .. '-dependencies'
    rcall('srem', deps_key, jid)
    if rcall('scard', deps_key) == 0 then
      load_module('deps')
      QlessJob.undepend(now, dependent, true)
    end
  end
  if #dependents > 0 then
    rcall('del', key)
  end
end

-- The rest of a final complete: mark it, expire old ones (`config` holds the
-- jobs-history options), release dependents (if the job has any).
local function finish(now, jid, p, current, config, dependents)
  Qless.publish('log', encode({ jid = jid, event = 'completed', queue = p.queue }))
  local time = Qless.time_text(now)
  rcall('hmset', 'ql:j:' .. jid, 'state', 'complete', 'worker', '', 'failure', '{}', 'queue', '',
    'expires', '0', 'remaining', Qless.whole_text(tonumber(current[3])), 'time', time)
  if p.raw ~= current[7] then -- data sent back unchanged is already stored
    rcall('hset', 'ql:j:' .. jid, 'data', p.raw)
  end
  -- The score as `time` prints it: enough digits for the same double, one print fewer.
  rcall('zadd', 'ql:completed', time, jid)
  QlessJob.expire_completed(now, finite(config[2]) or 604800, finite(config[3]) or 50000)
  if dependents then
    release_dependents(now, jid)
  end
  return 'complete'
end

--[[ complete(jid, worker, queue, data, [next q] [delay s] [depends JSON]) -> state word
  Without next: 'complete' (state complete, queue "", ql:completed, dependents
  released, old completed jobs expired). With next: 'waiting', 'scheduled' (delay > 0
  and no depends; the hash state stays waiting) or 'depends'.
  Errors: Complete(): Arg "jid"/"worker"/"queue" missing |
          Arg "data" missing or not JSON: <v> | Arg "delay" not a number: <v> |
          Arg "depends" not JSON: <v> | "delay" cannot be used without a "next". |
          "depends" cannot be used without a "next". |
          Odd number of additional args: <args> | Job <jid> does not exist |
          is not currently running: <state> | has been handed out to another worker: <w> |
          running in another queue: <q> | cannot depend on itself | would create a dependency cycle
  Publishes ql:log completed {jid, event, queue} or advanced {jid, event, queue, to};
  ql:completed if tracked.
]]
function QlessJob.complete(now, args)
  local jid = need_name(args[1], 'Complete(): Arg "jid" missing')
  -- Read before the arguments are checked (a read changes nothing): the stored
  -- data lets parse_complete skip decoding data sent back unchanged.
  local current = rcall('hmget', 'ql:j:' .. jid, 'worker', 'state', 'retries', 'queue', 'time',
    'history', 'data')
  local p = parse_complete(args, current[7])
  local owner, state = current[1], current[2]
  if not owner then
    error('Complete(): Job ' .. jid .. ' does not exist')
  elseif state ~= 'running' then
    error('Complete(): Job ' .. jid .. ' is not currently running: ' .. tostring(state))
  elseif owner ~= p.worker then
    error('Complete(): Job ' .. jid .. ' has been handed out to another worker: ' .. tostring(owner))
  elseif p.queue ~= current[4] then
    error('Complete(): Job ' .. jid .. ' running in another queue: ' .. tostring(current[4]))
  end
  if p.next and p.depends and #p.depends > 0 then
    -- Checked here, before the first write: a cycle refuses the whole call.
    load_module('deps')
    p.live = QlessJob.live_dependencies(jid, p.depends, 'Complete(): ')
  end
  -- Which of ql:config, ql:tracked and the job's -dependents set exist, in one
  -- EXISTS (a key named n times counts n times: 1, 2 and 4). Without config
  -- overrides, tracked jobs or dependents (the usual case) the config HMGET,
  -- the ZSCORE and the SMEMBERS are skipped; with them, this call is extra.
  local dependents = 'ql:j:' .. jid .. '-dependents'
  local present = rcall('exists', 'ql:config', 'ql:tracked', 'ql:tracked',
    dependents, dependents, dependents, dependents)
  local config = NO_CONFIG
  if present % 2 == 1 then
    config = rcall('hmget', 'ql:config', 'max-job-history', 'jobs-history', 'jobs-history-count')
  end
  p.cap = finite(config[1]) or 100
  migrate_history(jid, current[6])
  add_history(jid, now, '"done"', nil, p.cap)
  rcall('zrem', 'ql:q:' .. p.queue .. '-locks', jid)
  QlessQueue.stat(p.queue, now, 'run', now - (tonumber(current[5]) or now))
  rcall('zrem', 'ql:w:' .. p.worker .. ':jobs', jid)
  if present % 4 >= 2 and is_tracked(jid) then
    Qless.publish('completed', jid)
  end
  if p.next then
    load_module('advance')
    return QlessJob.advance(now, jid, p, current)
  end
  return finish(now, jid, p, current, config, present >= 4)
end
QlessAPI['complete'] = QlessJob.complete
