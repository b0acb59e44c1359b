-- complete.lua: completing a job (finally, or advancing it to another queue)
-- and the bounded expiry of old completed jobs.

local COMPLETE_OPTIONS = { ['next'] = true, ['delay'] = true, ['depends'] = true }

-- Parses complete's arguments after jid; raises before anything is written.
local function parse_complete(args)
  local parsed = {
    worker = need(args[2], 'Complete(): Arg "worker" missing'),
    queue = need(args[3], 'Complete(): Arg "queue" missing'),
    raw = args[4],
  }
  if args[4] == nil or not decode(args[4]) then
    error('Complete(): Arg "data" missing or not JSON: ' .. tostring(args[4]))
  end
  local options = parse_options(args, 5, COMPLETE_OPTIONS, 'Complete(): Unrecognized option ')
  parsed.next = options['next']
  parsed.delay = need_number(options['delay'] or 0, 'Complete(): Arg "delay" not a number: ')
  parsed.depends = json_list(options['depends'] or '[]', 'Complete(): Arg "depends" not JSON: ')
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
  local old = rcall('zrangebyscore', 'ql:completed', '-inf', now - max_age, 'LIMIT', 0, SWEEP)
  forget_completed(old)
  local budget = SWEEP - #old
  if budget > 0 then
    local excess = rcall('zcard', 'ql:completed') - math.max(floor(max_count), 0)
    if excess > 0 then
      forget_completed(rcall('zrange', 'ql:completed', 0, math.min(excess, budget) - 1))
    end
  end
end

-- The rest of complete with `next`: the job waits in the next queue.
local function advance(now, jid, p, current)
  local nextq, live = p.next, p.live
  Qless.publish('log', encode({ jid = jid, event = 'advanced', queue = p.queue, to = nextq }))
  QlessJob.add_history(jid, now, 'put', { q = nextq }, p.cap)
  rcall('zadd', 'ql:queues', 'NX', now, nextq)
  local fields = { 'state', 'waiting', 'worker', '', 'failure', '{}', 'queue', nextq,
    'expires', 0, 'remaining', tonumber(current[4]), 'data', p.raw, 'time', string.format('%.20f', now) }
  local prefix = 'ql:q:' .. nextq
  if p.delay > 0 and #p.depends == 0 then
    rcall('hmset', 'ql:j:' .. jid, unpack(fields))
    rcall('zadd', prefix .. '-scheduled', now + p.delay, jid)
    return 'scheduled'
  end
  if #live > 0 then
    fields[2] = 'depends'
    if p.delay > 0 then
      extend(fields, { 'scheduled', now + p.delay })
    end
    rcall('hmset', 'ql:j:' .. jid, unpack(fields))
    QlessJob.add_dependencies(jid, live)
    rcall('zadd', prefix .. '-depends', now, jid)
    return 'depends'
  end
  rcall('hmset', 'ql:j:' .. jid, unpack(fields))
  rcall('zadd', prefix .. '-work', (tonumber(current[3]) or 0) - now / 1e10, jid)
  return 'waiting'
end

-- The rest of a final complete: mark it, expire old ones, release dependents.
local function finish(now, jid, p, current)
  Qless.publish('log', encode({ jid = jid, event = 'completed', queue = p.queue }))
  rcall('hmset', 'ql:j:' .. jid, 'state', 'complete', 'worker', '', 'failure', '{}', 'queue', '',
    'expires', 0, 'remaining', tonumber(current[4]), 'data', p.raw, 'time', string.format('%.20f', now))
  rcall('zadd', 'ql:completed', now, jid)
  QlessJob.expire_completed(now, p.max_age, p.max_count)
  QlessJob.release_dependents(now, jid)
  return 'complete'
end

-- complete(jid, worker, queue, data, [next q] [delay s] [depends JSON]).
function QlessJob.complete(now, args)
  local jid = need(args[1], 'Complete(): Arg "jid" missing')
  local p = parse_complete(args)
  local current = rcall('hmget', 'ql:j:' .. jid, 'worker', 'state', 'priority', 'retries', 'queue', 'time', 'history')
  local owner, state = current[1], current[2]
  if not owner then
    error('Complete(): Job ' .. jid .. ' does not exist')
  elseif state ~= 'running' then
    error('Complete(): Job ' .. jid .. ' is not currently running: ' .. tostring(state))
  elseif owner ~= p.worker then
    error('Complete(): Job ' .. jid .. ' has been handed out to another worker: ' .. tostring(owner))
  elseif p.queue ~= current[5] then
    error('Complete(): Job ' .. jid .. ' running in another queue: ' .. tostring(current[5]))
  end
  if p.next then
    -- Checked here, before the first write: a cycle refuses the whole call.
    p.live = QlessJob.live_dependencies(jid, p.depends, 'Complete(): ')
  end
  local config = Qless.config.numbers({ { 'max-job-history', 100 }, { 'jobs-history', 604800 }, { 'jobs-history-count', 50000 } })
  p.cap, p.max_age, p.max_count = config[1], config[2], config[3]
  QlessJob.migrate_history(jid, current[7])
  QlessJob.add_history(jid, now, 'done', nil, p.cap)
  rcall('zrem', 'ql:q:' .. p.queue .. '-locks', jid)
  QlessQueue.stat(p.queue, now, 'run', now - (tonumber(current[6]) or now))
  rcall('zrem', 'ql:w:' .. p.worker .. ':jobs', jid)
  if is_tracked(jid) then
    Qless.publish('completed', jid)
  end
  if p.next then
    return advance(now, jid, p, current)
  end
  return finish(now, jid, p, current)
end
