--- Workspaces and runtimes of a session key (spec §7.6-§7.9, §8): the
-- flows over the core's lease rules. Each flow decides from the lease
-- (m:_ws_decide / m:_rt_decide copy out what a request needs), makes its
-- request, then applies the reply to the lease looked up again, so no
-- lease is held across a network call and a coroutine switch in between
-- cannot leave a half-updated lease. Methods of unsandbox.Manager (the
-- workspace's checkpoints are checkpoints.lua).
-- @classmod Manager
local core = require "unsandbox.core"
local check = require "unsandbox.check"
local transport = require "unsandbox.transport"
local Error = require "unsandbox.errors"

local Manager = {}   -- the methods this file adds to unsandbox.Manager

local CREATE_TIMEOUT = 130   -- §10: the server may hold a runtime create for ~110 s

-- Applies a reply to the lease: apply is m:_ws_apply or m:_rt_apply.
local function applied(self, apply, sid, doc, resp)
  local ok, _, msg = apply(self, sid, doc, self:_now())
  if ok then return true end
  return nil, transport.cp.bad_reply(msg, resp)
end

-- The lease of a workspace as a table (what POST /v1/workspaces answers).
local function ws_view(ws_id, token, owner, created)
  return { workspace_id = ws_id, status = "ready", created = created, owner = owner,
    access_token = token, file_url = "/v1/workspaces/" .. ws_id .. "/files" }
end

--- Workspaces and runtimes by session key
-- @section leases

--- The session's workspace, made if needed (POST /v1/workspaces, §7.7):
-- the cached lease is reused while its token lives more than 60 s and it
-- was checked within the refresh period.
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @tparam[opt] string owner "tenant/subject" (admin identities only)
-- @tparam[opt] boolean refresh true: ask the server even with a good lease
-- @tparam[opt] table opts `principal = {kind =, id =}` (not with a bound
-- subject: the server says 400)
-- @treturn[1] table the WorkspaceLease: `{workspace_id, status, created,
-- owner, access_token, file_url, ...}`
-- @treturn[1] string|nil the request id (nil when the lease was reused)
-- @return[2] nil
-- @treturn[2] Error (http 403: owner with a tenant credential; 429: no capacity)
-- @raise no key and no session of the Manager; owner or refresh of the
-- wrong type
function Manager:ensure_workspace(key, owner, refresh, opts)
  local sid, lk = self:_session("ensure_workspace", key)
  check.type("ensure_workspace", "owner", owner, "string", true)
  check.type("ensure_workspace", "refresh", refresh, "boolean", true)
  opts = check.options("ensure_workspace", opts, { principal = true })
  local action, ws_id, token, cached_owner, created =
    self:_ws_decide(lk, owner, refresh or false, self:_now())
  if action == "reuse" and not opts.principal then
    return ws_view(ws_id, token, cached_owner, created)
  end
  local doc, resp = transport.cp_call(self, "ensure_workspace", "POST", "/v1/workspaces",
    { body = { session_id = sid, owner = owner, principal = opts.principal } })
  if not doc then return nil, resp end
  local ok, err = applied(self, self._ws_apply, lk, doc, resp)
  if not ok then return nil, err end
  if doc.created == nil then doc.created = true end
  return doc, resp.request_id
end

-- The runtime lease as a table (a SandboxLease's fields that the client keeps).
local function rt_view(sb_id, token, template, ws_id)
  return { id = sb_id, access_token = token, template = template, workspace_id = ws_id,
    status = "running", mcp_url = "/v1/sandboxes/" .. sb_id .. "/mcp" }
end

local function refresh_token(self, lk, sb_id)
  local doc, resp = transport.cp_call(self, "ensure_runtime", "POST", "/v1/sandboxes/" .. sb_id .. "/token",
    { body = {} })
  if not doc then return nil, resp end
  local ok, err = applied(self, self._rt_apply, lk, doc, resp)
  if not ok then return nil, err end
  return doc, resp
end

local function create_runtime(self, lk, ws_id, template)
  local doc, resp = transport.cp_call(self, "ensure_runtime", "POST", "/v1/sandboxes",
    { body = { workspace_id = ws_id, template_id = template }, timeout = CREATE_TIMEOUT })
  if not doc then return nil, resp end
  local ok, err = applied(self, self._rt_apply, lk, doc, resp)
  if not ok then return nil, err end
  return doc, resp.request_id
end

--- A running runtime for the session's workspace (§7.8): the cached one
-- (its token refreshed when it expires within 60 s or the lease is stale;
-- a 404 forgets it), else a new one (POST /v1/sandboxes, waiting up to
-- 130 s for it to be ready).
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @tparam[opt] string template a template id (default "default")
-- @treturn[1] table the runtime: `{id, access_token, template,
-- workspace_id, status = "running", mcp_url}`
-- @treturn[1] string|nil the request id (nil when the lease was reused)
-- @return[2] nil
-- @treturn[2] Error (kind validation, status 409: the cached runtime runs
-- another template, and nothing was sent; http 400 unknown template, 429
-- no capacity, 504 not ready in time)
-- @raise a malformed template id, no key
function Manager:ensure_runtime(key, template)
  local _, lk = self:_session("ensure_runtime", key)
  if template ~= nil then
    check.type("ensure_runtime", "template", template, "string")
    if not core.cp.valid_template(template) then
      check.fail("ensure_runtime", "template", "a template id ([a-z0-9][a-z0-9-]{0,31}) expected")
    end
  end
  local ws, err = self:ensure_workspace(key)
  if not ws then return nil, err end
  local action, a, b, c = self:_rt_decide(lk, template, self:_now())
  if action == "conflict" then
    return nil, Error.new { kind = "validation", status = 409, message = a }
  elseif action == "reuse" then
    return rt_view(a, b, c, ws.workspace_id)
  elseif action == "refresh" then
    local doc, resp = refresh_token(self, lk, a)
    if doc then
      local st = self:_lease_status(lk, self:_now())
      local view = rt_view(a, doc.access_token, st.template or "default", ws.workspace_id)
      return view, resp.request_id
    end
    if resp.status ~= 404 then return nil, resp end
    self:_rt_forget(lk)   -- the runtime is gone: create one
  end
  return create_runtime(self, lk, ws.workspace_id, template)
end

--- Releases the session's cached runtime (DELETE /v1/sandboxes/{sb}); the
-- workspace's files stay.
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table `{id, released = true}`, or `{released = false,
-- reason = "no active Runtime"}` when none is cached (nothing is sent)
-- @treturn[1] string|nil the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:release_runtime(key)
  local _, lk = self:_session("release_runtime", key)
  local st = self:_lease_status(lk, self:_now())
  if not st.sandbox_id then return { released = false, reason = "no active Runtime" } end
  local doc, resp = transport.cp_call(self, "release_runtime", "DELETE", "/v1/sandboxes/" .. st.sandbox_id)
  if doc or resp.status == 404 then self:_rt_forget(lk) end
  if not doc then return nil, resp end
  return doc, resp.request_id
end

--- Finds the session's workspace and its live runtime, never creating
-- anything (POST /v1/workspaces/resolve).
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table `{workspace_id, sandbox_id (or nil), template (or nil)}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error (http 404: no workspace for this key)
function Manager:resolve_workspace(key)
  local sid = self:_session("resolve_workspace", key)
  local doc, resp = transport.cp_call(self, "resolve_workspace", "POST", "/v1/workspaces/resolve",
    { body = { session_id = sid } })
  if not doc then return nil, resp end
  -- the ids go into request paths: only their spec shapes are used
  if type(doc.workspace_id) ~= "string" or not core.cp.valid_workspace_id(doc.workspace_id) then
    return nil, transport.cp.bad_reply("Control Plane response has no workspace_id", resp)
  end
  if doc.sandbox_id ~= nil and (type(doc.sandbox_id) ~= "string" or
                                not core.cp.valid_sandbox_id(doc.sandbox_id)) then
    return nil, transport.cp.bad_reply("Control Plane response has an invalid sandbox_id", resp)
  end
  return doc, resp.request_id
end

--- The session's live runtime, found without creating one: resolve, then
-- a fresh token for it (POST /v1/sandboxes/{sb}/token).
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table the runtime, as `ensure_runtime` gives it
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error (http 404 "sandbox '<key>' is not running")
function Manager:lookup_runtime(key)
  local sid, lk = self:_session("lookup_runtime", key)
  local res, err = self:resolve_workspace(key)
  if not res then return nil, err end
  if type(res.sandbox_id) ~= "string" then
    return nil, Error.new { kind = "http", status = 404,
      message = "sandbox '" .. (key or sid) .. "' is not running" }
  end
  local doc, resp = refresh_token(self, lk, res.sandbox_id)
  if not doc then return nil, resp end
  if type(res.template) == "string" then
    self:_rt_apply(lk, { id = res.sandbox_id, access_token = doc.access_token,
      access_token_expires_in = doc.access_token_expires_in, template = res.template }, self:_now())
  end
  return rt_view(res.sandbox_id, doc.access_token, res.template or "default", res.workspace_id),
    resp.request_id
end

--- What the Manager holds for a session: its lease, without a request.
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn table `{session_id, workspace_id, workspace_ready, sandbox_id,
-- runtime_ready, template}` (the ids nil when none is held)
-- @raise no key
function Manager:status(key)
  local sid, lk = self:_session("status", key)
  local st = self:_lease_status(lk, self:_now())
  st.session_id = sid
  return st
end

--- Forgets the client's lease of a session (the server keeps everything:
-- the next call finds it again).
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn boolean whether there was a lease
-- @raise no key
function Manager:forget(key)
  local _, lk = self:_session("forget", key)
  return self:_lease_forget(lk)
end

--- Deletes the session's workspace (found by resolve, never created for
-- this); the lease is forgotten.
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @tparam[opt] boolean purge true: its checkpoints too
-- @treturn[1] table `{workspace_id, released, data_retained, purged,
-- checkpoints_purged}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error (http 404: none; 409: it still has a runtime)
function Manager:delete_workspace(key, purge)
  local _, lk = self:_session("delete_workspace", key)
  check.type("delete_workspace", "purge", purge, "boolean", true)
  local res, err = self:resolve_workspace(key)
  if not res then return nil, err end
  local doc, resp = transport.cp_call(self, "delete_workspace", "DELETE", "/v1/workspaces/" .. res.workspace_id,
    { query = { purge = purge and "1" or nil } })
  if not doc then return nil, resp end
  self:_lease_forget(lk)
  return doc, resp.request_id
end

return Manager
