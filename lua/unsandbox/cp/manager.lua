--- unsandbox.Manager, the client of the sandbox platform's Control
-- Plane (spec §7, §8): workspaces and runtimes by session key, their
-- files, shells and checkpoints, object storage, and administration.
-- Made by `unsandbox.manager{...}`; closed by `m:close()`, a `<close>`
-- variable or the collector. A `Sandbox` is the friendlier face of one
-- session key; every Sandbox method is a Manager method with the
-- sandbox's name as key.
--
-- The contract of every method:
--
-- - `key`, the last argument of the methods that work in a workspace, is
--   a session key (any string: only its hash is sent); nil means the
--   Manager's own (session= or SANDBOX_SESSION_ID), and with none a call
--   raises. The Manager keeps a lease (workspace and runtime tokens) per
--   key and per acting subject.
-- - Success returns the server's document and the request id:
--   `doc, request_id`. An expected failure returns `nil, err`, err an
--   `Error` of kind `http` (the server's status and its `error` text as
--   message; err.hint on the file routes' 409), `transport`, `timeout` or
--   `protocol` (status 502: "Sandbox Control Plane unavailable at URL",
--   or a reply the client cannot use), `rpc` (status 502: an MCP tool's
--   error, err.rpc_code: -32602 bad arguments or no such shell session,
--   -32001 every PTY session busy), `cancelled` (499: a stream stopped by
--   is_cancelled or Ctrl-C), `credentials` (no token: nothing was sent),
--   `interrupted`; the agent tools add `not_found`, `sandbox` (err.code)
--   and `integrity`.
-- - Misuse raises at the caller's line: an argument of the wrong type or
--   shape (a workspace path with `..`, an id that is not one), an unknown
--   option, an object call with no acting subject bound and no owner, a
--   closed Manager ("attempt to use a closed Manager").
--
-- Its own methods live here (the acting subject bound per coroutine,
-- the clock of the leases, the low-level call); the other files of cp/
-- and agent/ add the rest, one per concern; all of them go through
-- transport.lua. The userdata and its C methods are csrc/lua/manager.c.
-- @classmod Manager
local compat = require "unsandbox.compat"
local core = require "unsandbox.core"
local check = require "unsandbox.check"
local context = require "unsandbox.context"
local transport = require "unsandbox.transport"
local retry = require "unsandbox.retry"

local Manager = {}   -- the methods this file adds to unsandbox.Manager
local M = { methods = Manager }

-- The options of a Manager: the core's (core.cp.MANAGER_OPTIONS: url,
-- token, session, ca_file, timeout, refresh, tenant, connect_timeout,
-- max_response, lease_capacity, env, max_concurrency) and the facade's
-- clock, retry and on_request.
local OPTIONS = { clock = true, retry = true, on_request = true }
for k in pairs(core.cp.MANAGER_OPTIONS) do OPTIONS[k] = true end

--- The Manager
-- @section manager

--- Makes a Manager. A Manager without a token can be made
-- (`is_configured` says false): its calls fail with kind credentials
-- before anything is sent.
-- @function unsandbox.manager
-- @static
-- @tparam[opt] table opts
-- @tparam[opt] string opts.url the Control Plane's base URL (default
-- SANDBOX_CONTROL_PLANE_URL)
-- @tparam[opt] string opts.token the bearer token: a tenant key, an admin
-- key or the break-glass token (default SANDBOX_TOKEN)
-- @tparam[opt] string opts.session the default session key (default
-- SANDBOX_SESSION_ID)
-- @tparam[opt] string opts.tenant sent as X-Sandbox-Tenant
-- @tparam[opt=100] number opts.timeout seconds of one request (some calls
-- take longer: runtime creation 130 s, checkpoints 150 s)
-- @tparam[opt] number opts.connect_timeout seconds to connect
-- @tparam[opt] integer opts.refresh whole seconds a lease is trusted
-- before it is checked again (default SANDBOX_LIFECYCLE_REFRESH_SECONDS)
-- @tparam[opt] string opts.ca_file a PEM bundle to verify TLS with
-- @tparam[opt] integer opts.max_response bytes of one response at most
-- (default 80 MiB)
-- @tparam[opt] integer opts.lease_capacity leases kept at most
-- @tparam[opt] integer opts.max_concurrency requests in flight at once
-- @tparam[opt] table opts.env `{NAME = value}` standing in for the
-- environment's SANDBOX_* variables
-- @tparam[opt] table opts.retry opt-in retries of idempotent calls only
-- (as for `unsandbox.client`)
-- @tparam[opt] function opts.on_request this Manager's hook
-- @tparam[opt] function opts.clock whole seconds on a clock that does not
-- jump, for the lease rules (tests and embedders)
-- @treturn Manager
-- @raise an unknown option, a value of the wrong type or range, a
-- malformed URL or tenant (also the SANDBOX_* variables')
-- @usage local m <close> = unsandbox.manager{url = "http://127.0.0.1:8090", token = tok}
function M.new(opts)
  opts = check.options("manager", opts, OPTIONS)
  local c = {}
  for k, v in pairs(opts) do c[k] = v end
  check.positive("manager", "timeout", opts.timeout)
  check.positive("manager", "connect_timeout", opts.connect_timeout)
  check.type("manager", "clock", opts.clock, "function", true)
  check.type("manager", "on_request", opts.on_request, "function", true)
  local policy = retry.policy("manager", opts.retry, true)
  if opts.refresh ~= nil and compat.math_type(opts.refresh) ~= "integer" then
    check.fail("manager", "refresh", "whole seconds (an integer) expected")
  end
  for _, k in ipairs { "url", "token", "session", "ca_file", "tenant" } do
    check.type("manager", k, opts[k], "string", true)
  end
  check.int_range("manager", "max_response", opts.max_response, 1, compat.maxinteger)
  check.int_range("manager", "lease_capacity", opts.lease_capacity, 0, compat.maxinteger)
  check.int_range("manager", "max_concurrency", opts.max_concurrency, 1,
    core.rules.MAX_CONCURRENCY)
  for k, v in pairs(check.type("manager", "env", opts.env, "table", true) or {}) do
    check.type("manager", "env." .. tostring(k), v, "string")
  end
  if opts.timeout then c.timeout = math.ceil(opts.timeout * 1000) end
  if opts.connect_timeout then c.connect_timeout = math.ceil(opts.connect_timeout * 1000) end
  c.clock, c.retry, c.on_request = nil, nil, nil
  -- the core's refusals (a bad URL or tenant; SANDBOX_* variables) at the caller's line
  local m = check.value("manager", "opts", core.cp.manager(c))
  local st = m:_state()
  st.clock, st.retry, st.on_request = opts.clock, policy, opts.on_request
  return m
end

--- The base URL this Manager talks to.
-- @function url
-- @treturn string

--- Whether the Manager has a token (calls can be made).
-- @function is_configured
-- @treturn boolean

--- The session id of the Manager's own session key (session= or
-- SANDBOX_SESSION_ID): the first 32 hex of its SHA-256, what the server
-- sees of it.
-- @function session_id
-- @treturn string|nil the session id, or nil when the Manager has no key

--- Closes the Manager and its open transfers (its leases are
-- forgotten); idempotent. Using it afterwards raises "attempt to use a closed Manager".
-- @function close

--- Sets this Manager's request hook, called after every exchange of this
-- Manager as `unsandbox.on_request` describes (the global hook runs too).
-- @tparam function|nil fn the hook; nil removes it
-- @treturn function|nil the previous one
-- @raise fn neither a function nor nil
function Manager:on_request(fn)
  check.type("on_request", "fn", fn, "function", true)
  local st = self:_state()
  local prev = st.on_request
  st.on_request = fn
  return prev
end

-- Whole seconds of the Manager's clock (monotonic unless a clock= was given).
function Manager:_now()
  local clock = self:_state().clock
  if not clock then return compat.idiv(core.loop.monotonic_ms(), 1000) end
  local t = clock()
  if compat.math_type(t) ~= "integer" then t = compat.tointeger(t) or math.floor(t) end
  return t
end

-- The lease of a session is the client's copy of what the server gave
-- the caller, and the server gives each acting subject its own workspace
-- for one session id (§5.1): so with a subject bound, the lease is kept
-- under a key of its own, hash(session_id ":" subject), and one
-- coroutine's workspace token never serves another subject.
local function lease_key(self, sid)
  local subject = context.get(context.subjects, self)
  if not subject then return sid end
  return core.cp.session_id(sid .. ":" .. subject)
end

-- The session id for a key (§5.1): an explicit key, else the Manager's
-- session (session= or SANDBOX_SESSION_ID), and the key of its lease for
-- the running coroutine. The key itself is never sent.
function Manager:_session(fname, key)
  local sid
  if key == nil then
    sid = self:session_id()
    if not sid then
      check.fail(fname, "key", "no session key: pass one, or create the Manager with session= " ..
        "or SANDBOX_SESSION_ID set")
    end
  else
    check.type(fname, "key", key, "string")
    sid = check.value(fname, "key", core.cp.session_id(key))
  end
  return sid, lease_key(self, sid)
end

--- The acting subject, bound per coroutine
-- @section subject

local function check_subject(fname, subject)
  check.type(fname, "subject", subject, "string")
  if not core.cp.valid_subject(subject) then
    check.fail(fname, "subject", "X-Acting-Subject must be 32 lowercase hex characters " ..
      "(derive it with unsandbox.acting_subject(salt, tenant, subject))")
  end
end

--- Binds an acting subject (X-Acting-Subject) for the calls of the
-- running coroutine on this Manager, until the returned Binding is
-- closed. Object calls need one (or an owner); the server gives each
-- subject its own workspace for a session key. Tasks spawned meanwhile
-- start with the binding.
-- @tparam string subject 32 lowercase hex (`unsandbox.acting_subject`)
-- @treturn Binding close it to unbind
-- @raise a subject of another shape
-- @usage local b <close> = m:bind_subject(unsandbox.acting_subject(salt, tenant, user))
function Manager:bind_subject(subject)
  check_subject("bind_subject", subject)
  return context.bind(context.subjects, self, subject)
end

--- Runs fn(...) with an acting subject bound for this coroutine (as
-- `bind_subject`), unbound however fn ends. Also named
-- acting_subject_context.
-- @tparam string subject 32 lowercase hex
-- @tparam function fn
-- @param ... fn's arguments
-- @return what fn returns
-- @raise a subject of another shape, fn not a function; what fn raises
function Manager:with_subject(subject, fn, ...)
  check_subject("with_subject", subject)
  check.type("with_subject", "fn", fn, "function")
  return context.with(context.subjects, self, subject, fn, ...)
end
Manager.acting_subject_context = Manager.with_subject
--- The name of `with_subject` in the protocol's SDK surface (§8).
-- @function acting_subject_context
-- @tparam string subject
-- @tparam function fn
-- @param ...
-- @return what fn returns

--- The acting subject bound for the running coroutine on this Manager.
-- @treturn string|nil the subject, or nil
function Manager:acting_subject()
  return context.get(context.subjects, self)
end

--- The low-level call
-- @section call

local CALL_OPTIONS = { query = true, body = true, raw = true, content_type = true,
  owner = true, timeout = true, text = true }
-- what a caller might try to set and cannot (§7.1), with the reason
local PER_CALL = "cannot be set per call: Authorization is the Manager's token and " ..
  "X-Acting-Subject the coroutine's binding (m:with_subject)"
local REFUSED = { headers = "'headers' " .. PER_CALL, subject = "'subject' " .. PER_CALL,
  authorization = "'authorization' " .. PER_CALL, token = "'token' " .. PER_CALL }

--- Any Control Plane route with the Manager's credential.
-- Authorization, X-Acting-Subject and traceparent cannot be set per call
-- (§7.1): the token is the Manager's (scoped tokens and tickets are used
-- by the named methods), the subject the coroutine's binding.
-- @tparam string method the HTTP method (any case)
-- @tparam string path the route ("/v1/whoami")
-- @tparam[opt] table opts `query` (a table, form-encoded), `body` (a
-- table, sent as JSON), `raw` (exact bytes), `content_type`, `owner`
-- (true: an object call that names its owner in the body), `timeout`
-- (s), `text` (true: a 2xx body as it is)
-- @treturn[1] table|string the decoded document (a non-JSON reply:
-- `{raw = text}`; empty: `{}`), or the text with opts.text
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
-- @raise an empty method or path, an unknown option, headers, subject,
-- token or authorization among the options, an object call with no
-- subject bound and no owner
function Manager:call(method, path, opts)
  check.nonempty("call", "method", method)
  check.nonempty("call", "path", path)
  opts = check.options("call", opts, CALL_OPTIONS, { explain = REFUSED })
  check.positive("call", "timeout", opts.timeout)
  local doc, resp = transport.cp_call(self, "call", method:upper(), path, opts)
  if not doc then return nil, resp end
  return doc, resp.request_id
end

return M
