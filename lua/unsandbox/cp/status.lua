--- The Control Plane's operations and identity routes (spec §4.1, §8) as
-- methods of unsandbox.Manager: the health probes, the metrics text, the
-- caller's identity, the templates and monitoring, sign-out and the
-- browser sign-in routes. Every row of control-plane-routes.tsv is
-- reachable by name; these are the ones that concern the service itself.
-- @classmod Manager
local transport = require "unsandbox.transport"
local Error = require "unsandbox.errors"

local Manager = {}   -- the methods this file adds to unsandbox.Manager

local function get(self, fname, path, o)
  return transport.cp_request(self, fname, "GET", path, o)
end

--- The service and its caller
-- @section status

--- Checks that the Control Plane is up (GET /healthz, 5 s).
-- @treturn[1] table `{status = "ok", database, kubernetes, object_storage}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error (http 503 "Sandbox Control Plane is not ready" when
-- the status is not "ok")
function Manager:ping()
  local doc, rid = get(self, "ping", "/healthz", { timeout = 5 })
  if not doc then return nil, rid end
  if doc.status ~= "ok" then
    return nil, Error.new { kind = "http", status = 503, message = "Sandbox Control Plane is not ready",
      request_id = rid, body = doc }
  end
  return doc, rid
end

--- GET /livez (5 s).
-- @treturn[1] table the document
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:livez() return get(self, "livez", "/livez", { timeout = 5 }) end
--- GET /readyz (5 s).
-- @treturn[1] table the document
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:readyz() return get(self, "readyz", "/readyz", { timeout = 5 }) end
--- GET /healthz as it is (5 s).
-- @treturn[1] table the document
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:healthz() return get(self, "healthz", "/healthz", { timeout = 5 }) end
--- The Prometheus metrics (GET /metrics, 10 s).
-- @treturn[1] string the text as it is
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:metrics() return get(self, "metrics", "/metrics", { text = true, timeout = 10 }) end
--- How one may sign in (GET /v1/auth/methods).
-- @treturn[1] table `{local_login, oidc}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:auth_methods() return get(self, "auth_methods", "/v1/auth/methods") end
--- Who the token is (GET /v1/whoami).
-- @treturn[1] table the Identity: `{kind, tenant_id, key_id,
-- acting_subject, capabilities, ...}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:whoami() return get(self, "whoami", "/v1/whoami") end
--- The runtime templates this credential may use (GET /v1/templates).
-- @treturn[1] table `{templates = {ids...}}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:templates() return get(self, "templates", "/v1/templates") end
--- A monitoring snapshot (GET /v1/monitoring).
-- @treturn[1] table `{scope, nodes_visible, metrics, nodes, runtimes}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:monitoring() return get(self, "monitoring", "/v1/monitoring") end

--- Signs out (POST /v1/auth/logout).
-- @treturn[1] table `{}` (204)
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:logout() return transport.cp_request(self, "logout", "POST", "/v1/auth/logout") end

-- The browser sign-in routes answer redirects, which the client does not
-- follow: these return {status, location} for a caller that drives a
-- browser. The local backend does not emulate OIDC (404).
local function redirect(self, fname, path, query)
  local doc, resp = transport.cp_call(self, fname, "GET", path, { query = query, timeout = 30,
    capture = { "Location" } })
  if not doc then return nil, resp end
  return { status = resp.status, location = resp.headers.Location }, resp.request_id
end
--- The browser sign-in's first step (GET /v1/auth/oidc/login): the
-- redirect is returned, not followed (unsandboxd answers 404).
-- @tparam[opt] table query its query
-- @treturn[1] table `{status, location}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:oidc_login(query) return redirect(self, "oidc_login", "/v1/auth/oidc/login", query) end
--- The browser sign-in's callback (GET /v1/auth/oidc/callback), as
-- `oidc_login`.
-- @tparam[opt] table query
-- @treturn[1] table `{status, location}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:oidc_callback(query) return redirect(self, "oidc_callback", "/v1/auth/oidc/callback", query) end

return Manager
