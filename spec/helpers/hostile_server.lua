-- The process behind spec/helpers/hostile.lua: a loopback HTTP peer that
-- answers each connection with bytes a script chose (not always HTTP).
-- arg[1]: a Lua file returning function(method, path, n, headers) -> the
-- raw reply (headers: the request's, names in lower case),
-- or false to hold the connection unanswered until the client leaves;
-- arg[2]: a file that gets one "METHOD PATH" line per request.
-- Bounded: it exits 20 s after its last connection or after 500 of them
-- (the spec also stops it by pid).
local socket = require "socket"

local srv = assert(socket.bind("127.0.0.1", 0))
local _, port = srv:getsockname()
io.stdout:write("PORT=", port, "\n")
io.stdout:flush()
local respond = dofile(arg[1])
local log = assert(io.open(arg[2], "a"))

local function read_request(c)
  local line = c:receive("*l")
  local len, headers = 0, {}
  for _ = 1, 200 do
    local h = c:receive("*l")
    if not h or h == "" then break end
    local k, v = h:match("^([^:]+):%s*(.-)%s*$")
    if k then headers[k:lower()] = v end
    v = h:lower():match("^content%-length:%s*(%d+)")
    if v then len = tonumber(v) end
  end
  if len > 0 then c:receive(len) end
  local method, path = (line or ""):match("^(%S+) (%S+)")
  return method, path, headers
end

srv:settimeout(20)
for n = 1, 500 do
  local c = srv:accept()
  if not c then break end
  c:settimeout(30)
  local method, path, headers = read_request(c)
  log:write(tostring(method), " ", tostring(path), "\n")
  log:flush()
  local out = respond(method, path, n, headers)
  if out then c:send(out)
  else c:receive("*a") end                 -- held until the client gives up
  c:close()
end
