--- unsandbox.Sandbox (spec §8): a named sandbox, whose name is its
-- session key on a Manager: its workspace (files that stay with the
-- name) and its runtime (the running machine, released by `stop` or
-- `close`). Every method calls the Manager's method of the same concern
-- with the name as key, so the Manager's contract holds: success is the
-- result and the request id where the Manager gives one, an expected
-- failure `nil, err` (an `Error`), misuse raises.
--
-- `local sb <close> = unsandbox.Sandbox.create{...}` releases the runtime
-- when the block ends, also by an error (then a failed release does not
-- hide that error); with no error, a failed release raises it.
--
-- The userdata (csrc/lua/sandbox.c) keeps its Manager alive. This module
-- gives the public table (M.class: Sandbox.create/get/get_or_create) and
-- the userdata's methods (M.methods, added by cp/init.lua).
-- @classmod Sandbox
-- @alias SandboxMT
local compat = require "unsandbox.compat"
local core = require "unsandbox.core"
local check = require "unsandbox.check"
local context = require "unsandbox.context"
local Error = require "unsandbox.errors"
local Shell = require "unsandbox.cp.shell"

local SandboxMT = {}   -- the methods of every unsandbox.Sandbox userdata
local Sandbox = {}

local default_manager
--- Making one
-- @section making

--- The Manager of Sandbox calls that name none: one made from the
-- environment (SANDBOX_CONTROL_PLANE_URL, SANDBOX_TOKEN) on first use.
-- @static
-- @treturn Manager
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

--- The named sandbox with a live runtime: the running one if there is
-- one, else a new one (made from its workspace, whose files stay with
-- the name). Also named get_or_create.
-- @static
-- @tparam[opt] table opts
-- @tparam[opt] string opts.name the sandbox's name, its session key
-- (default "sandbox-" and 12 random hex; non-blank, at most 128)
-- @tparam[opt] string opts.template a template id (default "default")
-- @tparam[opt] Manager opts.manager (default `default_manager`)
-- @treturn[1] Sandbox
-- @return[2] nil
-- @treturn[2] Error (validation 409: it runs another template; http 429: no
-- capacity)
-- @raise a bad name, an empty template, manager not a Manager, an
-- unknown option
-- @usage local sb <close> = assert(unsandbox.Sandbox.create{name = "demo"})
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
--- The same as `create` (the protocol's SDK has both names).
-- @function get_or_create
-- @static
-- @tparam[opt] table opts
-- @treturn[1] Sandbox
-- @return[2] nil
-- @treturn[2] Error

--- The named sandbox, which must have a live runtime (or, with resume,
-- gets one).
-- @static
-- @tparam table opts `name` (required), `resume` (true: start a runtime
-- when none runs), `template` (with resume), `manager`
-- @treturn[1] Sandbox
-- @return[2] nil
-- @treturn[2] Error (http 404 "sandbox '<name>' is not running", without resume)
-- @raise no name, a bad name, an unknown option
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

--- The sandbox.
-- @section sandbox

--- Its name (its session key).
-- @function name
-- @treturn string

--- The session id of its name (what the server sees of it).
-- @function session_id
-- @treturn string 32 hex

--- The Manager it calls.
-- @function manager
-- @treturn Manager

--- Whether it is open (not yet closed).
-- @function is_open
-- @treturn boolean

--- What the Manager holds for it, without a request (`Manager:status`).
-- @treturn table `{name, session_id, workspace_id, workspace_ready,
-- sandbox_id, runtime_ready, template}`
function SandboxMT:status()
  local st = self:manager():status(self:name())
  st.name = self:name()
  return st
end

--- Releases the runtime; the workspace's files are kept (the next call
-- that needs a runtime starts one). Looks it up first when the Manager
-- holds none.
-- @treturn[1] table `{id, released = true}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error (http 404: none runs)
function SandboxMT:stop()
  local m, name = self:manager(), self:name()
  if not m:status(name).sandbox_id then
    local rt, err = m:lookup_runtime(name)
    if not rt then return nil, err end
  end
  return m:release_runtime(name)
end

--- Releases the runtime and closes the object (nothing running is not a
-- failure); idempotent. `<close>` and `unsandbox.with` call it.
-- @treturn[1] boolean|table true, or stop's answer
-- @return[2] nil
-- @treturn[2] Error (the object is closed either way)
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

--- Commands.
-- @section commands

--- Runs a program with arguments (an argv, not a shell line: each word
-- is POSIX-quoted, so `run_command("ls -la")` looks for a program named
-- "ls -la"; `run_command("sh", {"-c", "ls -la"})` runs a line), by the
-- shell tool, to its end.
-- @tparam string cmd the program
-- @tparam[opt] table args its arguments, a list of strings
-- @tparam[opt=30] integer t the timeout in seconds, 1..30
-- @treturn[1] table `{exit_code (-1 if the runtime gave none), stdout,
-- stderr, timed_out, output_truncated}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
-- @raise an empty cmd, args not a list of strings, a line over 8192 bytes
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

--- Files.
-- @section files

--- Reads a UTF-8 text file (`Manager:read_file`, the first window).
-- @tparam string path a workspace path: relative to /workspace (or
-- "/workspace/..."), no "..", not under .sandbox
-- @treturn[1] table `{path, content, start_line, end_line, truncated, ...}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function SandboxMT:read_file(path) return self:manager():read_file(path, nil, nil, self:name()) end
--- Writes a UTF-8 text file (`Manager:write_file`).
-- @tparam string path a workspace path: relative to /workspace (or
-- "/workspace/..."), no "..", not under .sandbox
-- @tparam string content
-- @treturn[1] table `{path, chars, bytes}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function SandboxMT:write_file(path, content) return self:manager():write_file(path, content, self:name()) end
--- Replaces text that occurs exactly once (`Manager:edit_file`).
-- @tparam string path a workspace path: relative to /workspace (or
-- "/workspace/..."), no "..", not under .sandbox
-- @tparam string old
-- @tparam string new
-- @treturn[1] table `{path, replacements = 1}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function SandboxMT:edit_file(path, old, new) return self:manager():edit_file(path, old, new, self:name()) end

local ITEM = { path = true, content = true }

--- Writes several files, one after the other.
-- @tparam table items `{{path =, content =}, ...}`
-- @treturn[1] table the list of `write_file` results
-- @return[2] nil
-- @treturn[2] Error at the first failure (earlier writes stay)
-- @raise an item with other fields, or of the wrong types
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

--- Checkpoints.
-- @section checkpoints

--- Checkpoints its workspace (`Manager:checkpoint_workspace`; needs a
-- running runtime).
-- @treturn[1] table the Checkpoint `{checkpoint_id, ...}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function SandboxMT:checkpoint() return self:manager():checkpoint_workspace(self:name()) end
--- Its workspace's checkpoints (`Manager:list_workspace_checkpoints`).
-- @treturn[1] table `{workspace_id, checkpoints}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function SandboxMT:list_checkpoints() return self:manager():list_workspace_checkpoints(self:name()) end
--- Restores a checkpoint into its workspace (`Manager:restore_workspace`).
-- @tparam string checkpoint_id
-- @tparam[opt] string sha256 the expected digest
-- @treturn[1] table the CheckpointRestore
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function SandboxMT:restore(checkpoint_id, sha256)
  return self:manager():restore_workspace(checkpoint_id, sha256, self:name())
end

local last = setmetatable({}, { __mode = "k" })

--- Streams and shells.
-- @section streams

--- Runs a shell line with its output streamed as it is written
-- (`Manager:shell_stream`).
-- @tparam string cmd a shell line
-- @tparam function on_chunk on_chunk(channel, chunk, sequence)
-- @tparam[opt=30] integer t the timeout in seconds, 1..30
-- @tparam[opt] function is_cancelled true stops it (kind cancelled)
-- @treturn[1] table the result as `Manager:shell` gives it, plus
-- stream_chunks (also `last_result`)
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
-- @raise on_chunk not a function
function SandboxMT:stream(cmd, on_chunk, t, is_cancelled)
  check.type("stream", "on_chunk", on_chunk, "function")
  local r, err = self:manager():shell_stream(cmd, t, on_chunk, is_cancelled, self:name())
  if r then last[self] = r end
  return r, err
end

--- Iterates over a shell line's output as lines (without their "\n"),
-- per channel, as the command writes them. Breaking out of the loop
-- closes the stream (on 5.4; elsewhere when it is collected).
-- @tparam string cmd a shell line
-- @tparam[opt=30] integer t the timeout in seconds
-- @treturn function an iterator of `channel ("stdout" or "stderr"),
-- line`; a failure raises its Error from the iterator
-- @usage for channel, line in sb:lines("make 2>&1") do print(line) end
-- print(sb:last_result().exit_code)
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

--- The result of the last `stream` (or `lines`) that finished.
-- @treturn table|nil
function SandboxMT:last_result() return last[self] end

--- A PTY shell session in this sandbox (no request yet).
-- @tparam[opt] table opts `id` (take up an existing session by its id;
-- default a new "shell-<16 hex>")
-- @treturn Shell
-- @raise a malformed id
function SandboxMT:shell(opts) return Shell.new(self, opts) end

return { class = Sandbox, methods = SandboxMT }
