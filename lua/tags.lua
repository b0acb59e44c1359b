-- tags.lua: tag indexes (`ql:t:<tag>`, `ql:tags`) and the listing commands:
-- tag, track, jobs.

local function job_tags(jid)
  local raw = rcall('hget', 'ql:j:' .. jid, 'tags')
  if not raw then
    error('Tag(): Job ' .. jid .. ' does not exist')
  end
  return decode(raw)
end

-- tag add jid tag...: adds the tags the job does not carry yet.
local function tag_add(now, args)
  local jid = need_name(args[2], 'Tag(): Arg "jid" missing')
  for i = 3, #args do
    need_name(args[i], 'Tag(): Arg "tag" missing')
  end
  local tags = job_tags(jid)
  local present = {}
  for _, tag in ipairs(tags) do
    present[tag] = true
  end
  for i = 3, #args do
    local tag = args[i]
    if not present[tag] then
      present[tag] = true
      tags[#tags + 1] = tag
      rcall('zincrby', 'ql:tags', 1, tag)
    end
    rcall('zadd', 'ql:t:' .. tag, now, jid)
  end
  rcall('hset', 'ql:j:' .. jid, 'tags', encode(tags))
  return tags
end

-- tag remove jid tag...: drops the given tags from the job.
local function tag_remove(args)
  local jid = need_name(args[2], 'Tag(): Arg "jid" missing')
  local tags = job_tags(jid)
  local drop = {}
  for i = 3, #args do
    drop[args[i]] = true
  end
  local kept = {}
  for _, tag in ipairs(tags) do
    if drop[tag] then
      drop[tag] = nil
      rcall('zrem', 'ql:t:' .. tag, jid)
      rcall('zincrby', 'ql:tags', -1, tag)
    else
      kept[#kept + 1] = tag
    end
  end
  rcall('hset', 'ql:j:' .. jid, 'tags', encode(kept))
  return kept
end

-- Reads an optional offset/count pair of a paging command.
local function paging(offset, count, prefix)
  return need_count(offset or 0, prefix .. 'Arg "offset" not a number: '),
    need_count(count or 25, prefix .. 'Arg "count" not a number: ')
end

local function tag_get(args)
  local tag = need(args[2], 'Tag(): Arg "tag" missing')
  local offset, count = paging(args[3], args[4], 'Tag(): ')
  return {
    total = rcall('zcard', 'ql:t:' .. tag),
    jobs = rcall('zrange', 'ql:t:' .. tag, offset, offset + count - 1),
  }
end

local function tag_top(args)
  local offset, count = paging(args[2], args[3], 'Tag(): ')
  return rcall('zrevrangebyscore', 'ql:tags', '+inf', 2, 'LIMIT', offset, count)
end

--[[ tag(add, jid, tag...) / tag(remove, jid, tag...) -> JSON: the job's tag list
     tag(get, tag, [offset=0], [count=25]) -> JSON {total, jobs: [jid...]}
     tag(top, [offset=0], [count=25]) -> JSON list of tags carried by >= 2 jobs
  Errors: Tag(): Arg "command" must be "add", "remove", "get" or "top" (none given) |
          First argument must be "add", "remove" or "get" | Arg "jid" missing |
          Arg "tag" missing | Job <jid> does not exist | Arg "offset"/"count" not a number: <v>
  add/remove write ql:j:<jid> tags, ql:t:<tag>, ql:tags (counted once per job and tag).
]]
function Qless.tag(now, args)
  local command = need(args[1], 'Tag(): Arg "command" must be "add", "remove", "get" or "top"')
  if command == 'add' then
    return tag_add(now, args)
  elseif command == 'remove' then
    return tag_remove(args)
  elseif command == 'get' then
    return tag_get(args)
  elseif command == 'top' then
    return tag_top(args)
  end
  error('Tag(): First argument must be "add", "remove" or "get"')
end

--[[ track() -> JSON {jobs: [job objects], expired: [jids whose job is gone]}
     track(track, jid) / track(untrack, jid) -> JSON 1 or 0 (changed or not)
  untrack also clears a tracked jid whose job is gone (the `expired` ones).
  Errors: Track(): Arg "jid" missing | Job does not exist | Unknown action "<x>"
  Publishes the jid on ql:track / ql:untrack. Writes ql:tracked.
]]
function Qless.track(now, command, jid)
  if command == nil then
    local response = { jobs = {}, expired = {} }
    for _, tracked in ipairs(rcall('zrange', 'ql:tracked', 0, -1)) do
      local object = QlessJob.data(tracked)
      if object then
        response.jobs[#response.jobs + 1] = object
      else
        response.expired[#response.expired + 1] = tracked
      end
    end
    return response
  end
  need_name(jid, 'Track(): Arg "jid" missing')
  local action = string.lower(command)
  -- untrack also takes a jid whose job is gone (cancelled, expired) but which is
  -- still in ql:tracked: there is no other way to clear such an entry.
  if rcall('exists', 'ql:j:' .. jid) == 0 and not (action == 'untrack' and is_tracked(jid)) then
    error('Track(): Job does not exist')
  end
  if action == 'track' then
    Qless.publish('track', jid)
    return rcall('zadd', 'ql:tracked', now, jid)
  elseif action == 'untrack' then
    Qless.publish('untrack', jid)
    return rcall('zrem', 'ql:tracked', jid)
  end
  error('Track(): Unknown action "' .. command .. '"')
end

--[[ jobs(complete, [offset=0], [count=25]) -> array of jids, newest first
     jobs(running|stalled|scheduled|depends|recurring, queue, [offset=0], [count=25]) -> array of jids
  Errors: Jobs(): Arg "state" missing | Arg "queue" missing | Unknown type "<x>" |
          Arg "offset"/"count" not a number: <v>
  `scheduled` lists the jobs not yet due (it first releases up to SWEEP due ones).
]]
function Qless.jobs(now, args)
  local state = need(args[1], 'Jobs(): Arg "state" missing')
  if state == 'complete' then
    local offset, count = paging(args[2], args[3], 'Jobs(): ')
    return rcall('zrevrange', 'ql:completed', offset, offset + count - 1)
  end
  local queue = need(args[2], 'Jobs(): Arg "queue" missing')
  local offset, count = paging(args[3], args[4], 'Jobs(): ')
  local prefix = 'ql:q:' .. queue
  if state == 'running' then
    return rcall('zrangebyscore', prefix .. '-locks', now, '+inf', 'LIMIT', offset, count)
  elseif state == 'stalled' then
    return rcall('zrangebyscore', prefix .. '-locks', '-inf', now, 'LIMIT', offset, count)
  elseif state == 'scheduled' then
    QlessQueue.release_scheduled(queue, now, SWEEP)
    return rcall('zrangebyscore', prefix .. '-scheduled', string.format('(%.17g', now), '+inf', 'LIMIT', offset, count)
  elseif state == 'depends' then
    return rcall('zrange', prefix .. '-depends', offset, offset + count - 1)
  elseif state == 'recurring' then
    return rcall('zrangebyscore', prefix .. '-recur', '-inf', '+inf', 'LIMIT', offset, count)
  end
  error('Jobs(): Unknown type "' .. state .. '"')
end

QlessAPI['tag'] = function(now, a)
  return encode(Qless.tag(now, a))
end

QlessAPI['track'] = function(now, a)
  return encode(Qless.track(now, a[1], a[2]))
end

QlessAPI['jobs'] = function(now, a)
  return Qless.jobs(now, a)
end
