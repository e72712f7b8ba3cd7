--- Seeing what the library does (issue 16): the request hook, the debug
-- lines, and the timing of a whole call.
--
-- After every HTTP exchange of either client, the request path (api.lua,
-- cpapi.lua) builds one event {method, path, status, request_id,
-- traceparent, ms, bytes_out, bytes_in, attempt, error_kind} and hands it
-- to: the global hook (unsandbox.on_request), the client's or Manager's
-- own hook, and the debug printer (UNSANDBOX_DEBUG=1, `un -v`). An event
-- never holds a header value other than the traceparent the client made,
-- a key, a body or a query string (the path is cut at '?': queries carry
-- locators and tickets). A hook that raises never breaks the call: the
-- error is reported once per hook on stderr. With no hook and no debug,
-- no event is built at all.
--
-- A meter sums the exchanges of one call (a job's submission and polls,
-- retries) into the `timing` a result or an error carries. Internal module.
local core = require "unsandbox.core"

local M = {}

local global_hook
local debug_on = false
local reported = setmetatable({}, { __mode = "k" })   -- hooks whose failure was reported

local function truthy_env(v)
  return v ~= nil and v ~= "" and v ~= "0" and v:lower() ~= "false" and v:lower() ~= "no"
end
debug_on = truthy_env(os.getenv("UNSANDBOX_DEBUG"))

--- Sets the global hook (nil removes it); returns the previous one.
function M.set_global(fn)
  local prev = global_hook
  global_hook = fn
  return prev
end

--- Debug lines on or off; returns the previous setting.
function M.set_debug(on)
  local prev = debug_on
  debug_on = on and true or false
  return prev
end

function M.debug_enabled() return debug_on end

--- Whether an exchange of an owner with this state needs an event.
function M.active(state)
  return debug_on or global_hook ~= nil or (state ~= nil and state.on_request ~= nil)
end

-- Printable ASCII only, no blanks: a hostile server's request id cannot
-- forge or break a debug line.
local function clean(v)
  if v == nil then return "-" end
  return (tostring(v):gsub("[^%w%p]", "?"):sub(1, 200))
end

local ORDER = { "method", "path", "status", "ms", "attempt", "request_id", "traceparent",
  "bytes_out", "bytes_in", "error_kind" }

local function debug_line(ev)
  local parts = {}
  for i, k in ipairs(ORDER) do
    local v = ev[k]
    if k == "ms" and v then v = string.format("%.1f", v) end
    if v ~= nil or k ~= "error_kind" then parts[i] = k .. "=" .. clean(v) end
  end
  io.stderr:write("unsandbox: ", table.concat(parts, " "), "\n")
end

local function call(fn, ev)
  local copy = {}
  for k, v in pairs(ev) do copy[k] = v end
  local ok, err = pcall(fn, copy)
  if not ok and not reported[fn] then
    reported[fn] = true
    io.stderr:write("unsandbox: an on_request hook raised (reported once; the call went on): ",
      tostring(err), "\n")
  end
end

--- The event of one exchange: resp (a response table), or kind (a
-- failure's kind, nothing answered) and info. error_kind is that kind, or
-- "http" for an answer of status 400 and up.
function M.event(method, path, attempt, traceparent, resp, kind, info)
  local t = resp and resp.timing or info and info.timing or {}
  return {
    method = method, path = (path:match("^[^?]*")), attempt = attempt,
    traceparent = traceparent, status = resp and resp.status or nil,
    request_id = resp and resp.request_id or nil,
    error_kind = kind or (resp and resp.status >= 400 and "http") or nil,
    ms = t.total_ms, bytes_out = t.bytes_out, bytes_in = t.bytes_in,
  }
end

--- Hands ev to debug output, the global hook and the owner's hook.
function M.emit(state, ev)
  if debug_on then debug_line(ev) end
  if global_hook then call(global_hook, ev) end
  local own = state and state.on_request
  if own then call(own, ev) end
end

------------------------------------------------------------------------
-- timing of a call
------------------------------------------------------------------------

local PARTS = { "queue_ms", "resolve_ms", "connect_ms", "tls_ms", "server_ms", "transfer_ms" }

local Meter = {}
Meter.__index = Meter

--- A meter started now.
function M.meter()
  local m = setmetatable({ started = core.monotonic_us(), exchanges = 0, polls = 0,
                           poll_wait_ms = 0, retry_wait_ms = 0 }, Meter)
  for _, k in ipairs(PARTS) do m[k] = 0 end
  return m
end

--- Adds one exchange's timing (a table from the C client).
function Meter:add(t)
  if not t then return end
  self.exchanges = self.exchanges + 1
  for _, k in ipairs(PARTS) do self[k] = self[k] + (t[k] or 0) end
  if t.stream_first_byte_ms and not self.stream_first_byte_ms then
    self.stream_first_byte_ms = (core.monotonic_us() - self.started) / 1000 - t.total_ms +
      t.stream_first_byte_ms
  end
end

--- The call's timing: the parts summed over its exchanges, polls, the
-- time slept between polls and before retries, and total_ms, the wall
-- time from the start (>= the parts, the waits and the sleeps together).
function Meter:timing()
  local t = { total_ms = (core.monotonic_us() - self.started) / 1000, exchanges = self.exchanges,
              polls = self.polls, poll_wait_ms = self.poll_wait_ms,
              retry_wait_ms = self.retry_wait_ms, stream_first_byte_ms = self.stream_first_byte_ms }
  for _, k in ipairs(PARTS) do t[k] = self[k] end
  return t
end

--- A copy of one exchange's timing in the shape of a call's.
function M.single(t)
  local out = { exchanges = 1, polls = 0, poll_wait_ms = 0, retry_wait_ms = 0 }
  for _, k in ipairs(PARTS) do out[k] = t and t[k] or 0 end
  out.total_ms = t and t.total_ms or 0
  out.stream_first_byte_ms = t and t.stream_first_byte_ms
  return out
end

return M
