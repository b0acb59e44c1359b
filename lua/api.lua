-- api.lua: the dispatcher, the only reader of ARGV.
--
-- Call: EVALSHA <sha> 0 <command> <now> <args...>. Each command's entry
-- (QlessAPI[name], defined next to its implementation and documented there)
-- receives `now` (a finite number) and `a`, the arguments after now (a[1] is
-- the first). Replies are JSON strings where the protocol says JSON (an empty
-- list encodes as `{}`), plain values otherwise (Redis truncates numbers).

-- Command -> the modules it normally needs, loaded before it runs. A function
-- of a module not listed still works (the class tables load the rest on
-- first use); the list keeps the common path cheap. One string rather than a
-- table: a 37-entry table would be rebuilt on every call (~5 us).
local COMMANDS = [[
 get=jobdata,job multiget=jobdata,job put=put requeue=put
 pop=pop,jobdata,stats peek=pop,jobdata complete=complete,stats fail=failure,stats
 retry=failure,stats heartbeat=job cancel=cancel,tagindex,failure,stats timeout=job
 depends=deps,complete priority=job tag=tags track=tags,jobdata log=job jobs=tags,pop
 failed=failure unfail=failure queues=queue,pop workers=worker stats=report length=queue
 pause=queue unpause=queue queue.forget=queue worker.deregister=worker config.get=config
 config.set=config config.unset=config recur=recurring unrecur=recurring
 recur.get=recurring recur.update=recurring recur.tag=recurring recur.untag=recurring
]]

-- The modules of a command (a comma-separated list), or nil if unknown.
local function modules_of(name)
  if string.find(name, '[^%w%._-]') then
    return nil
  end
  local at = string.find(COMMANDS, ' ' .. name .. '=', 1, true)
  if at == nil then
    return nil
  end
  return string.match(COMMANDS, '^[%w,]+', at + #name + 2)
end

-- Checks the calling convention, loads the command's modules and runs it.
local function dispatch()
  if #KEYS > 0 then
    error('No Keys should be provided')
  end
  local name = ARGV[1]
  if name == nil then
    error('Must provide a command')
  end
  local modules = modules_of(name)
  if modules == nil then
    error('Unknown command ' .. name)
  end
  local now = finite(ARGV[2])
  if now == nil then
    error('Arg "now" missing or not a number: ' .. tostring(ARGV[2]))
  end
  for module in string.gmatch(modules, '[^,]+') do
    load_module(module)
  end
  local args
  if #ARGV <= CHUNK then
    args = { unpack(ARGV, 3) }
  else
    args = {}
    for i = 3, #ARGV do
      args[i - 2] = ARGV[i]
    end
  end
  return QlessAPI[name](now, args)
end

return dispatch()
