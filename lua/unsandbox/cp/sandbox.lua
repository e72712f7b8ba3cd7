--- unsandbox.Sandbox (spec §8): a named sandbox, whose name is its
-- session key on a Manager. The userdata (csrc/lua/sandbox.c) keeps its
-- Manager alive. This module gives the public table (M.class:
-- Sandbox.create/get/get_or_create) and the userdata's methods
-- (M.methods, added by cp/init.lua). `local sb <close> = Sandbox.create{...}` releases the
-- runtime when the block ends, also by an error (then a failed release
-- does not hide that error). Workspace files stay with the name.
local compat = require "unsandbox.compat"
local core = require "unsandbox.core"
local check = require "unsandbox.check"
local context = require "unsandbox.context"
local Error = require "unsandbox.errors"
local Shell = require "unsandbox.cp.shell"

local SandboxMT = {}   -- the methods of every unsandbox.Sandbox userdata
local Sandbox = {}

local default_manager
--- The Manager of Sandbox calls that name none: one from the environment.
function Sandbox.default_manager()
  if not default_manager then default_manager = require("unsandbox.cp.manager").new() end
  return default_manager
end

local function random_name()
  local tp = core.trace.new_traceparent()              -- 00-<trace>-<span>-01: random hex
  return "sandbox-" .. tp:sub(4, 15)
end

local CREATE = { name = true, template = true, manager = true, resume = true }

local function options(fname, opts, allowed)
  opts = check.options(fname, opts, allowed)
  local m = opts.manager
  if m == nil then
    m = Sandbox.default_manager()
  else
    local mt = getmetatable(m)
    if type(mt) ~= "table" or mt.__index ~= core.cp.Manager then
      check.fail(fname, "manager", "an unsandbox.Manager expected")
    end
  end
  local name = opts.name
  if name ~= nil then
    check.type(fname, "name", name, "string")
    local why = core.cp.sandbox_name_check(name)   -- the rule of core/cpids.h
    if why then check.fail(fname, "name", why) end
  end
  if opts.template ~= nil then check.nonempty(fname, "template", opts.template) end
  check.type(fname, "resume", opts.resume, "boolean", true)
  return opts, m, name
end

local function sandbox_of(m, name)
  return check.value("Sandbox", "name", core.cp.sandbox(m, name))
end

--- Sandbox.create{name=, template=, manager=}: the named sandbox's live
-- runtime if there is one (another template asked ⇒ 409), else a new one.
-- name defaults to "sandbox-<12 hex>".
function Sandbox.create(opts)
  local m, name
  opts, m, name = options("create", opts, CREATE)
  name = name or random_name()
  local sb = sandbox_of(m, name)
  local rt, err = m:lookup_runtime(name)
  if rt then
    if opts.template and opts.template ~= rt.template then
      return nil, Error.new { kind = "validation", status = 409, message = "sandbox '" .. name ..
        "' runs template '" .. tostring(rt.template) .. "', not '" .. opts.template .. "'" }
    end
    return sb
  end
  if err.status ~= 404 then return nil, err end
  rt, err = m:ensure_runtime(name, opts.template)
  if not rt then return nil, err end
  return sb
end
Sandbox.get_or_create = Sandbox.create

--- Sandbox.get{name=, resume=false, manager=}: the named sandbox's live
-- runtime; without resume, none is a 404; with resume, one is started.
function Sandbox.get(opts)
  local m, name
  opts, m, name = options("get", opts, CREATE)
  if not name then check.fail("get", "name", "a sandbox name expected") end
  local sb = sandbox_of(m, name)
  local rt, err = m:lookup_runtime(name)
  if rt then return sb end
  if not opts.resume or err.status ~= 404 then return nil, err end
  rt, err = m:ensure_runtime(name, opts.template)
  if not rt then return nil, err end
  return sb
end

------------------------------------------------------------------------
-- methods
------------------------------------------------------------------------

--- The local lease status: {sandbox_id, workspace_id, runtime_ready, ...}.
function SandboxMT:status()
  local st = self:manager():status(self:name())
  st.name = self:name()
  return st
end

--- Releases the runtime (workspace files are kept). Looks it up first
-- when the Manager holds none (a 404 propagates).
function SandboxMT:stop()
  local m, name = self:manager(), self:name()
  if not m:status(name).sandbox_id then
    local rt, err = m:lookup_runtime(name)
    if not rt then return nil, err end
  end
  return m:release_runtime(name)
end

--- Releases the runtime and closes the object; `<close>` calls this.
function SandboxMT:close()
  if not self:is_open() then return true end
  local res, err = self:stop()
  self:_mark_closed()
  if not res and err.status == 404 then return true end   -- nothing was running
  return res, err
end

-- __close(sb, err): a release failure raises, unless the block already
-- ends by an error (which must not be hidden).
function SandboxMT:_on_close(block_err)
  local ok, err = self:close()
  if not ok and block_err == nil then error(err, 0) end
end

--- run_command(command, args, t): argv POSIX-quoted and joined, run by
-- the shell tool. {exit_code (-1 if missing), stdout, stderr, timed_out,
-- output_truncated}.
function SandboxMT:run_command(cmd, args, t)
  check.nonempty("run_command", "command", cmd)
  args = check.type("run_command", "args", args, "table", true) or {}
  local argv, n = { cmd }, 0
  for _ in pairs(args) do n = n + 1 end
  if n ~= #args then check.fail("run_command", "args", "a list of strings expected") end
  for i, a in ipairs(args) do argv[i + 1] = check.type("run_command", "args[" .. i .. "]", a, "string") end
  local line = check.value("run_command", "args", core.cp.shell_quote(argv, 8192))
  local r, err = self:manager():shell(line, t, self:name())
  if not r then return nil, err end
  return { exit_code = compat.tointeger(r.exit_code) or -1, stdout = r.stdout or "",
    stderr = r.stderr or "", timed_out = r.timed_out == true, output_truncated = r.output_truncated == true }, err
end

function SandboxMT:read_file(path) return self:manager():read_file(path, nil, nil, self:name()) end
function SandboxMT:write_file(path, content) return self:manager():write_file(path, content, self:name()) end
function SandboxMT:edit_file(path, old, new) return self:manager():edit_file(path, old, new, self:name()) end

local ITEM = { path = true, content = true }

--- write_files{{path=, content=}, ...}: sequential writes; the list of
-- results, or nil, err at the first failure (earlier writes stay).
function SandboxMT:write_files(items)
  check.type("write_files", "items", items, "table")
  for i, it in ipairs(items) do
    check.options("write_files", it, ITEM, { required = true, arg = "items[" .. i .. "]",
      unknown = "exactly path and content expected, got '%s'" })
    check.type("write_files", "items[" .. i .. "].path", it.path, "string")
    check.type("write_files", "items[" .. i .. "].content", it.content, "string")
  end
  local out = {}
  for i, it in ipairs(items) do
    local r, err = self:write_file(it.path, it.content)
    if not r then return nil, err end
    out[i] = r
  end
  return out
end

function SandboxMT:checkpoint() return self:manager():checkpoint_workspace(self:name()) end
function SandboxMT:list_checkpoints() return self:manager():list_workspace_checkpoints(self:name()) end
function SandboxMT:restore(checkpoint_id, sha256)
  return self:manager():restore_workspace(checkpoint_id, sha256, self:name())
end

local last = setmetatable({}, { __mode = "k" })

--- stream(command, on_chunk, t, is_cancelled): live output; the result
-- as run_command's (+ stream_chunks).
function SandboxMT:stream(cmd, on_chunk, t, is_cancelled)
  check.type("stream", "on_chunk", on_chunk, "function")
  local r, err = self:manager():shell_stream(cmd, t, on_chunk, is_cancelled, self:name())
  if r then last[self] = r end
  return r, err
end

--- for channel, line in sb:lines(command, t) do ... end: the output as
-- lines (without their "\n"), per channel, as the command writes them.
-- A failure raises its unsandbox.Error; breaking out of the loop closes
-- the stream. sb:last_result() is the finished command's result.
function SandboxMT:lines(cmd, t)
  -- the stream runs in a coroutine of its own: it takes the caller's
  -- acting subject and trace with it (bindings are per coroutine)
  local m = self:manager()
  local subject = context.get(context.subjects, m)
  local trace = context.get(context.traces, context.TRACE_OWNER)
  local co = coroutine.create(function()
    -- bound for this coroutine alone: they go with it
    if subject then context.bind(context.subjects, m, subject) end
    if trace then context.bind(context.traces, context.TRACE_OWNER, trace) end
    local pending = { stdout = "", stderr = "" }
    local r, err = self:stream(cmd, function(channel, chunk)
      local text = pending[channel] .. chunk
      for line in text:gmatch("([^\n]*)\n") do coroutine.yield(channel, line) end
      pending[channel] = text:match("[^\n]*$")
    end, t)
    if not r then error(err, 0) end
    for _, ch in ipairs { "stdout", "stderr" } do
      if pending[ch] ~= "" then coroutine.yield(ch, pending[ch]) end
    end
  end)
  -- 5.4 closes the stream when the loop is left early (the fourth value);
  -- elsewhere the stream's Transfer is closed when it is collected
  local closer = setmetatable({}, { __close = function() compat.close_coroutine(co) end })
  return function()
    local ok, channel, line = coroutine.resume(co)
    if not ok then error(channel, 0) end
    return channel, line
  end, nil, nil, closer
end

function SandboxMT:last_result() return last[self] end

--- A PTY shell session in this sandbox (see unsandbox.shell).
function SandboxMT:shell(opts) return Shell.new(self, opts) end

return { class = Sandbox, methods = SandboxMT }
