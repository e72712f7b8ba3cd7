--- unsandbox.Manager, the Control Plane client (spec §7, §8): its
-- constructor (M.new) and its own methods (M.methods: the acting subject
-- bound per coroutine, session keys, the clock of the leases, and the
-- low-level call). The methods of §8 live in the other files of cp/, one
-- per concern; all of them go through transport.lua. The userdata and its
-- C methods are csrc/lua/manager.c.
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

--- unsandbox.manager{url=, token=, session=, ca_file=, timeout=, refresh=,
-- tenant=, connect_timeout=, max_response=, lease_capacity=, env=, clock=,
-- max_concurrency=, retry=, on_request=}. retry: opt-in, idempotent calls
-- only (retry.lua); on_request(ev): this Manager's hook (observe.lua).
-- Timeouts in seconds; refresh in whole seconds. Defaults from
-- SANDBOX_CONTROL_PLANE_URL, SANDBOX_TOKEN, SANDBOX_SESSION_ID and
-- SANDBOX_LIFECYCLE_REFRESH_SECONDS. A Manager without a token can be made
-- (is_configured() says false); its calls fail before anything is sent.
-- clock (for tests and embedders): a function giving whole seconds on a
-- clock that does not jump, used by the lease rules.
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

--- m:on_request(fn): this Manager's request hook (nil removes it);
-- returns the previous one. See unsandbox.on_request.
function Manager:on_request(fn)
  check.type("on_request", "fn", fn, "function", true)
  local st = self:_state()
  local prev = st.on_request
  st.on_request = fn
  return prev
end

--- Whole seconds of the Manager's clock (monotonic unless a clock= was given).
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

--- The session id for a key (§5.1): an explicit key, else the Manager's
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

------------------------------------------------------------------------
-- The acting subject, bound per coroutine (§3, §7.1, §7.4)
------------------------------------------------------------------------

local function check_subject(fname, subject)
  check.type(fname, "subject", subject, "string")
  if not core.cp.valid_subject(subject) then
    check.fail(fname, "subject", "X-Acting-Subject must be 32 lowercase hex characters " ..
      "(derive it with unsandbox.acting_subject(salt, tenant, subject))")
  end
end

--- Binds subject for the calls of the running coroutine on this Manager
-- until the returned Binding is closed: `local b <close> = m:bind_subject(s)`.
function Manager:bind_subject(subject)
  check_subject("bind_subject", subject)
  return context.bind(context.subjects, self, subject)
end

--- Runs fn(...) with subject bound for this coroutine; returns fn's results.
function Manager:with_subject(subject, fn, ...)
  check_subject("with_subject", subject)
  check.type("with_subject", "fn", fn, "function")
  return context.with(context.subjects, self, subject, fn, ...)
end
Manager.acting_subject_context = Manager.with_subject

--- The subject bound for the running coroutine, or nil.
function Manager:acting_subject()
  return context.get(context.subjects, self)
end

------------------------------------------------------------------------
-- The low-level call
------------------------------------------------------------------------

local CALL_OPTIONS = { query = true, body = true, raw = true, content_type = true,
  owner = true, timeout = true, text = true }
-- what a caller might try to set and cannot (§7.1), with the reason
local PER_CALL = "cannot be set per call: Authorization is the Manager's token and " ..
  "X-Acting-Subject the coroutine's binding (m:with_subject)"
local REFUSED = { headers = "'headers' " .. PER_CALL, subject = "'subject' " .. PER_CALL,
  authorization = "'authorization' " .. PER_CALL, token = "'token' " .. PER_CALL }

--- Any Control Plane route with the Manager's credential: m:call(method,
-- path, opts) with opts.query, body (a table, sent as JSON), raw (exact
-- bytes), content_type, owner (true: an object call that names its
-- owner), timeout (s), text (return a 2xx body as it is). Authorization,
-- X-Acting-Subject and traceparent cannot be set per call (§7.1): the
-- token is the Manager's (scoped tokens and tickets are used by the named
-- methods), the subject the coroutine's binding. Returns doc, request_id
-- or nil, err.
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
