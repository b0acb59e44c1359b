-- Applied to the built script (django_qless/core/qless.lua), never to one source file:
-- the modules share locals declared in base.lua.
std = "lua51"
read_globals = { "redis", "cjson", "cmsgpack", "bit", "struct", "KEYS", "ARGV" }
allow_defined = false
allow_defined_top = false
max_line_length = false
