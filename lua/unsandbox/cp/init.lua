--- The Control Plane part of the public module (spec control-plane.md;
-- init.lua merges this table into `unsandbox`): the Manager and Sandbox
-- classes with all their methods, the acting-subject derivation, and the
-- trace id bound per coroutine. Internal module: its functions are
-- documented as the module's.
-- @module unsandbox
local core = require "unsandbox.core"
local check = require "unsandbox.check"
local context = require "unsandbox.context"
local methods = require "unsandbox.methods"
local manager = require "unsandbox.cp.manager"
local sandbox = require "unsandbox.cp.sandbox"
local Shell = require "unsandbox.cp.shell"
local wrap = require "unsandbox.wrap"

-- Every method that talks to the Control Plane runs in the frame of a
-- public call (wrap.lua: its timing, interrupts as Errors). Left out: the
-- plumbing, what makes no exchange, and what runs the caller's own code
-- around its calls (with_subject; lines, whose stream is a call of its own).
local MANAGER_FRAME = { skip = { url = true, session_id = true, is_configured = true, close = true,
  on_request = true, bind_subject = true, with_subject = true, acting_subject_context = true,
  acting_subject = true, status = true, forget = true } }
local SANDBOX_FRAME = { skip = { name = true, session_id = true, manager = true, is_open = true,
  status = true, lines = true, last_result = true, shell = true } }

-- the Manager's methods, one file per concern
methods.add(core.cp.Manager, manager.methods, MANAGER_FRAME, "unsandbox.cp.manager")
for _, group in ipairs { "leases", "checkpoints", "tools", "objects", "files", "records", "status",
                         "admin", "lists" } do
  local from = "unsandbox.cp." .. group
  methods.add(core.cp.Manager, require(from), MANAGER_FRAME, from)
end
methods.add(core.cp.Sandbox, sandbox.methods, SANDBOX_FRAME, "unsandbox.cp.sandbox")
-- the agent tools (lua/unsandbox/agent/): file operations and transfers on
-- the Manager, with the Sandbox's processes and contexts
local agent = require "unsandbox.agent.sandbox"
for _, group in ipairs(agent.manager) do
  methods.add(core.cp.Manager, group.methods, MANAGER_FRAME, group.from)
end
methods.add(core.cp.Sandbox, agent.methods, SANDBOX_FRAME, "unsandbox.agent.sandbox")
for _, class in ipairs(agent.classes) do
  wrap.methods(class, { detach = true, __tostring = true, __close = true, output = true, lines = true,
    _pty_output = true })
end
-- the Sandbox constructors and the Shell are Lua tables of their own
wrap.methods(sandbox.class, { default_manager = true })
wrap.methods(Shell, { new = true, detach = true, __tostring = true, __close = true })

--- The Control Plane
-- @section control_plane

--- Makes a Manager, the client of the Control Plane.
-- @function manager
-- @tparam[opt] table opts see `Manager` (url, token, session, tenant, ...)
-- @treturn Manager
-- @see Manager

local M = {
  Manager = core.cp.Manager,
  Sandbox = sandbox.class,
  manager = manager.new,
}

--- The X-Acting-Subject of a tenant's end user: the hex of the first 16
-- bytes of HMAC-SHA256(salt, tenant ‖ U+0000 ‖ subject). Bind it to a
-- Manager's calls with `Manager:bind_subject` or `Manager:with_subject`.
-- @tparam string salt the tenant's secret salt, at least 32 bytes
-- @tparam string tenant the tenant id
-- @tparam string subject the end user's own id (any string)
-- @treturn string 32 lowercase hex
-- @raise an argument that is not a string, a salt shorter than 32 bytes,
-- a malformed tenant id
function M.acting_subject(salt, tenant, subject)
  check.type("acting_subject", "salt", salt, "string")
  check.type("acting_subject", "tenant", tenant, "string")
  check.type("acting_subject", "subject", subject, "string")
  return check.value("acting_subject", { "salt", "tenant", "subject" },
    core.cp.acting_subject(salt, tenant, subject))
end

local function parse_trace(fname, id)
  check.type(fname, "trace", id, "string")
  local tp = core.trace.parse_traceparent(id)
  if tp then return { trace_id = tp.trace_id, flags = tp.flags } end
  if core.trace.new_traceparent(id) then return { trace_id = id, flags = "01" } end
  check.fail(fname, "trace", "a trace id (32 lowercase hex, not all zero) or a traceparent expected")
end

--- Binds a trace for the Control Plane requests of the running coroutine:
-- each request then sends traceparent 00-<trace>-<new span>-<flags>, and
-- the server answers X-Request-Id: <trace>. Unbound requests get a random
-- trace each. Tasks spawned meanwhile start with the binding.
-- @tparam string id a trace id (32 lowercase hex, not all zero), or an
-- inbound traceparent (its trace id and flags are adopted)
-- @tparam[opt] function fn run so bound; without it, the binding stays
-- until the returned Binding is closed
-- @param ... fn's arguments
-- @return[1] what fn returns (the binding ends with fn, however fn ends)
-- @treturn[2] Binding without fn: close it to unbind
-- @raise a malformed id, fn not a function
-- @usage local t <close> = unsandbox.trace(unsandbox.new_trace_id())
function M.trace(id, fn, ...)
  local value = parse_trace("trace", id)
  if fn == nil then return context.bind(context.traces, context.TRACE_OWNER, value) end
  check.type("trace", "fn", fn, "function")
  return context.with(context.traces, context.TRACE_OWNER, value, fn, ...)
end

--- The trace bound for the running coroutine.
-- @treturn[1] string the trace id (32 hex)
-- @treturn[1] string its flags ("01": sampled)
-- @return[2] nil when none is bound
function M.current_trace()
  local v = context.get(context.traces, context.TRACE_OWNER)
  if v then return v.trace_id, v.flags end
  return nil
end

--- A new random trace id, e.g. for `trace`.
-- @treturn string 32 lowercase hex
function M.new_trace_id()
  return core.trace.new_traceparent():sub(4, 35)
end

--- A value bound to the running coroutine (a trace, an acting subject)
-- until it is closed: what `trace` and `Manager:bind_subject` return.
-- @type Binding

--- Restores what was bound before; idempotent. A `<close>` variable or
-- `unsandbox.with` calls it.
-- @function Binding:close

return M
