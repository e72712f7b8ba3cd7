-- A TCP listener on 127.0.0.1 that answers nothing and counts the
-- connections made to it: a client pointed at it proves "no request was
-- sent" (the count stays 0) without a server. Connections are accepted
-- (and closed) only when counted, so a client that did connect sees its
-- request unanswered until its own timeout.
local socket = require "socket"

local M = {}

function M.start()
  local srv = assert(socket.bind("127.0.0.1", 0))
  local _, port = srv:getsockname()
  local l = { url = "http://127.0.0.1:" .. port, port = tonumber(port), seen = 0 }
  -- The connections that reached the listener so far.
  function l.count()
    srv:settimeout(0)
    for _ = 1, 1000 do
      local c = srv:accept()
      if not c then break end
      l.seen = l.seen + 1
      c:close()
    end
    return l.seen
  end
  function l.close() srv:close() end
  return l
end

return M
