-- An HTTP/2 origin on loopback for the specs: nghttpx (Debian's
-- nghttp2-proxy) terminating TLS with a self-signed certificate
-- (tls_server.make_cert) and speaking HTTP/2 (ALPN h2) to the client, in
-- front of one of unsandboxd's HTTP/1.1 ports. The client then sees what
-- a real HTTP/2 service is to it: one TLS connection that multiplexes its
-- requests. Stopped by pid (the master; its worker ends with it).
local fs = require "spec.helpers.fs"
local socket = require "socket"
local wait = require "spec.helpers.wait"

local M = {}
local q = fs.quote

local function free_port()
  local s = assert(socket.bind("127.0.0.1", 0))
  local _, port = s:getsockname()
  s:close()
  return tonumber(port)
end

--- start(pem, key, backend_port, log) -> {port =, pid =, url =} once it
-- accepts connections (a bounded wait: 10 s).
function M.start(pem, key, backend_port, log)
  local port = free_port()
  local p = io.popen(string.format(
    "nghttpx --conf=/dev/null --single-thread --no-ocsp --frontend='127.0.0.1,%d' " ..
    "--backend='127.0.0.1,%d' --errorlog-file=%s %s %s </dev/null >/dev/null 2>&1 & echo $!",
    port, backend_port, q(log), q(key), q(pem)))
  local proxy = { port = port, pid = tonumber(p:read("*l")), url = "https://127.0.0.1:" .. port }
  p:close()
  -- ready: it accepts a connection (or it is gone: then it never will)
  local up = wait.eventually(function()
    local c = socket.connect("127.0.0.1", port)
    if c then c:close(); return "up" end
    return not fs.alive(proxy.pid) and "gone"
  end, 10, 0.1)
  if up == "up" then return proxy end
  M.stop(proxy)
  error("nghttpx did not start: " .. (fs.read(log) or ""))
end

--- stop(proxy): ends a proxy start() made (nil is fine), waiting (bounded)
-- for it to go.
function M.stop(proxy)
  if not (proxy and proxy.pid and fs.alive(proxy.pid)) then return end
  os.execute("kill " .. proxy.pid)
  if wait.eventually(function() return not fs.alive(proxy.pid) end, 5, 0.1) then return end
  os.execute("kill -9 " .. proxy.pid .. " 2>/dev/null")
end

return M
