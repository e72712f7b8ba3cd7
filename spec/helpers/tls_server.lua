-- A local HTTPS stand-in for the TLS specs (tls_spec, terminal_tls_spec):
-- self-signed certificates made with `openssl req`, and `openssl s_server
-- -www` on a free loopback port, which answers any request with its HTTP
-- 200 status page once TLS is accepted. Stopped by pid.
local fs = require "spec.helpers.fs"
local socket = require "socket"
local wait = require "spec.helpers.wait"
local lua = require "spec.helpers.lua"

local M = {}
local q = fs.quote

-- a free loopback port (bound, then released for s_server)
local function free_port()
  local s = assert(socket.bind("127.0.0.1", 0))
  local _, port = s:getsockname()
  s:close()
  return tonumber(port)
end

--- make_cert(dir, name, san) -> pem, key: a self-signed certificate for
-- san ("IP:127.0.0.1", "DNS:example.com"), valid for a day.
function M.make_cert(dir, name, san)
  assert(lua.sh(string.format(
    "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -keyout %s -out %s -subj /CN=%s " ..
    "-addext subjectAltName=%s >/dev/null 2>&1",
    q(dir .. "/" .. name .. ".key"), q(dir .. "/" .. name .. ".pem"), san:match(":(.*)"), san)))
  return dir .. "/" .. name .. ".pem", dir .. "/" .. name .. ".key"
end

--- start(pem, key) -> {port =, pid =}, once it accepts connections
-- (bounded wait: 5 s).
function M.start(pem, key)
  local port = free_port()
  local p = io.popen(string.format(
    "openssl s_server -accept 127.0.0.1:%d -cert %s -key %s -www -quiet </dev/null >/dev/null 2>&1 & echo $!",
    port, q(pem), q(key)))
  local srv = { port = port, pid = tonumber(p:read("*l")) }
  p:close()
  if wait.eventually(function()
    local c = socket.connect("127.0.0.1", port)
    if c then c:close() end
    return c ~= nil
  end, 10, 0.1) then
    return srv
  end
  M.stop(srv)
  error("openssl s_server did not start")
end

--- stop(srv): ends a server start() made (nil is fine).
function M.stop(srv)
  if srv and srv.pid and fs.alive(srv.pid) then os.execute("kill " .. srv.pid) end
end

return M
