-- legacy.lua: jobs written by old qless-core builds keep their history as a
-- JSON blob in the hash field `history` (one object per put). Any script
-- that touches such a job's history moves the blob into `-history` first.
-- Rare, so it lives in its own module, loaded on first use.

-- Converts the legacy blob into history entries (JSON arrays).
function QlessJob.legacy_entries(blob)
  local entries = {}
  local function add(when, what, extra)
    if extra == nil then
      entries[#entries + 1] = encode({ floor(when), what })
    else
      entries[#entries + 1] = encode({ floor(when), what, extra })
    end
  end
  for _, item in ipairs(decode(blob)) do
    if item.put then
      add(item.put, 'put', { q = item.q })
    end
    if item.popped then
      add(item.popped, 'popped', { worker = item.worker })
    end
    if item.failed then
      add(item.failed, 'failed')
    end
    if item.done then
      add(item.done, 'done')
    end
  end
  return entries
end

-- Moves a legacy blob (already read by the caller) into the history list.
function QlessJob.migrate_history(jid, blob)
  local entries = QlessJob.legacy_entries(blob)
  if #entries > 0 then
    call_chunked('rpush', 'ql:j:' .. jid .. '-history', entries)
  end
  rcall('hdel', 'ql:j:' .. jid, 'history')
end
