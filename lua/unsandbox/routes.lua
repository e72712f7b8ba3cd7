--- The Control Plane routes that are not lease flows, MCP tools or
-- objects, each as a named method of unsandbox.Manager (so every row of
-- control-plane-routes.tsv is reachable by name): operations and
-- identity, workspace and runtime records, the workspace file routes
-- (with the workspace token; they need a running runtime and never
-- create one, §10), and administration. All through transport.cp_call.
local core = require "unsandbox.core"
local check = require "unsandbox.check"
local transport = require "unsandbox.transport"
local Error = require "unsandbox.errors"

local Manager = core.Manager

local function result(doc, resp)
  if not doc then return nil, resp end
  return doc, resp.request_id
end

local function get(self, fname, path, o)
  o = o or {}
  return result(transport.cp_call(self, fname, "GET", path, o))
end

local function send(self, fname, method, path, body, o)
  o = o or {}
  o.body = body
  return result(transport.cp_call(self, fname, method, path, o))
end

local function id_arg(fname, arg, v, pattern, what)
  check.type(fname, arg, v, "string")
  if not v:match(pattern) then check.fail(fname, arg, what .. " expected") end
  return v
end
local function sandbox_id(fname, v) return id_arg(fname, "sandbox_id", v, "^sb%-%x+$", "a sandbox id (sb-<12 hex>)") end
local function tenant_id(fname, v)
  check.type(fname, "tenant", v, "string")
  if not core.valid_tenant(v) then check.fail(fname, "tenant", "a tenant id expected") end
  return v
end

------------------------------------------------------------------------
-- Operations and identity
------------------------------------------------------------------------

--- GET /healthz; a status other than "ok" is a 503 (§8). 5 s.
function Manager:ping()
  local doc, rid = get(self, "ping", "/healthz", { timeout = 5 })
  if not doc then return nil, rid end
  if doc.status ~= "ok" then
    return nil, Error.new { kind = "http", status = 503, message = "Sandbox Control Plane is not ready",
      request_id = rid, body = doc }
  end
  return doc, rid
end

function Manager:livez() return get(self, "livez", "/livez", { timeout = 5 }) end
function Manager:readyz() return get(self, "readyz", "/readyz", { timeout = 5 }) end
function Manager:healthz() return get(self, "healthz", "/healthz", { timeout = 5 }) end
--- GET /metrics: the Prometheus text as it is.
function Manager:metrics() return get(self, "metrics", "/metrics", { text = true, timeout = 10 }) end
function Manager:auth_methods() return get(self, "auth_methods", "/v1/auth/methods") end
function Manager:whoami() return get(self, "whoami", "/v1/whoami") end
function Manager:templates() return get(self, "templates", "/v1/templates") end
function Manager:monitoring() return get(self, "monitoring", "/v1/monitoring") end

--- POST /v1/auth/logout (204).
function Manager:logout() return send(self, "logout", "POST", "/v1/auth/logout", nil) end

-- The browser sign-in routes answer redirects, which the client does not
-- follow: these return {status, location} for a caller that drives a
-- browser. The local backend does not emulate OIDC (404).
local function redirect(self, fname, path, query)
  local doc, resp = transport.cp_call(self, fname, "GET", path, { query = query, timeout = 30,
    capture = { "Location" } })
  if not doc then return nil, resp end
  return { status = resp.status, location = resp.headers.Location }, resp.request_id
end
function Manager:oidc_login(query) return redirect(self, "oidc_login", "/v1/auth/oidc/login", query) end
function Manager:oidc_callback(query) return redirect(self, "oidc_callback", "/v1/auth/oidc/callback", query) end

------------------------------------------------------------------------
-- Workspace and runtime records
------------------------------------------------------------------------

local function list_of(self, fname, path, field)
  local doc, rid = get(self, fname, path)
  if not doc then return nil, rid end
  if type(doc[field]) ~= "table" then
    return nil, transport.cp.bad_reply("Control Plane response has no " .. field .. " list")
  end
  local out = {}
  for _, v in ipairs(doc[field]) do
    if type(v) == "table" then out[#out + 1] = v end   -- §8: non-objects dropped
  end
  return out, rid
end

function Manager:list_workspaces() return list_of(self, "list_workspaces", "/v1/workspaces", "workspaces") end
function Manager:list_runtimes() return list_of(self, "list_runtimes", "/v1/sandboxes", "sandboxes") end

--- GET /v1/sandboxes/{sb}: pending, live (a Sandbox) or gone ({id, status}).
function Manager:get_runtime(sb)
  return get(self, "get_runtime", "/v1/sandboxes/" .. sandbox_id("get_runtime", sb))
end

--- DELETE /v1/sandboxes/{sb} by id (release_runtime does it by session key).
function Manager:delete_runtime(sb)
  return send(self, "delete_runtime", "DELETE", "/v1/sandboxes/" .. sandbox_id("delete_runtime", sb))
end

--- POST /v1/sandboxes/{sb}/token {}: a fresh sandbox token (ScopedToken).
function Manager:runtime_token(sb)
  return send(self, "runtime_token", "POST", "/v1/sandboxes/" .. sandbox_id("runtime_token", sb) .. "/token", {})
end

--- POST /v1/sandboxes {workspace_id, template_id?, wait?}, as it is: no
-- lease is kept (ensure_runtime is the session-key form). wait = false ⇒
-- 202 and a pending runtime.
function Manager:create_runtime(workspace_id, template, wait)
  id_arg("create_runtime", "workspace_id", workspace_id, "^ws%-%x+$", "a workspace id (ws-<12 hex>)")
  check.type("create_runtime", "template", template, "string", true)
  check.type("create_runtime", "wait", wait, "boolean", true)
  return send(self, "create_runtime", "POST", "/v1/sandboxes",
    { workspace_id = workspace_id, template_id = template, wait = wait }, { timeout = 130 })
end

return Manager
