--- unsandbox.Process: a command running in the background of a Sandbox,
-- with its stdin to write and its stdout and stderr read as they come.
--
-- The protocol's shell tool runs a command to its end (exec) or in a
-- PTY session (one stream, input through a terminal). A process with
-- separate streams and a real stdin is built on exec alone, with the
-- sandbox-side helper (helper.lua): spawn starts a supervisor that
-- leaves the exec's process group (setsid) and runs the command in a
-- process group of its own, stdin fed from pieces queued under
-- /tmp/.unsandbox/p/<id>/in (named, in order, on a FIFO), stdout and
-- stderr into files there, the exit status written when it ends. Every
-- method is one exec: write queues a piece (through the file routes when
-- it is large), read waits in the sandbox (at most 25 s per exec) until
-- the output grows and returns what is new from the offsets this handle
-- has read, wait does the same for the exit status. The state lives in
-- the runtime, so sb:process(id) in another OS process takes it up
-- again (from the first byte of output) and sb:processes() lists it.
--
-- With pty = true the process is a PTY session of the runtime (the
-- session id is the process id): programs see a terminal, stdout and
-- stderr arrive as one stream (on_stdout), input passes the terminal's
-- line discipline (a line is delivered at its newline; close_stdin sends
-- ^D), and kill sends SIGKILL (session_kill) or, for "INT", ^C.
--
-- Like every resource a Process is closed by close() or a `<close>`
-- variable: a process still running is killed and its state removed,
-- unless detach() closed the handle first. Inside a task every wait
-- yields (each exec does); outside it blocks as every call does.
--
-- Made by `Sandbox:spawn` (or taken up by `Sandbox:process`). Its fields:
-- `id`, `pid` (in the runtime), `pty`, `command`, and `exit_code` once it
-- has ended. Failures are `nil, err` as a Manager's, plus kind sandbox
-- (err.code "closed": stdin was closed; "exited": the process has ended)
-- and not_found (the runtime has no such process). Using a closed
-- Process raises "attempt to use a closed Process".
-- @classmod Process
local check = require "unsandbox.check"
local core = require "unsandbox.core"
local observe = require "unsandbox.observe"
local helper = require "unsandbox.agent.helper"

local Process = { __name = "unsandbox.Process" }
Process.__index = Process

local M = { class = Process }

local INLINE = 4000            -- stdin bytes sent inside the exec command
local PIECE = 1000000          -- larger writes: file-route pieces (§5.6 write limit)
local PTY_INPUT = 8192         -- session_input's limit (§5.5)
local WAIT_MS = 25000          -- longest wait of one exec (the tool allows 30 s)

local SIGNALS = { HUP = true, INT = true, QUIT = true, KILL = true, USR1 = true, USR2 = true,
  TERM = true, STOP = true, CONT = true, ALRM = true, WINCH = true }

local function run(self, op, args, t, fname)
  return helper.run(self.m, self.key, op, args, { timeout = t, fname = fname or op })
end

local function new(m, key, id, pty, command)
  return setmetatable({ m = m, key = key, id = id, pty = pty, command = command,
    out_off = 0, err_off = 0, ended = false }, Process)
end

local function check_env(env)
  local out = {}
  for k, v in pairs(env) do
    if type(k) ~= "string" then check.fail("spawn", "env", "variable names must be strings") end
    if type(v) ~= "string" and type(v) ~= "number" then
      check.fail("spawn", "env", "value of " .. k .. " must be a string or number")
    end
    out[k] = tostring(v)
  end
  local why, name = core.rules.env_check(out)
  if why then check.fail("spawn", "env", (name and name .. ": " or "") .. why) end
  return out
end

-- The shell line of a command (a shell line, or an argv list quoted by the
-- core) with opts.cwd and opts.env in front.
local function shell_line(command, opts, path)
  if type(command) == "table" then
    for i, a in ipairs(command) do check.type("spawn", "command[" .. i .. "]", a, "string") end
    command = check.value("spawn", "command", core.cp.shell_quote(command))
  else
    check.nonempty("spawn", "command", command)
  end
  local pre = {}
  if opts.cwd ~= nil then
    pre[#pre + 1] = "cd -- " .. core.cp.shell_quote({ path("spawn", "cwd", opts.cwd, true) }) ..
      " || exit 126"
  end
  if opts.env ~= nil then
    check.type("spawn", "env", opts.env, "table")
    local names = {}
    for k in pairs(check_env(opts.env)) do names[#names + 1] = k end
    table.sort(names)
    for _, k in ipairs(names) do
      pre[#pre + 1] = "export " .. k .. "=" .. core.cp.shell_quote({ tostring(opts.env[k]) })
    end
  end
  pre[#pre + 1] = command
  return table.concat(pre, "\n"), command
end

local SPAWN = { cwd = true, env = true, pty = true, id = true, on_stdout = true, on_stderr = true }

-- spawn(m, key, command, opts): see the Sandbox method.
function M.spawn(m, key, command, opts, path)
  opts = check.options("spawn", opts, SPAWN)
  check.type("spawn", "pty", opts.pty, "boolean", true)
  check.type("spawn", "on_stdout", opts.on_stdout, "function", true)
  check.type("spawn", "on_stderr", opts.on_stderr, "function", true)
  local id = opts.id
  if id == nil then id = "p-" .. helper.random_hex()
  elseif type(id) ~= "string" or not core.cp.mcp_valid_session_id(id) then
    check.fail("spawn", "id", "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$ expected")
  end
  local line, shown = shell_line(command, opts, path)
  if #line > helper.ARG_ROOM then
    check.fail("spawn", "command", "at most " .. helper.ARG_ROOM .. " bytes with its cwd and env")
  end
  local p = new(m, key, id, opts.pty == true, shown)
  p.on_stdout, p.on_stderr = opts.on_stdout, opts.on_stderr
  local out, err = run(p, "spawn", { id, line, p.pty and "pty" or "pipe" }, 30, "spawn")
  if not out then return nil, err end
  if p.pty then
    local r, serr = m:shell_session("exec", id, { command = line, async = true, key = key })
    if not r then
      run(p, "forget", { id }, 30)
      return nil, serr
    end
    p:_pty_output(r)
  else
    p.pid = tonumber(out:match("^%d+"))
  end
  return p
end

-- The fields of one helper info record (id pid status started kind cmd).
local function record(fields, i)
  local st = fields[i + 2]
  local running = st == "running"
  return { id = fields[i], pid = tonumber(fields[i + 1]), running = st ~= "pty" and running or nil,
    exit_code = tonumber(st), started = tonumber(fields[i + 3]), pty = fields[i + 4] == "pty",
    command = fields[i + 5] }
end

local function records(out)
  local fields = {}
  for f in out:gmatch("([^%z]*)%z") do fields[#fields + 1] = f end
  local list = {}
  for i = 1, #fields - 5, 6 do list[#list + 1] = record(fields, i) end
  return list
end

-- attach(m, key, id): the process id of this runtime, from its first byte.
function M.attach(m, key, id)
  check.type("process", "id", id, "string")
  if not core.cp.mcp_valid_session_id(id) then check.fail("process", "id", "not a process id") end
  local p = new(m, key, id, false)
  local out, err = run(p, "info", { id }, 30, "process")
  if not out then return nil, err end
  local info = records(out)[1]
  if not info then return nil, helper.fail("protocol", "process: a malformed answer") end
  p.pty, p.pid, p.command = info.pty, info.pid, info.command
  return p
end

-- list(m, key): what runs (and ran) in this runtime.
function M.list(m, key)
  local out, err = helper.run(m, key, "ps", {}, { fname = "processes" })
  if not out then return nil, err end
  local list = records(out)
  table.sort(list, function(a, b) return (a.started or 0) < (b.started or 0) end)
  return list
end

-- ----------------------------------------------------------------------
-- methods
-- ----------------------------------------------------------------------

local function open(self, fname)
  if self.closed then check.raise("attempt to use a closed Process (" .. fname .. ")") end
end

function Process:__tostring()
  return "unsandbox.Process (" .. self.id .. (self.closed and ", closed" or "") .. ")"
end

local function b64(s) return core.codec.base64_encode(s) end

-- One piece of stdin through the file routes (large writes).
local function write_piece(self, piece)
  local name = ".unsb-stdin-" .. helper.random_hex()
  local r, err = self.m:upload_file(name, piece, self.key)
  if not r then return nil, err end
  local out, werr = run(self, "write", { self.id, "@" .. name }, 30, "write")
  if not out then
    helper.run(self.m, self.key, "cleanup", { name }, { fname = "write" })
    return nil, werr
  end
  return true
end

--- Writes to the process's stdin (queued in the sandbox; the process
-- reads it at its own pace). Any size: large writes go through the file
-- routes in pieces.
-- @tparam string data
-- @treturn[1] boolean true
-- @return[2] nil
-- @treturn[2] Error sandbox with err.code "closed" (after close_stdin) or
-- "exited" (it has ended)
-- @raise data not a string
function Process:write(data)
  open(self, "write")
  check.type("write", "data", data, "string")
  if self.pty then
    for i = 1, #data, PTY_INPUT do
      local r, err = self.m:shell_session("input", self.id, { input = data:sub(i, i + PTY_INPUT - 1),
        append_newline = false, key = self.key, timeout = 1 })
      if not r then return nil, err end
      self:_pty_output(r)
    end
    return true
  end
  if #data <= INLINE then
    local out, err = run(self, "write", { self.id, b64(data) }, 30, "write")
    if not out then return nil, err end
    return true
  end
  for i = 1, #data, PIECE do
    local ok, err = write_piece(self, data:sub(i, i + PIECE - 1))
    if not ok then return nil, err end
  end
  return true
end

--- Closes the process's stdin: it reads end of file once the pieces
-- written before are consumed (a PTY process gets ^D). Idempotent.
-- @treturn[1] boolean true
-- @return[2] nil
-- @treturn[2] Error
function Process:close_stdin()
  open(self, "close_stdin")
  if self.pty then
    local r, err = self.m:shell_session("input", self.id, { input = "\4", append_newline = false,
      key = self.key, timeout = 1 })
    if not r then return nil, err end
    self:_pty_output(r)
    return true
  end
  local out, err = run(self, "close_stdin", { self.id }, 30)
  if not out then return nil, err end
  return true
end

-- Output of a PTY session answer kept for the next read.
function Process:_pty_output(r)
  if r.stdout and r.stdout ~= "" then self.pty_buf = (self.pty_buf or "") .. r.stdout end
  if r.running == false and r.exit_code ~= nil then self.exit_code = r.exit_code end
end

local function deliver(self, out, err)
  if out ~= "" and self.on_stdout then observe.outside(self.on_stdout, out) end
  if err ~= "" and self.on_stderr then observe.outside(self.on_stderr, err) end
end

-- One exec of read: waits at most ms; returns out, err, done.
local function read_once(self, ms, watch)
  local res, err = run(self, "read", { self.id, tostring(self.out_off), tostring(self.err_off),
    tostring(ms), watch }, math.ceil(ms / 1000) + 5, "read")
  if not res then return nil, err end
  local st, osz, esz, no, ne, rest = res:match("^(%S+) (%d+) (%d+) (%d+) (%d+)\n(.*)$")
  if not st then return nil, helper.fail("protocol", "read: a malformed answer") end
  no, ne = tonumber(no), tonumber(ne)
  local out, errs = rest:sub(1, no), rest:sub(no + 1, no + ne)
  self.out_off, self.err_off = self.out_off + no, self.err_off + ne
  if st ~= "-" then
    self.exit_code = tonumber(st)
    if watch ~= "-" and self.out_off >= tonumber(osz) and self.err_off >= tonumber(esz) then
      self.ended = true
    end
  end
  return out, errs
end

-- One session_wait of a PTY process: its output joins the buffer that
-- read hands out.
local function pty_poll(self, ms)
  local r, err = self.m:shell_session("wait", self.id, { timeout = math.max(1, math.ceil(ms / 1000)),
    key = self.key })
  if not r then return nil, err end
  self:_pty_output(r)
  if r.running == false then self.exit_code = r.exit_code or self.exit_code end
  return true
end

local function read_pty(self, ms)
  if not self.pty_buf and self.exit_code == nil then
    local ok, err = pty_poll(self, ms)
    if not ok then return nil, err end
  end
  local s = self.pty_buf or ""
  self.pty_buf = nil
  if s == "" and self.exit_code ~= nil then self.ended = true end
  return s, ""
end

local function deadline_of(timeout)
  if timeout == nil then return nil end
  return core.loop.monotonic_ms() + math.floor(timeout * 1000)
end

local function left_ms(deadline)
  if not deadline then return WAIT_MS end
  return math.max(0, math.min(WAIT_MS, deadline - core.loop.monotonic_ms()))
end

--- The output written since the last read, once some is there.
-- on_stdout/on_stderr, when given to spawn, see the same pieces.
-- @tparam[opt] number timeout seconds at most (nil: as long as it
-- takes; 0: do not wait)
-- @treturn[1] string stdout's new bytes
-- @treturn[1] string stderr's new bytes (at least one of the two is
-- non-empty; both "" when the time ran out)
-- @return[2] nil (one value) once the process has ended and all its
-- output was read: then `p.exit_code` is its status
-- @return[3] nil
-- @treturn[3] Error
-- @raise a negative timeout
function Process:read(timeout)
  open(self, "read")
  check.positive("read", "timeout", timeout ~= 0 and timeout or nil)
  local deadline = deadline_of(timeout)
  while true do
    if self.ended then return nil end
    local ms = left_ms(deadline)
    local out, err
    if self.pty then out, err = read_pty(self, ms)
    else out, err = read_once(self, ms, "oe") end
    if not out then return nil, err end
    if out ~= "" or err ~= "" then
      deliver(self, out, err)
      return out, err
    end
    if self.ended then return nil end
    if deadline and core.loop.monotonic_ms() >= deadline then return "", "" end
  end
end

--- Iterates over the output as it comes, until the process has ended
-- (or timeout seconds in all have passed: the loop just ends).
-- @tparam[opt] number timeout seconds in all
-- @treturn function an iterator of `channel ("stdout" or "stderr"),
-- chunk`; a failure raises its Error from the iterator
-- @usage for channel, chunk in p:output() do io.write(chunk) end
function Process:output(timeout)
  open(self, "output")
  local deadline = deadline_of(timeout)
  local queue = {}
  return function()
    while #queue == 0 do
      local left = deadline and (deadline - core.loop.monotonic_ms()) / 1000
      if left and left <= 0 then return nil end
      local out, err = self:read(left)
      if out == nil then
        if err then error(err, 0) end
        return nil
      end
      if out ~= "" then queue[#queue + 1] = { "stdout", out } end
      if err ~= "" then queue[#queue + 1] = { "stderr", err } end
    end
    local item = table.remove(queue, 1)
    return item[1], item[2]
  end
end

--- Iterates over the output as lines (without "\n"), per channel; a
-- last line without "\n" comes at the end.
-- @tparam[opt] number timeout seconds in all
-- @treturn function an iterator of `channel, line`; a failure raises
function Process:lines(timeout)
  local chunks = self:output(timeout)
  local pending, ready = { stdout = "", stderr = "" }, {}
  local finished = false
  return function()
    while #ready == 0 and not finished do
      local channel, chunk = chunks()
      if not channel then
        finished = true
        for _, ch in ipairs { "stdout", "stderr" } do
          if pending[ch] ~= "" then ready[#ready + 1] = { ch, pending[ch] } end
        end
      else
        local text = pending[channel] .. chunk
        for line in text:gmatch("([^\n]*)\n") do ready[#ready + 1] = { channel, line } end
        pending[channel] = text:match("[^\n]*$")
      end
    end
    local item = table.remove(ready, 1)
    if item then return item[1], item[2] end
    return nil
  end
end

--- Waits for the process to end. With on_stdout/on_stderr the output
-- goes to them meanwhile; without, it stays to be read.
-- @tparam[opt] number timeout seconds at most (nil: as long as it takes)
-- @treturn[1] integer its exit code: the command's status, or -N when
-- `kill` ended it by signal N (128 + N for a signal from elsewhere)
-- @return[2] nil
-- @treturn[2] Error timeout when the time ran out (the process goes on)
-- @raise timeout not a positive number
function Process:wait(timeout)
  open(self, "wait")
  check.positive("wait", "timeout", timeout)
  local deadline = deadline_of(timeout)
  local pump = self.on_stdout or self.on_stderr
  while not (self.exit_code ~= nil and (not pump or self.ended)) do
    if deadline and core.loop.monotonic_ms() >= deadline then
      return nil, helper.fail("timeout", "wait: process " .. self.id .. " still runs after " ..
        timeout .. " s")
    end
    local ms = left_ms(deadline)
    local out, err
    if self.pty then
      out, err = pty_poll(self, ms)
      if out and (self.on_stdout or self.on_stderr) then out, err = read_pty(self, 0) end
      if out == true then out, err = "", "" end
    elseif pump then out, err = read_once(self, ms, "oe")
    else out, err = read_once(self, ms, "-") end
    if not out then return nil, err end
    deliver(self, out, err)
    if self.pty and self.exit_code ~= nil then break end
  end
  return self.exit_code
end

--- Sends a signal to the process's group.
-- @tparam[opt="KILL"] string signal "KILL", "TERM", "INT", "HUP", "QUIT",
-- "USR1", "USR2", "STOP", "CONT", "ALRM", "WINCH", with or without "SIG";
-- a PTY process takes "KILL" (session_kill: a fresh shell) and "INT"
-- (^C) only
-- @treturn[1] boolean true
-- @return[2] nil
-- @treturn[2] Error sandbox with err.code "exited" when it had ended already
-- @raise an unknown signal
function Process:kill(signal)
  open(self, "kill")
  signal = check.type("kill", "signal", signal, "string", true) or "KILL"
  signal = signal:upper():gsub("^SIG", "")
  if not SIGNALS[signal] then check.fail("kill", "signal", "unknown signal '" .. signal .. "'") end
  if self.pty then
    if signal ~= "KILL" and signal ~= "INT" then
      check.fail("kill", "signal", "a PTY process takes KILL or INT")
    end
    local r, err
    if signal == "KILL" then r, err = self.m:shell_session("kill", self.id, { key = self.key })
    else r, err = self.m:shell_session("input", self.id, { input = "\3", append_newline = false,
      key = self.key, timeout = 1 }) end
    if not r then return nil, err end
    self:_pty_output(r)
    return true
  end
  local out, err = run(self, "kill", { self.id, signal, "group" }, 30)
  if not out then return nil, err end
  return true
end

--- The process's record in the runtime.
-- @treturn[1] table `{id, pid, running, exit_code, started (epoch s),
-- pty, command}`
-- @return[2] nil
-- @treturn[2] Error not_found: the runtime has no such process
function Process:status()
  open(self, "status")
  local out, err = run(self, "info", { self.id }, 30, "status")
  if not out then return nil, err end
  return records(out)[1]
end

--- Closes the handle and leaves the process running (and its state, for
-- `Sandbox:process` to take up again). Idempotent.
-- @treturn boolean true
function Process:detach()
  self.closed, self.detached = true, true
  return true
end

--- Kills the process if it still runs, removes its state from the
-- runtime and closes the handle; nothing after detach(). Idempotent;
-- `<close>` and `unsandbox.with` call it (a failure then raises, unless
-- the block already ends by an error).
-- @treturn[1] boolean true
-- @return[2] nil
-- @treturn[2] Error (the handle is closed either way)
function Process:close()
  if self.closed then return true end
  self.closed = true
  if self.pty and self.exit_code == nil then
    local r, err = self.m:shell_session("kill", self.id, { key = self.key })
    if not r and err.rpc_code ~= -32602 then return nil, err end
  end
  local out, err = helper.run(self.m, self.key, "forget", { self.id }, { fname = "close" })
  if not out then return nil, err end
  return true
end

-- __close(p, err): a failed close raises, unless the block already ends
-- by an error (which must not be hidden).
function Process:__close(block_err)
  local ok, err = self:close()
  if not ok and block_err == nil then error(err, 0) end
end

return M
