-- pop.lua: pop and peek, with the lazy work they do first: expired locks,
-- recurring spawns and due scheduled jobs.

-- The `dependencies` of every popped job (read-only, never filled).
local NONE = {}
-- HMGET's reply for config options when ql:config does not exist.
local NO_CONFIG = { false, false, false, false, false }

-- A number as Redis would print it (%.17g), remembered for the next call with
-- the same number: pop passes `now` to four commands and `expires` to two
-- (see the note on numbers in base.lua). Only for scores and range bounds
-- (any text of the same double is the same score), never for hash values:
-- Redis >= 7.2 prints numbers in their shortest form there.
local score_number, score_string
local function score_text(n)
  if n ~= score_number then
    score_number, score_string = n, string.format('%.17g', n)
  end
  return score_string
end

-- Moves up to `count` due scheduled jobs of a queue into its work set.
function QlessQueue.release_scheduled(queue, now, count)
  if count <= 0 then
    return
  end
  local prefix = 'ql:q:' .. queue
  local due = rcall('zrangebyscore', prefix .. '-scheduled', '-inf', score_text(now), 'LIMIT', '0', count)
  for _, jid in ipairs(due) do
    local priority = tonumber(rcall('hget', 'ql:j:' .. jid, 'priority')) or 0
    rcall('zadd', prefix .. '-work', priority - now / 1e10, jid)
    rcall('hset', 'ql:j:' .. jid, 'state', 'waiting')
  end
  call_chunked('zrem', prefix .. '-scheduled', due)
end

-- Jobs whose lock expired (at most `count`); pop acts on them, peek lists them.
local function expired_locks(queue, now, count)
  if count <= 0 then
    return {}
  end
  return rcall('zrangebyscore', 'ql:q:' .. queue .. '-locks', '-inf', score_text(now), 'LIMIT', '0', count)
end

-- The jids a pop/peek of `count` returns after the expired ones: recurring
-- spawns and due scheduled jobs join the work set first (both limited by
-- what is still wanted), then the top of the work set. `queued` tells
-- whether the queue has a -recur or -scheduled set at all: without one, the
-- two range queries are skipped (the usual case).
local function candidates(queue, now, count, expired, queued)
  local wanted = count - #expired
  if wanted <= 0 then
    return expired
  end
  local prefix = 'ql:q:' .. queue
  if queued then
    local templates = rcall('zrangebyscore', prefix .. '-recur', '-inf', score_text(now), 'LIMIT', '0', wanted)
    if #templates > 0 then
      load_module('recurring')
      QlessRecurringJob.spawn_due(queue, now, wanted, templates)
    end
    QlessQueue.release_scheduled(queue, now, wanted)
  end
  return extend(expired, rcall('zrevrange', prefix .. '-work', '0', wanted - 1))
end

-- Hands one job to `worker`; returns its job object (nil if the hash is gone).
-- `time` is now as the job hash stores it (%.20f), printed once per pop;
-- `untracked` when ql:tracked does not exist; `lean` for an object without
-- history and dependents.
local function pop_one(now, queue, jid, worker, expires, cap, time, untracked, lean)
  local key = 'ql:j:' .. jid
  -- QlessJob.data's fields but the last three (state, worker, expires),
  -- which pop is about to overwrite.
  local v = rcall('hmget', key, 'jid', 'klass', 'queue', 'priority', 'retries', 'remaining',
    'data', 'tags', 'failure', 'spawned_from_jid', 'history', 'time')
  if not v[1] then
    return nil
  end
  if v[11] then
    migrate_history(jid, v[11])
    v[11] = false
  end
  add_history(jid, now, '"popped"', json_pair('worker', worker), cap)
  -- That entry as read_history would build it, with the same key order in the
  -- JSON (checked by test_hardening.py), unless its time is out of the range
  -- where add_history printed it exactly.
  local newest
  if not lean and now >= 0 and now < 1e14 then
    newest = { worker = worker, when = floor(now), what = 'popped' }
  end
  local waited = now - (tonumber(v[12]) or now)
  QlessQueue.stat(queue, now, 'wait', waited)
  rcall('hmset', key, 'time', time, 'worker', worker, 'expires', expires, 'state', 'running')
  rcall('zadd', 'ql:w:' .. worker .. ':jobs', score_text(expires), jid)
  rcall('zadd', 'ql:q:' .. queue .. '-locks', score_text(expires), jid)
  v[13], v[14], v[15] = 'running', worker, expires
  -- A job that can run has no dependencies left: no need to read them.
  local object = QlessJob.object(jid, v, NONE, newest, untracked, lean)
  if lean then
    -- Seconds the job waited to be popped, for the worker's wait-time histogram (the
    -- lean object has no history to tell it from; other clients never ask for lean).
    object.waited = waited
  end
  if object.tracked then
    Qless.publish('popped', jid)
  end
  return object
end

-- How many jobs a pop may take under `<queue>-max-concurrency`.
local function allowed(queue, now, count, limit)
  if limit > 0 then
    local running = rcall('zcount', 'ql:q:' .. queue .. '-locks', now, '+inf')
    return math.min(count, math.max(0, limit - running))
  end
  return count
end

-- pop(queue, worker, count): up to `count` job objects, now owned by worker
-- (`lean` ones: see QlessJob.object).
function QlessQueue.pop(now, queue, worker, count, lean)
  need_name(queue, 'Pop(): Arg "queue" missing')
  need_name(worker, 'Pop(): Arg "worker" missing')
  count = need_count(count, 'Pop(): Arg "count" missing or not a number: ')
  -- Which of ql:config, ql:tracked and the queue's -recur and -scheduled sets
  -- exist, in one EXISTS (a key named n times counts n times: 1 for the
  -- config, 2 for tracked, 4 for each set). Without config overrides, tracked
  -- jobs or recurring/scheduled jobs (the usual case) the config HMGET, the
  -- ZSCORE of each popped job and the range queries are skipped.
  local recur, scheduled = 'ql:q:' .. queue .. '-recur', 'ql:q:' .. queue .. '-scheduled'
  local present = rcall('exists', 'ql:config', 'ql:tracked', 'ql:tracked',
    recur, recur, recur, recur, scheduled, scheduled, scheduled, scheduled)
  local config = NO_CONFIG
  if present % 2 == 1 then
    config = rcall('hmget', 'ql:config', queue .. '-heartbeat', 'heartbeat',
      queue .. '-max-concurrency', 'grace-period', 'max-job-history')
  end
  local expires = now + (finite(config[1]) or finite(config[2]) or 60)
  local grace, cap = finite(config[4]) or 10, finite(config[5]) or 100
  if rcall('sismember', 'ql:paused_queues', queue) == 1 then
    return {}
  end
  rcall('zadd', 'ql:workers', score_text(now), worker)
  count = allowed(queue, now, count, finite(config[3]) or 0)
  local expired = expired_locks(queue, now, count)
  local jids = {}
  if #expired > 0 then
    load_module('failure')
    for _, jid in ipairs(expired) do
      if QlessJob.expire_lock(now, queue, jid, grace, cap) then
        jids[#jids + 1] = jid
      end
    end
  end
  jids = candidates(queue, now, count, jids, present >= 4)
  local popped = {}
  local time = #jids > 0 and Qless.time_text(now) -- the `time` of every popped job
  local untracked = present % 4 < 2
  for _, jid in ipairs(jids) do
    popped[#popped + 1] = pop_one(now, queue, jid, worker, expires, cap, time, untracked, lean)
  end
  call_chunked('zrem', 'ql:q:' .. queue .. '-work', jids)
  return popped
end

--[[ pop(queue, worker, count) -> JSON list of job objects (`{}` when none)
  Paused queue: `{}` before anything else. Otherwise registers the worker, applies
  <queue>-max-concurrency, handles expired locks (courtesy notice, then retry or
  exhaustion), spawns due recurring jobs, releases due scheduled jobs, and hands out
  the top of the work set: history popped, wait stat, lock = now + heartbeat.
  Errors: Pop(): Arg "queue" missing | Arg "worker" missing |
          Arg "count" missing or not a number: <v>
  Publishes lock_lost / ql:stalled / failed (expired locks), ql:popped if tracked.
]]
QlessAPI['pop'] = function(now, a)
  return encode(QlessQueue.pop(now, a[1], a[2], a[3]))
end

-- Whether a pop of `queue` could hand a job out: it has waiting, scheduled or recurring
-- jobs, or a lock that expired. One EXISTS for an empty queue (a pop of one costs a
-- dozen calls); pop.first asks this before popping each of a worker's queues, so a
-- worker on many queues pays it for every empty queue ahead of the first with jobs.
local function may_hand_out(queue, now)
  local prefix = 'ql:q:' .. queue
  local locks = prefix .. '-locks'
  -- EXISTS counts a key named n times n times: the three job sets once each, the locks
  -- four times, so the remainder by 4 says whether a job waits and the rest whether
  -- there are locks to look at.
  local found = rcall('exists', prefix .. '-work', prefix .. '-scheduled', prefix .. '-recur',
    locks, locks, locks, locks)
  if found % 4 > 0 then
    return true
  elseif found == 0 then
    return false
  end
  local first = rcall('zrange', locks, 0, 0, 'WITHSCORES')
  return first[2] ~= nil and tonumber(first[2]) <= now
end

-- Checks the queue names a[from], a[from + 1], ...: at least one, none empty.
local function need_queues(a, from, prefix)
  for i = from, math.max(#a, from) do
    need_name(a[i], prefix .. 'Arg "queue" missing')
  end
end

-- The optional `ahead n keep` where a pop's count is expected (a[at]): n, keep, and where
-- the count is then.
local function read_ahead(a, at, prefix)
  if a[at] ~= 'ahead' then
    return 0, 0, at
  end
  local n = need_count(a[at + 1], prefix .. 'Arg "ahead" missing or not a number: ')
  local keep = need_count(a[at + 2], prefix .. 'Arg "keep" missing or not a number: ')
  return n, keep, at + 3
end

-- How many of `count` jobs to take from `queue` when its last `ahead` are for a worker to
-- hold until a slot of its own frees up: those only as far as `keep` jobs stay waiting. A
-- queue's last jobs then go to slots that are free when they are taken, of this worker or
-- of another, instead of waiting in a hold while such a slot idles.
local function pop_count(queue, count, ahead, keep)
  if ahead <= 0 then
    return count
  end
  local needed = math.max(count - ahead, 0)
  local spare = rcall('zcard', 'ql:q:' .. queue .. '-work') - needed - keep
  return needed + math.max(0, math.min(spare, count - needed))
end

-- `pop` of each of the queues a[from], a[from + 1], ... until one hands jobs out; the
-- JSON list of those jobs (`{}` when none does), `lean` ones if asked; `ahead` and `keep`
-- as pop_count takes them.
local function pop_first(now, worker, count, a, from, lean, ahead, keep)
  if #a == from then -- one queue: its pop, without the reads that would pass it over
    return encode(QlessQueue.pop(now, a[from], worker, pop_count(a[from], count, ahead, keep),
      lean))
  end
  local popped_any = false
  for i = from, #a do
    if may_hand_out(a[i], now) then
      local wanted = pop_count(a[i], count, ahead, keep)
      if wanted == 0 then
        break -- only jobs to hold were asked for: none from a later queue either
      end
      popped_any = true
      local popped = QlessQueue.pop(now, a[i], worker, wanted, lean)
      if #popped > 0 then
        return encode(popped)
      end
    end
  end
  if not popped_any then -- every pop registers the worker, even one that finds nothing
    rcall('zadd', 'ql:workers', score_text(now), worker)
  end
  return encode({})
end

--[[ pop.first(worker, [ahead, n, keep], count, queue...) -> JSON list of job objects: `pop`
  of each queue in the order given until one hands jobs out (`{}` when none does). An
  extension of django_qless: a worker with many queues pays one call, not one per queue it
  finds empty. With `ahead n keep`, the last n of the count (jobs a worker holds for a slot
  that is not free yet) are taken only as far as keep jobs stay waiting in that queue (an
  empty reply if none of the count was for a free slot). Every argument is checked before
  the first pop.
  Errors: Pop.first(): Arg "worker" missing | Arg "ahead" missing or not a number: <v> |
          Arg "keep" missing or not a number: <v> |
          Arg "count" missing or not a number: <v> |
          Arg "queue" missing (none given, or an empty name)
]]
QlessAPI['pop.first'] = function(now, a)
  local worker = need_name(a[1], 'Pop.first(): Arg "worker" missing')
  local ahead, keep, at = read_ahead(a, 2, 'Pop.first(): ')
  local count = need_count(a[at], 'Pop.first(): Arg "count" missing or not a number: ')
  need_queues(a, at + 1, 'Pop.first(): ')
  return pop_first(now, worker, count, a, at + 1, false, ahead, keep)
end

--[[ complete.pop(jid, worker, queue, data, [lean], [ahead, n, keep], count, queue...) ->
  {state, JSON list}:
  `complete` of a job (without next/delay/depends), then `pop.first` for the same worker, in
  one call: a worker that completes a job and pops the next pays one call, not two. An
  extension of django_qless. The pop's arguments are checked before anything is written,
  and an error of the completion (the same errors as `complete`) refuses the pop as well.
  An error of the pop once the completion has written (a corrupt job met in a queue) comes
  back as the reply's second element, an error in an array, so the caller still learns that
  its job completed. With `lean` the popped job objects have no `history` and `dependents`
  (reading, decoding and encoding them is 8.6% of a worker job's Redis instructions); the
  writes are the same. `ahead n keep` as pop.first takes them.
  Errors: Complete.pop(): Arg "ahead" missing or not a number: <v> |
          Arg "keep" missing or not a number: <v> |
          Arg "count" missing or not a number: <v> | Arg "queue" missing;
          then those of complete (Complete(): ...)
]]
QlessAPI['complete.pop'] = function(now, a)
  local lean = a[5] == 'lean'
  local ahead, keep, at = read_ahead(a, lean and 6 or 5, 'Complete.pop(): ')
  local count = need_count(a[at], 'Complete.pop(): Arg "count" missing or not a number: ')
  need_queues(a, at + 1, 'Complete.pop(): ')
  local state = QlessJob.complete(now, { a[1], a[2], a[3], a[4] })
  local ok, popped = pcall(pop_first, now, a[2], count, a, at + 1, lean, ahead, keep)
  if ok or (type(popped) == 'table' and popped.err) then -- the jobs, or a command's error
    return { state, popped }
  end
  -- A Lua error: its text without the position Lua put before it.
  local message = string.gsub(tostring(popped), '^@?user_%a+:%d+: ', '')
  return { state, redis.error_reply('Complete.pop(): the pop failed: ' .. message) }
end

--[[ peek(queue, count) -> JSON list of job objects a pop would get (unchanged jobs;
  recurring spawns and scheduled releases still happen).
  Errors: Peek(): Arg "queue" missing | Arg "count" missing or not a number: <v>
]]
QlessAPI['peek'] = function(now, a)
  local queue = need(a[1], 'Peek(): Arg "queue" missing')
  local count = need_count(a[2], 'Peek(): Arg "count" missing or not a number: ')
  local queued = rcall('exists', 'ql:q:' .. queue .. '-recur', 'ql:q:' .. queue .. '-scheduled') > 0
  local jids = candidates(queue, now, count, expired_locks(queue, now, count), queued)
  local result = {}
  for _, jid in ipairs(jids) do
    result[#result + 1] = QlessJob.data(jid)
  end
  return encode(result)
end
