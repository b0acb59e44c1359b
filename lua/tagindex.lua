-- tagindex.lua: a job's entries in the tag indexes: `ql:t:<tag>` (jid ->
-- time tagged) and `ql:tags` (tag -> number of jobs carrying it).

-- Indexes a job under each tag (score = when) and counts it in `ql:tags`.
function QlessJob.index_tags(jid, tags, when)
  for _, tag in ipairs(tags) do
    rcall('zadd', 'ql:t:' .. tag, when, jid)
    rcall('zincrby', 'ql:tags', 1, tag)
  end
end

-- Removes a job from each tag index and uncounts it.
function QlessJob.unindex_tags(jid, tags)
  for _, tag in ipairs(tags) do
    rcall('zrem', 'ql:t:' .. tag, jid)
    rcall('zincrby', 'ql:tags', -1, tag)
  end
end

-- Moves a job's tag index from `old` to `new` tags: tags only in `old` are
-- uncounted, tags only in `new` counted, kept tags re-stamped with `when`.
function QlessJob.retag(jid, old, new, when)
  local keep = {}
  for _, tag in ipairs(new) do
    keep[tag] = true
  end
  local had = {}
  for _, tag in ipairs(old) do
    had[tag] = true
    if not keep[tag] then
      rcall('zrem', 'ql:t:' .. tag, jid)
      rcall('zincrby', 'ql:tags', -1, tag)
    end
  end
  for _, tag in ipairs(new) do
    rcall('zadd', 'ql:t:' .. tag, when, jid)
    if not had[tag] then
      rcall('zincrby', 'ql:tags', 1, tag)
    end
  end
end
