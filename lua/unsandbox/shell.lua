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
-- Each returns the result {action, session_id, exit_code (nil while
-- running), stdout, running, timed_out, wait_timed_out, output_truncated,
-- session_restarted} or nil, err; the output is what arrived since the
-- previous call. opts.on_chunk streams it as it arrives.
local core = require "unsandbox.core"
local check = require "unsandbox.check"

local Shell = { __name = "unsandbox.Shell" }
Shell.__index = Shell

function Shell.new(sandbox, opts)
  opts = check.type("shell", "opts", opts, "table", true) or {}
  for k in pairs(opts) do
    if k ~= "id" then check.fail("shell", "opts", "unknown option '" .. tostring(k) .. "'") end
  end
  local id = opts.id
  if id == nil then
    id = "shell-" .. core.new_traceparent():sub(37, 52)   -- the random span id
  elseif type(id) ~= "string" or not core.mcp_valid_session_id(id) then
    check.fail("shell", "id", "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$ expected")
  end
  return setmetatable({ sandbox = sandbox, id = id }, Shell)
end

function Shell:__tostring() return "unsandbox.Shell (" .. self.id .. ")" end

local EXEC = { async = true, timeout = true, on_chunk = true, is_cancelled = true }

local function opts_of(fname, opts, allowed)
  opts = check.type(fname, "opts", opts, "table", true) or {}
  for k in pairs(opts) do
    if not allowed[k] then check.fail(fname, "opts", "unknown option '" .. tostring(k) .. "'") end
  end
  return opts
end

local function session(self, action, o)
  o.key = self.sandbox:name()
  return self.sandbox:manager():shell_session(action, self.id, o)
end

--- Runs a command in the session; async = true answers after ~0.2 s with
-- running = true (then wait or send). opts.timeout 1-30 s.
function Shell:exec(command, opts)
  opts = opts_of("exec", opts, EXEC)
  check.type("exec", "command", command, "string")
  return session(self, "exec", { command = command, async = opts.async, timeout = opts.timeout,
    on_chunk = opts.on_chunk, is_cancelled = opts.is_cancelled })
end

--- Types text into the running command's terminal (a newline appended
-- unless opts.newline == false); answers when the output goes quiet.
function Shell:send(text, opts)
  opts = opts_of("send", opts, { newline = true, timeout = true, on_chunk = true, is_cancelled = true })
  check.type("send", "text", text, "string")
  check.type("send", "newline", opts.newline, "boolean", true)
  return session(self, "input", { input = text, append_newline = opts.newline ~= false,
    timeout = opts.timeout, on_chunk = opts.on_chunk, is_cancelled = opts.is_cancelled })
end

--- Waits (1-120 s, default 30) for the running command to end.
function Shell:wait(t, opts)
  opts = opts_of("wait", opts, { on_chunk = true, is_cancelled = true })
  return session(self, "wait", { timeout = t, on_chunk = opts.on_chunk, is_cancelled = opts.is_cancelled })
end

--- Kills the shell's process group; the next exec starts a fresh shell.
function Shell:kill()
  return session(self, "kill", {})
end

return Shell
