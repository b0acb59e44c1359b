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

-- The modules the command always needs, run before it; the others are
-- loaded where a path needs them (load_module). Plain statements rather than
-- a function, and an if-chain rather than a table or a parsed string: the top
-- level runs on every call, so a 37-entry table (~5 us), a parsed string
-- (~1 us) or even a closure (~0.1 us) is paid every time, while these
-- comparisons of interned strings cost next to nothing (hot commands first).
-- failure.lua loads stats.lua itself.
if name == 'put' or name == 'requeue' or name == 'put.ifabsent' or name == 'put.many' then
  run_module('put')
elseif name == 'pop' or name == 'pop.first' then
  run_module('pop')
  run_module('jobdata')
  run_module('stats')
elseif name == 'complete' then
  run_module('complete')
  run_module('stats')
elseif name == 'complete.pop' then
  run_module('complete')
  run_module('stats')
  run_module('pop')
  run_module('jobdata')
elseif name == 'heartbeat' or name == 'priority' or name == 'timeout' or name == 'log' then
  run_module('job')
elseif name == 'get' or name == 'multiget' then
  run_module('jobdata')
  run_module('job')
elseif name == 'fail' or name == 'retry' or name == 'failed' or name == 'unfail' then
  run_module('failure')
elseif name == 'peek' then
  run_module('pop')
  run_module('jobdata')
elseif name == 'config.get' or name == 'config.set' or name == 'config.unset' then
  run_module('config')
elseif name == 'cancel' then
  run_module('cancel')
  run_module('tagindex')
  run_module('failure')
elseif name == 'depends' then
  run_module('deps')
elseif name == 'tag' then
  run_module('tags')
elseif name == 'track' then
  run_module('tags')
  run_module('jobdata')
elseif name == 'jobs' then
  run_module('tags')
  run_module('pop')
elseif name == 'queues' then
  run_module('queue')
  run_module('pop')
elseif name == 'length' or name == 'pause' or name == 'unpause' or name == 'queue.forget' then
  run_module('queue')
elseif name == 'workers' or name == 'worker.deregister' then
  run_module('worker')
elseif name == 'stats' then
  run_module('report')
elseif name == 'recur' or name == 'unrecur' or name == 'recur.get' or name == 'recur.update'
  or name == 'recur.tag' or name == 'recur.untag' then
  run_module('recurring')
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
