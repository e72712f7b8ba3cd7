--- A PTY shell session of a Sandbox (spec §5.5 session_*): one bash on a
-- pseudo-terminal inside the runtime, kept between calls, so `cd`,
-- variables and interactive programs (read, python3 -i) carry over.
--
--   local sh = sb:shell()            -- {id = "shell-<hex>"} or {id = "mine"}
--   sh:exec("python3 -i", {async = true})
--   sh:send("print(6 * 7)")          -- session_input (a newline appended)
--   sh:wait(5)                       -- session_wait
--   sh:kill()                        -- session_kill: a fresh shell
--
--   sh:close()                       -- session_kill, and the Shell is closed
--
-- Each returns the result {action, session_id, exit_code (nil while
-- running), stdout, running, timed_out, wait_timed_out, output_truncated,
-- session_restarted} or nil, err; the output is what arrived since the
-- previous call. opts.on_chunk streams it as it arrives.
--
-- Like every resource, a Shell is closed by close() or a `<close>`
-- variable (`local sh <close> = sb:shell()`): the session's processes are
-- killed (session_kill), unless sh:detach() was called first, which
-- closes the object and leaves the session running, for
-- sb:shell{id = sh.id} to take up again. Using a closed Shell raises
-- "attempt to use a closed Shell".
--
-- Its fields: `id` (the session's id) and `sandbox`. Failures are the
-- Manager's (`Manager:shell_session`): kind rpc with err.rpc_code -32602
-- (no such session, for send and wait before any exec) or -32001 (every
-- PTY session of the runtime busy), and the others of a Manager's call.
-- @classmod Shell
local core = require "unsandbox.core"
local check = require "unsandbox.check"

local Shell = { __name = "unsandbox.Shell" }
Shell.__index = Shell

-- Shell.new(sandbox, opts): what Sandbox:shell returns.
function Shell.new(sandbox, opts)
  opts = check.options("shell", opts, { id = true })
  local id = opts.id
  if id == nil then
    id = "shell-" .. core.trace.new_traceparent():sub(37, 52)   -- the random span id
  elseif type(id) ~= "string" or not core.cp.mcp_valid_session_id(id) then
    check.fail("shell", "id", "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$ expected")
  end
  -- given an id, the session may exist already (made by an earlier Shell)
  return setmetatable({ sandbox = sandbox, id = id, used = opts.id ~= nil }, Shell)
end

function Shell:__tostring()
  return "unsandbox.Shell (" .. self.id .. (self.closed and ", closed" or "") .. ")"
end

local EXEC = { async = true, timeout = true, on_chunk = true, is_cancelled = true }

local function opts_of(fname, opts, allowed)
  return check.options(fname, opts, allowed)
end

local function session(self, action, o)
  if self.closed then check.raise("attempt to use a closed Shell") end
  o.key = self.sandbox:name()
  self.used = true
  return self.sandbox:manager():shell_session(action, self.id, o)
end

--- Runs a command in the session (session_exec).
-- @tparam string command a shell line, at most 8192 bytes
-- @tparam[opt] table opts `async` (true: answer after ~0.2 s with
-- running = true; then `wait` or `send`), `timeout` (1..30 s, default 30),
-- `on_chunk(channel, chunk, sequence)` (streams the output as it comes),
-- `is_cancelled()`
-- @treturn[1] table the session's answer: `{action, session_id,
-- exit_code (nil while running), stdout, running, timed_out,
-- wait_timed_out, output_truncated, session_restarted}`, the output
-- since the previous call
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
-- @raise command not a string, an unknown option, a closed Shell
function Shell:exec(command, opts)
  opts = opts_of("exec", opts, EXEC)
  check.type("exec", "command", command, "string")
  return session(self, "exec", { command = command, async = opts.async, timeout = opts.timeout,
    on_chunk = opts.on_chunk, is_cancelled = opts.is_cancelled })
end

--- Types text into the running command's terminal (session_input);
-- answers when the output goes quiet.
-- @tparam string text at most 8192 bytes
-- @tparam[opt] table opts `newline` (false: no "\n" appended), `timeout`,
-- `on_chunk`, `is_cancelled`
-- @treturn[1] table the session's answer: `{action, session_id,
-- exit_code (nil while running), stdout, running, timed_out,
-- wait_timed_out, output_truncated, session_restarted}`, the output
-- since the previous call
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
-- @raise text not a string, a closed Shell
function Shell:send(text, opts)
  opts = opts_of("send", opts, { newline = true, timeout = true, on_chunk = true, is_cancelled = true })
  check.type("send", "text", text, "string")
  check.type("send", "newline", opts.newline, "boolean", true)
  return session(self, "input", { input = text, append_newline = opts.newline ~= false,
    timeout = opts.timeout, on_chunk = opts.on_chunk, is_cancelled = opts.is_cancelled })
end

--- Waits for the running command to end (session_wait).
-- @tparam[opt=30] integer t seconds, 1..120
-- @tparam[opt] table opts `on_chunk`, `is_cancelled`
-- @treturn[1] table the session's answer: `{action, session_id,
-- exit_code (nil while running), stdout, running, timed_out,
-- wait_timed_out, output_truncated, session_restarted}`, the output
-- since the previous call
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error (the answer's wait_timed_out says the command still runs)
-- @raise a closed Shell
function Shell:wait(t, opts)
  opts = opts_of("wait", opts, { on_chunk = true, is_cancelled = true })
  return session(self, "wait", { timeout = t, on_chunk = opts.on_chunk, is_cancelled = opts.is_cancelled })
end

--- Kills the shell's process group (session_kill); the next exec starts
-- a fresh shell.
-- @treturn[1] table the session's answer: `{action, session_id,
-- exit_code (nil while running), stdout, running, timed_out,
-- wait_timed_out, output_truncated, session_restarted}`, the output
-- since the previous call
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
-- @raise a closed Shell
function Shell:kill()
  return session(self, "kill", {})
end

--- Closes the Shell and leaves its session running in the runtime (take
-- it up again with `sb:shell{id = sh.id}`). Idempotent.
-- @treturn boolean true
function Shell:detach()
  self.closed = true
  return true
end

-- session_kill's -32602: the session does not exist (the id is valid by
-- construction), so there is nothing to kill.
local NO_SESSION = -32602

--- Kills the session's processes (session_kill) and closes the Shell;
-- nothing is sent for a session this Shell never started, or after
-- detach(). Idempotent; `<close>` and `unsandbox.with` call it (a failure
-- then raises, unless the block already ends by an error).
-- @treturn[1] boolean true
-- @return[2] nil
-- @treturn[2] Error (the Shell is closed either way)
function Shell:close()
  if self.closed then return true end
  local used = self.used
  local r, err = true, nil
  if used then r, err = session(self, "kill", {}) end
  self.closed = true
  if not r and err.rpc_code == NO_SESSION then return true end
  if not r then return nil, err end
  return true
end

-- __close(sh, err): a failed kill raises, unless the block already ends
-- by an error (which must not be hidden).
function Shell:__close(block_err)
  local ok, err = self:close()
  if not ok and block_err == nil then error(err, 0) end
end

return Shell
