-- api.lua: the dispatcher, the only reader of ARGV.
--
-- Call: EVALSHA <sha> 0 <command> <now> <args...>. Each command's entry
-- (QlessAPI[name], defined next to its implementation and documented there)
-- receives `now` (a finite number) and `a`, the arguments after now (a[1] is
-- the first). Replies are JSON strings where the protocol says JSON (an empty
-- list encodes as `{}`), plain values otherwise (Redis truncates numbers).

-- The calling convention first: these checks come before any module loads.
if #KEYS > 0 then
  error('No Keys should be provided')
end
local name = ARGV[1]
if name == nil then
  error('Must provide a command')
end

-- The modules the command normally needs, loaded before it runs. A function of
-- a module not loaded here still works (the class tables load the rest on
-- first use); loading ahead keeps the common path cheap. Plain statements
-- rather than a function, and an if-chain rather than a table or a parsed
-- string: the top level runs on every call, so a 37-entry table (~5 us), a
-- parsed string (~1 us) or even a closure (~0.1 us) is paid every time, while
-- these comparisons of interned strings cost next to nothing (hot commands
-- first).
if name == 'put' or name == 'requeue' then
  load_module('put')
elseif name == 'pop' then
  load_module('pop')
  load_module('jobdata')
  load_module('stats')
elseif name == 'complete' then
  load_module('complete')
  load_module('stats')
elseif name == 'heartbeat' or name == 'priority' or name == 'timeout' or name == 'log' then
  load_module('job')
elseif name == 'get' or name == 'multiget' then
  load_module('jobdata')
  load_module('job')
elseif name == 'fail' or name == 'retry' then
  load_module('failure')
  load_module('stats')
elseif name == 'failed' or name == 'unfail' then
  load_module('failure')
elseif name == 'peek' then
  load_module('pop')
  load_module('jobdata')
elseif name == 'config.get' or name == 'config.set' or name == 'config.unset' then
  load_module('config')
elseif name == 'cancel' then
  load_module('cancel')
  load_module('tagindex')
  load_module('failure')
  load_module('stats')
elseif name == 'depends' then
  load_module('deps')
elseif name == 'tag' then
  load_module('tags')
elseif name == 'track' then
  load_module('tags')
  load_module('jobdata')
elseif name == 'jobs' then
  load_module('tags')
  load_module('pop')
elseif name == 'queues' then
  load_module('queue')
  load_module('pop')
elseif name == 'length' or name == 'pause' or name == 'unpause' or name == 'queue.forget' then
  load_module('queue')
elseif name == 'workers' or name == 'worker.deregister' then
  load_module('worker')
elseif name == 'stats' then
  load_module('report')
elseif name == 'recur' or name == 'unrecur' or name == 'recur.get' or name == 'recur.update'
  or name == 'recur.tag' or name == 'recur.untag' then
  load_module('recurring')
else
  error('Unknown command ' .. name)
end

local now = finite(ARGV[2])
if now == nil then
  error('Arg "now" missing or not a number: ' .. tostring(ARGV[2]))
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
