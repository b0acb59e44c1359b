-- options.lua: the checks of option values (put, complete, recur), loaded by
-- parse_options when a call has an option (see base.lua).

-- A retries argument: `remaining` is decremented with HINCRBY, which refuses
-- a stored 2.5, so a fraction is refused here rather than on a later retry.
need_integer = function(value, message)
  local n = need_number(value, message)
  if n ~= floor(n) then
    error(message .. tostring(value))
  end
  return n
end

-- Decodes a JSON argument that must be an array of strings (tags, depends).
-- Invalid JSON raises cjson's own error text, as the reference script does.
json_list = function(raw, message)
  local list = decode(raw)
  if type(list) ~= 'table' then
    error(message .. tostring(raw))
  end
  for _, item in ipairs(list) do
    local kind = type(item)
    if kind ~= 'string' and kind ~= 'number' then
      error(message .. tostring(raw))
    end
  end
  return list
end
