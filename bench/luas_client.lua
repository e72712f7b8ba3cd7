-- One Lua's side of bench/luas.lua: n health() round trips of one client
-- (after a warm-up call that makes the connection), each printed in
-- microseconds. Written in the common subset: every Lua runs it.
--   <interp> bench/luas_client.lua N     (UNSANDBOX_URL and keys set)
local unsandbox = require "unsandbox"
local clock = unsandbox.core.loop.monotonic_us

local n = tonumber(arg[1]) or 20
local c = unsandbox.client()
assert(c:health())
for _ = 1, n do
  local t0 = clock()
  assert(c:health())
  print(clock() - t0)
end
c:close()
