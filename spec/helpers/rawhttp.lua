-- Raw HTTP/1.1 over luasocket for specs that must control every byte a
-- client sends (trickles, half-open sockets, bodies larger than memory)
-- or read a reply as it arrives (streams). Only ever talks to 127.0.0.1.
local socket = require "socket"
local core = require "unsandbox.core"

local M = {}

-- A connected socket to the server's port with a timeout in seconds.
function M.connect(srv, timeout)
  local s = assert(socket.tcp())
  s:settimeout(timeout or 10)
  assert(s:connect("127.0.0.1", srv.port))
  return s
end

-- The auth headers of the execution API for method, path and the exact
-- body bytes that are signed ("" for a streamed body).
function M.signed(srv, method, path, body, extra)
  local ts = tostring(core.now())
  local h = {
    ["Authorization"] = "Bearer " .. srv.public_key,
    ["X-Timestamp"] = ts,
    ["X-Signature"] = core.sign(srv.secret_key, ts, method, path, body or ""),
  }
  for k, v in pairs(extra or {}) do h[k] = v end
  return h
end

-- The request line and headers, ending with the blank line.
function M.head(method, path, headers)
  local lines = { method .. " " .. path .. " HTTP/1.1", "Host: 127.0.0.1" }
  for k, v in pairs(headers or {}) do lines[#lines + 1] = k .. ": " .. v end
  return table.concat(lines, "\r\n") .. "\r\n\r\n"
end

-- Reads the status line and headers: status, headers (lower-case names),
-- or nil and the socket error.
function M.read_head(s)
  local line, err = s:receive("*l")
  if not line then return nil, err end
  local status = tonumber(line:match("^HTTP/1%.%d (%d+)"))
  local h = {}
  for _ = 1, 200 do
    local l = s:receive("*l")
    if not l or l == "" then break end
    local k, v = l:match("^([^:]+):%s*(.*)$")
    if k then h[k:lower()] = v end
  end
  return status, h
end

-- Reads one chunk of a chunked body: its bytes, "" at the end, or nil.
function M.read_chunk(s)
  local line = s:receive("*l")
  local size = line and tonumber(line:match("^(%x+)"), 16)
  if not size then return nil end
  if size == 0 then
    s:receive("*l")
    return ""
  end
  local data = s:receive(size)
  s:receive("*l")
  return data
end

-- Reads a whole response: status, headers, body (chunked decoded).
function M.read_response(s)
  local status, h = M.read_head(s)
  if not status then return nil, h end
  local body = ""
  if h["content-length"] then
    local n = tonumber(h["content-length"])
    body = n > 0 and (s:receive(n) or "") or ""
  elseif (h["transfer-encoding"] or ""):lower():find("chunked", 1, true) then
    local parts = {}
    for _ = 1, 100000 do
      local c = M.read_chunk(s)
      if not c or c == "" then break end
      parts[#parts + 1] = c
    end
    body = table.concat(parts)
  end
  return status, h, body
end

-- Sends one signed request of the execution API with its body (a string,
-- or nil) on a fresh connection and returns the socket without reading:
-- two of them sent back to back race inside the server. Read the answer
-- with M.read_response.
function M.send(srv, method, path, body, timeout)
  local s = M.connect(srv, timeout)
  local h = M.signed(srv, method, path, body or "")
  h["Content-Length"] = tostring(#(body or ""))
  h["Connection"] = "close"
  assert(s:send(M.head(method, path, h) .. (body or "")))
  return s
end

-- Whether the server closed s, without blocking. It may consume a byte
-- of a reply: use it on sockets whose replies do not matter.
function M.closed(s)
  s:settimeout(0)
  local data, err = s:receive(1)
  if data then return false end
  return err == "closed"
end

return M
