--- A session's interactive terminal (spec 5.4): `client:session_attach`
-- gives a Terminal whose binary messages are terminal bytes both ways and
-- whose text messages are JSON control ({"type":"resize"} from here,
-- {"type":"exit","exit_code":N} or {"type":"detached"} from the server).
-- The C core (csrc/core/ws_client.c: libcurl's connection, RFC 6455 from
-- csrc/core/ws/, on the shared event loop) owns the connection and its
-- bounded queues; this module decodes the control messages (cjson), turns
-- failures into unsandbox.Error, and adds `session_shell`, the
-- non-interactive form, and the detach-key filter `un session attach` uses.
-- Waiting on a terminal yields inside a task, as every call does, and
-- blocks elsewhere.
-- Internal module; its methods are documented as the Client's and the
-- Terminal's.
-- @classmod Client
local compat = require "unsandbox.compat"
local cjson = require "cjson.safe"
local check = require "unsandbox.check"
local core = require "unsandbox.core"
local Error = require "unsandbox.errors"
local observe = require "unsandbox.observe"

local M = {}

local Terminal = core.Terminal
local MAX_SIZE = core.TERMINAL_MAX_SIZE

-- What a refused upgrade means: the client reads only the head of a
-- refused reply (its JSON body is not waited for), so the message says it
-- here.
local REFUSED = {
  [400] = "bad terminal handshake", [401] = "authentication failed (key, secret or clock)",
  [403] = "forbidden", [404] = "no such session (or not one of this key)",
  [409] = "the session is frozen", [426] = "the server wants another WebSocket version",
}

local function error_of(kind, msg, status, close_code)
  if status and status > 0 then
    return Error.new { kind = "http", status = status,
                       message = (REFUSED[status] or "terminal refused") .. " (" .. msg .. ")" }
  end
  return Error.new { kind = kind, message = msg, close_code = close_code ~= 0 and close_code or nil }
end

local function seconds_to_ms(fname, arg, v, default_ms)
  if v == nil then return default_ms end
  check.positive(fname, arg, v)
  return math.max(1, math.ceil(v * 1000))
end

-- One control message as the event read() returns; unknown types are
-- passed on as they are (a newer server's), malformed JSON is an error.
function M.event_of(text)
  local doc = cjson.decode(text)
  if type(doc) ~= "table" or type(doc.type) ~= "string" then
    return nil, Error.new { kind = "protocol", message = "malformed terminal control message" }
  end
  if doc.type == "exit" then
    local code = compat.tointeger(doc.exit_code)
    if doc.exit_code ~= nil and not code then
      return nil, Error.new { kind = "protocol", message = "exit message with a bad exit_code" }
    end
    return { type = "exit", exit_code = code }
  end
  if doc.type == "detached" then return { type = "detached" } end
  local ev = {}
  for k, v in pairs(doc) do if v ~= cjson.null then ev[k] = v end end
  return ev
end

-- The next queued item without waiting: output (string), a control event
-- (table), or nil, and then ended: false (open), true (closed normally)
-- or an Error.
function M.take(t)
  local data, text = t:_next()
  if data then
    if not text then return data end
    return M.event_of(data)
  end
  local ended, kind, msg, code = t:_ended()
  if ended == nil then return nil, error_of(kind, msg, nil, code) end
  return nil, ended
end

-- The WebSocket handshake: one exchange, reported to the hooks like any
-- other (status 101 when the upgrade was accepted, the refusal's status
-- otherwise; no request id or byte counts) and
-- counted by the call's meter.
local function handshake(client, id, copts)
  local t0 = core.monotonic_us()
  local t, kind, msg, status = core.terminal_open(client, id, copts)
  local ms = (core.monotonic_us() - t0) / 1000
  local refused = not t and status and status > 0
  local resp = (t or refused) and { status = t and 101 or status, timing = { total_ms = ms } } or nil
  local meter = observe.current()
  if meter then meter:add { total_ms = ms } end
  observe.report(client:_state(), "GET", "/sessions/" .. id .. "/shell", 1, nil, resp,
    not resp and kind or nil, { timing = { total_ms = ms } })
  return t, kind, msg, status
end

local ATTACH_OPTIONS = { connect_timeout = true, max_input = true, cols = true, rows = true,
                         debug = true }

local function attach(client, fname, id, opts)
  check.id(fname, "id", id)
  opts = check.options(fname, opts, ATTACH_OPTIONS)
  local copts = { connect_timeout = seconds_to_ms(fname, "connect_timeout", opts.connect_timeout),
                  max_input = check.int_range(fname, "max_input", opts.max_input, 1, 64 * 1024 * 1024),
                  debug = opts.debug and true or nil }
  local cols = check.int_range(fname, "cols", opts.cols, 1, MAX_SIZE)
  local rows = check.int_range(fname, "rows", opts.rows, 1, MAX_SIZE)
  if (cols == nil) ~= (rows == nil) then check.fail(fname, "opts", "cols and rows go together") end
  local t, kind, msg, status = handshake(client, id, copts)
  if not t then return nil, error_of(kind, msg, status) end
  if cols then
    local ok, err = t:resize(cols, rows)
    if not ok then t:close(0); return nil, err end
  end
  return t
end

local SHELL_OPTIONS = { connect_timeout = true, max_input = true, cols = true, rows = true,
                        timeout = true, max_output = true }

-- Reads until the exit event: {output, exit_code} or nil, Error.
local function collect(t, timeout_s, max_output)
  local parts, size = {}, 0
  local deadline = core.monotonic_us() + timeout_s * 1e6
  while true do
    local left = (deadline - core.monotonic_us()) / 1e6
    if left <= 0 then return nil, Error.new { kind = "timeout", message =
      "the shell did not exit within " .. timeout_s .. " s" } end
    local item, err = t:read(left)
    if item == nil then
      return nil, err or Error.new { kind = "protocol", message = "the terminal closed before the shell exited" }
    end
    if type(item) == "string" then
      size = size + #item
      if size > max_output then return nil, Error.new { kind = "validation", message =
        "terminal output over max_output (" .. max_output .. " bytes)" } end
      parts[#parts + 1] = item
    elseif item.type == "exit" then
      return { output = table.concat(parts), exit_code = item.exit_code }
    elseif item.type == "detached" then
      return nil, Error.new { kind = "protocol", message = "the terminal was detached before the shell exited" }
    end
  end
end

function M.install(Client)
  --- A session's terminal
  -- @section terminal

  --- Attaches to a session's shell: a WebSocket whose binary messages
  -- are the bytes of a shell on a pseudo-terminal, both ways. Closing the
  -- Terminal ends that shell; the session stays.
  -- @tparam string id the session's id
  -- @tparam[opt] table opts
  -- @tparam[opt] number opts.connect_timeout seconds (default the client's)
  -- @tparam[opt] integer opts.max_input bytes of input that may wait to be
  -- written (default 256 KiB)
  -- @tparam[opt] integer opts.cols the initial width, 1..1000 (with rows;
  -- the server starts at 80x24)
  -- @tparam[opt] integer opts.rows the initial height, 1..1000
  -- @tparam[opt] boolean opts.debug libcurl's log of the connection on
  -- stderr (resolving, connecting, TLS)
  -- @treturn[1] Terminal
  -- @return[2] nil
  -- @treturn[2] Error http 401, 404 (no such session) or 409 (frozen) when the
  -- server refuses it; transport, timeout
  -- @raise id not an id, cols without rows, a value out of range
  function Client:session_attach(id, opts)
    return attach(self, "session_attach", id, opts)
  end

  -- input sent to the open Terminal t, then what it prints collected
  local function send_collect(t, input, timeout, max_output)
    local ok, serr = t:send(input)
    if not ok then return nil, serr end
    return collect(t, timeout, max_output)
  end

  --- Runs input in a session's shell over its terminal and collects what
  -- it prints until the shell exits: the non-interactive form of
  -- `session_attach`. The input should end the shell ("...; exit\n").
  -- @tparam string id the session's id
  -- @tparam string input bytes typed into the shell
  -- @tparam[opt] table opts those of `session_attach` (but debug), and
  -- `timeout` (s, default 60: the whole exchange), `max_output` (bytes,
  -- default 8 MiB)
  -- @treturn[1] table `{output = "...", exit_code = N}` (output: what the
  -- terminal showed, echo included)
  -- @return[2] nil
  -- @treturn[2] Error as `session_attach`; timeout (the shell did not exit in
  -- time), validation (more than max_output), protocol (the terminal
  -- closed or was detached before the shell exited)
  -- @raise input not a string, an unknown option
  function Client:session_shell(id, input, opts)
    check.type("session_shell", "input", input, "string")
    opts = check.options("session_shell", opts, SHELL_OPTIONS)
    local timeout = opts.timeout or 60
    check.positive("session_shell", "timeout", timeout)
    local max_output = check.int_range("session_shell", "max_output", opts.max_output, 1,
                                       1024 * 1024 * 1024) or 8 * 1024 * 1024
    local t, err = attach(self, "session_shell", id, { connect_timeout = opts.connect_timeout,
      max_input = opts.max_input, cols = opts.cols, rows = opts.rows })
    if not t then return nil, err end
    return compat.closing({ t, n = 1 }, send_collect, t, input, timeout, max_output)
  end
end

--- A Terminal: the live connection to a session's shell, from
-- `Client:session_attach`. Closed by `t:close()`, a `<close>` variable
-- or the collector (the shell then ends). Inside a task its waits yield.
-- @type Terminal

--- Queues keyboard bytes to send.
-- @tparam string bytes
-- @treturn[1] boolean true
-- @return[2] nil
-- @treturn[2] Error when the terminal has ended, or "terminal input queue full"
-- when more than max_input bytes wait to be written
-- @raise bytes not a string
function Terminal:send(bytes)
  check.type("send", "bytes", bytes, "string")
  local ok, kind, msg = self:_send(bytes)
  if not ok then return nil, Error.new { kind = kind, message = msg } end
  return true
end

--- Sets the remote terminal's size.
-- @tparam integer cols 1..1000
-- @tparam integer rows 1..1000
-- @treturn[1] boolean true
-- @return[2] nil
-- @treturn[2] Error when the terminal has ended
-- @raise a size out of range
function Terminal:resize(cols, rows)
  cols = check.int_range("resize", "cols", check.type("resize", "cols", cols, "number"), 1, MAX_SIZE)
  rows = check.int_range("resize", "rows", check.type("resize", "rows", rows, "number"), 1, MAX_SIZE)
  local ok, kind, msg = self:_resize(cols, rows)
  if not ok then return nil, Error.new { kind = kind, message = msg } end
  return true
end

--- The next piece of output, or a control event, waiting for it.
-- @tparam[opt] number timeout seconds at most (default: no limit)
-- @treturn[1] string a piece of output
-- @treturn[2] table a control event: `{type = "exit", exit_code = N}`,
-- `{type = "detached"}`, or a newer server's own (passed on as it is)
-- @return[3] nil when the terminal has closed normally
-- @return[4] nil
-- @treturn[4] Error timeout (nothing came within timeout), protocol (a
-- malformed control message), transport (the connection failed)
-- @raise timeout not a positive number
function Terminal:read(timeout)
  local ms = timeout ~= nil and seconds_to_ms("read", "timeout", timeout) or nil
  local deadline = ms and core.monotonic_us() / 1000 + ms
  while true do
    local item, ended = M.take(self)
    if item ~= nil then return item end
    if ended == true then return nil end
    if ended then return nil, ended end
    local left = deadline and deadline - core.monotonic_us() / 1000 or 1000
    if left <= 0 then
      return nil, Error.new { kind = "timeout", message = "nothing to read from the terminal within " ..
        timeout .. " s" }
    end
    local ok, kind, msg = self:_service(math.max(1, math.floor(math.min(left, 1000))))
    if ok == nil then return nil, Error.new { kind = kind, message = msg } end
  end
end

--- How much input waits to be written to the connection.
-- @treturn integer bytes
function Terminal:pending_input() return self:_pending() end

--- Closes the terminal (a close frame: the server ends the shell);
-- idempotent.
-- @function Terminal:close
-- @tparam[opt=1000] integer ms how long to wait for the server's close
-- frame, 0..60000 milliseconds

-- The detach key of `un session attach`: Ctrl-] then d detaches;
-- Ctrl-] twice sends one Ctrl-]; Ctrl-] then any other byte sends both.
-- Returns filter(bytes) -> bytes to send, detached (boolean); a Ctrl-]
-- at the end of one chunk waits for the next.
M.DETACH_KEY = "\29"

function M.detach_filter()
  local KEY, armed = M.DETACH_KEY, false
  -- what the byte after a Ctrl-] becomes: nil = detach
  local function after(b)
    if b == "d" then return nil end
    return b == KEY and KEY or KEY .. b
  end
  return function(bytes)
    local out, pos = {}, 1
    if armed and #bytes > 0 then
      armed = false
      local x = after(bytes:sub(1, 1))
      if not x then return "", true end
      out[1], pos = x, 2
    end
    while true do
      local k = bytes:find(KEY, pos, true)
      if not k then out[#out + 1] = bytes:sub(pos); break end
      out[#out + 1] = bytes:sub(pos, k - 1)
      if k == #bytes then armed = true; break end
      local x = after(bytes:sub(k + 1, k + 1))
      if not x then return table.concat(out), true end
      out[#out + 1], pos = x, k + 2
    end
    return table.concat(out), false
  end
end

return M
