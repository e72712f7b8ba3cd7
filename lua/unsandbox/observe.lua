--- Seeing what the library does: the request hook, the debug lines, and
-- the timing of a whole call.
--
-- Every HTTP exchange of either client ends in exactly one event
-- {method, path, status, request_id, traceparent, ms, bytes_out,
-- bytes_in, attempt, error_kind}, built by the one request path of each
-- API (transport.lua: plain calls, MCP calls, streams, tickets) or by
-- the terminal's handshake (terminal.lua), and handed to: the global hook
-- (unsandbox.on_request), the client's or Manager's own hook, and the
-- debug printer (UNSANDBOX_DEBUG=1, `un -v`). A stream's event comes when
-- it ends, however it ends (refused at its start, finished, broken,
-- cancelled or closed early): an Exchange (M.exchange) emits it once. An
-- event never holds a header value other than the traceparent the client
-- made, a key, a body or a query string (the path is cut at '?': queries
-- carry locators and tickets). A hook that raises never breaks the call:
-- the error is reported once per hook on stderr. With no hook and no
-- debug, no event is built at all.
--
-- A meter sums the exchanges of one call (a job's submission and polls,
-- retries, the several requests of a Manager method) into the `timing` a
-- result or an error carries. The outermost public call of a coroutine
-- binds one (M.call, from wrap.lua), every exchange inside it adds to that
-- meter, and what the call returns is stamped with it. Bound per
-- coroutine and never inherited by a task: a task's calls are its own.
-- Internal module.
local core = require "unsandbox.core"
local compat = require "unsandbox.compat"
local Error = require "unsandbox.errors"

local M = {}

local global_hook
local reported = setmetatable({}, { __mode = "k" })   -- hooks whose failure was reported

local function truthy_env(v)
  return v ~= nil and v ~= "" and v ~= "0" and v:lower() ~= "false" and v:lower() ~= "no"
end
local debug_on = truthy_env(os.getenv("UNSANDBOX_DEBUG"))

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

--- The one event of an exchange that ended (see M.event), when anyone
-- looks: debug output, the global hook, the owner's hook.
function M.report(state, method, path, attempt, traceparent, resp, kind, info)
  if M.active(state) then
    M.emit(state, M.event(method, path, attempt, traceparent, resp, kind, info))
  end
end

local Exchange = { __name = "unsandbox.Exchange" }
Exchange.__index = Exchange

--- The exchange of a stream (a Transfer that Lua steps): report it with
-- ex:finish(resp, kind, info) when its result is in; closed before that
-- (the caller's block left early, its task was cancelled), it reports the
-- stream as cancelled with the time it ran. Either way exactly once.
-- meter: the call's, which the stream's timing is added to at its end.
function M.exchange(state, meter, method, path, attempt, traceparent, transfer)
  return setmetatable({ state = state, meter = meter, method = method, path = path,
    attempt = attempt, traceparent = traceparent, transfer = transfer,
    t0 = core.loop.monotonic_us() }, Exchange)
end

function Exchange:finish(resp, kind, info)
  if self.ended then return end
  self.ended = true
  if self.meter then self.meter:add(resp and resp.timing or info and info.timing) end
  M.report(self.state, self.method, self.path, self.attempt, self.traceparent, resp, kind, info)
end

function Exchange:__close()
  if self.ended then return end
  local ok, t = pcall(self.transfer.timing, self.transfer)   -- nil once the transfer is closed
  if not (ok and t) then t = { total_ms = (core.loop.monotonic_us() - self.t0) / 1000 } end
  self:finish(nil, "cancelled", { timing = t })
end

------------------------------------------------------------------------
-- timing of a call
------------------------------------------------------------------------

-- The parts of an exchange's time, summed by a meter: queue_ms,
-- resolve_ms, connect_ms, tls_ms, server_ms, transfer_ms. Written out
-- field by field below, not looped over: a meter is made, added to and
-- read on every call (in a sampling profile of list_jobs, these three
-- functions were a fifth of the facade's own Lua time).

local Meter = {}
Meter.__index = Meter

--- A meter started now.
function M.meter()
  return setmetatable({ started = core.loop.monotonic_us(), exchanges = 0, polls = 0,
                        poll_wait_ms = 0, retry_wait_ms = 0, new_connections = 0,
                        queue_ms = 0, resolve_ms = 0, connect_ms = 0, tls_ms = 0, server_ms = 0,
                        transfer_ms = 0 }, Meter)
end

--- Adds one exchange's timing (a table from the C client).
function Meter:add(t)
  if not t then return end
  self.exchanges = self.exchanges + 1
  self.new_connections = self.new_connections + (t.new_connections or 0)
  self.queue_ms = self.queue_ms + (t.queue_ms or 0)
  self.resolve_ms = self.resolve_ms + (t.resolve_ms or 0)
  self.connect_ms = self.connect_ms + (t.connect_ms or 0)
  self.tls_ms = self.tls_ms + (t.tls_ms or 0)
  self.server_ms = self.server_ms + (t.server_ms or 0)
  self.transfer_ms = self.transfer_ms + (t.transfer_ms or 0)
  if t.stream_first_byte_ms and not self.stream_first_byte_ms then
    self.stream_first_byte_ms = (core.loop.monotonic_us() - self.started) / 1000 - t.total_ms +
      t.stream_first_byte_ms
  end
end

--- The call's timing: the parts summed over its exchanges, polls, the
-- time slept between polls and before retries, the connections opened,
-- and total_ms, the wall time from the start (>= the parts, the waits and
-- the sleeps together).
function Meter:timing()
  return { total_ms = (core.loop.monotonic_us() - self.started) / 1000, exchanges = self.exchanges,
           polls = self.polls, poll_wait_ms = self.poll_wait_ms,
           retry_wait_ms = self.retry_wait_ms, new_connections = self.new_connections,
           stream_first_byte_ms = self.stream_first_byte_ms,
           queue_ms = self.queue_ms, resolve_ms = self.resolve_ms, connect_ms = self.connect_ms,
           tls_ms = self.tls_ms, server_ms = self.server_ms, transfer_ms = self.transfer_ms }
end

------------------------------------------------------------------------
-- the meter of the running call
------------------------------------------------------------------------

local bound = setmetatable({}, { __mode = "k" })   -- coroutine -> its call's meter

--- The meter of the public call the running coroutine is in, or nil.
function M.current()
  return bound[compat.running()]
end

-- What a call returns, stamped with its meter: an Error gets timing, and
-- so does a result that is a plain table (a document, a list, a result)
-- when stamp is true and the call made an exchange (an answer the client
-- gave itself, such as a cached list, has no timing to tell); objects
-- (tables with a metatable) and other values are left as they are.
local function stamped(meter, stamp, ...)
  local r, err = ...
  if r == nil and Error.is(err) then
    err.timing = meter:timing()
  elseif stamp and meter.exchanges > 0 and type(r) == "table" and getmetatable(r) == nil then
    r.timing = meter:timing()
  end
  return ...
end

--- Runs fn(...) as one public call: the outermost call of a coroutine
-- binds a meter for the exchanges made inside it (a nested public call
-- adds to the same one) and stamps what it returns (see stamped). stamp
-- false: only errors are stamped (results that are not documents, such
-- as execute_many's tables of results indexed like its input).
-- Unbinds co's meter and passes on how the call ended.
local function unbind(co, ok, ...)
  bound[co] = nil
  if not ok then error((...), 0) end
  return ...
end

function M.call(stamp, fn, ...)
  local co = compat.running()
  if bound[co] then return fn(...) end
  local meter = M.meter()
  bound[co] = meter
  return stamped(meter, stamp, unbind(co, compat.pcall(fn, ...)))
end

--- Runs fn(...) with no call's meter bound: the caller's own code that a
-- call runs (on_chunk, on_poll, on_sudo), whose library calls are calls
-- of their own, each with its own timing.
-- Binds meter for co again and passes on how the caller's code ended.
local function rebind(co, meter, ok, ...)
  bound[co] = meter
  if not ok then error((...), 0) end
  return ...
end

function M.outside(fn, ...)
  local co = compat.running()
  local meter = bound[co]
  if not meter then return fn(...) end
  bound[co] = nil
  return rebind(co, meter, compat.pcall(fn, ...))
end

--- A copy of one exchange's timing in the shape of a call's.
function M.single(t)
  local m = M.meter()
  m:add(t)
  local out = m:timing()
  out.exchanges = 1
  out.total_ms = t and t.total_ms or 0
  out.stream_first_byte_ms = t and t.stream_first_byte_ms
  return out
end

return M
