-- A hostile server for the client's specs: a separate lua5.4 process
-- (hostile_server.lua) on an ephemeral loopback port that answers with
-- whatever bytes a spec scripts, including replies unsandboxd never
-- sends (HTTP/0.9, wrong shapes, absurd Retry-After values). It is a real
-- TCP peer: the client's libcurl and C core run as they would against any
-- server. Stopped by pid.
local fs = require "spec.helpers.fs"

local M = {}

-- The prelude every script gets: reply(status, body, headers) builds a
-- complete HTTP/1.1 response that closes its connection.
local PRELUDE = [[
local function reply(status, body, headers)
  local lines = { "HTTP/1.1 " .. status .. " X", "Content-Length: " .. #body,
                  "Content-Type: application/json", "Connection: close" }
  for k, v in pairs(headers or {}) do lines[#lines + 1] = k .. ": " .. v end
  return table.concat(lines, "\r\n") .. "\r\n\r\n" .. body
end
]]

-- Starts a server running script (Lua source whose chunk returns the
-- respond function; `reply` is in scope). Returns {url, pid, requests(),
-- stop()}.
function M.start(script)
  local dir = fs.tmpdir("unsb-hostile")
  local file, log = dir .. "/respond.lua", dir .. "/requests.log"
  fs.write(file, PRELUDE .. script)
  fs.write(log, "")
  local cmd = "LUA_PATH='lua/?.lua;;' lua5.4 spec/helpers/hostile_server.lua "
    .. fs.quote(file) .. " " .. fs.quote(log) .. " & echo PID=$!"
  local pipe = assert(io.popen(cmd, "r"))
  -- the shell's PID line and the server's PORT line come in either order
  local pid, port
  for _ = 1, 2 do
    local line = pipe:read("*l") or ""
    pid = pid or tonumber(line:match("^PID=(%d+)"))
    port = port or tonumber(line:match("^PORT=(%d+)"))
  end
  assert(pid and port, "the hostile server did not start")
  local h = { url = "http://127.0.0.1:" .. port, pid = pid }
  -- the requests it has seen so far, as "METHOD PATH" strings
  function h.requests()
    local list = {}
    for line in (fs.read(log) or ""):gmatch("[^\n]+") do list[#list + 1] = line end
    return list
  end
  function h.stop()
    if fs.alive(pid) then os.execute("kill " .. pid .. " 2>/dev/null") end
    pipe:close()
    fs.rm_rf(dir)
  end
  return h
end

return M
