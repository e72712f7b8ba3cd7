-- The specs' one way to wait. A spec never sleeps for time to pass: it
-- waits for a condition (a file written, a process gone, a counter
-- reached) with eventually(), whose bound only tells "late" from "never",
-- so a loaded machine makes it slower, never wrong. Where time itself is
-- the thing under test (an expiry, a TTL), the spec waits for what the
-- passing time causes, or runs the program under faketime.
local socket = require "socket"

local M = {}

M.STEP = 0.05          -- seconds between two looks

-- The pause between two looks (the one sleep of the specs).
function M.sleep(seconds)
  socket.sleep(seconds)
end

-- Seconds since some fixed point (for measuring, never for deciding).
function M.now()
  return socket.gettime()
end

-- Calls pred() until it returns a true value or `seconds` (default 10)
-- have passed, looking every `step` seconds (default STEP); returns
-- pred's last value (the true one, or what it said at the end).
function M.eventually(pred, seconds, step)
  local deadline = socket.gettime() + (seconds or 10)
  local v = pred()
  while not v and socket.gettime() < deadline do
    socket.sleep(step or M.STEP)
    v = pred()
  end
  return v
end

return M
