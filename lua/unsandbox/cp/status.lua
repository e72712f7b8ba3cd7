--- The Control Plane's operations and identity routes (spec §4.1, §8) as
-- methods of unsandbox.Manager: the health probes, the metrics text, the
-- caller's identity, the templates and monitoring, sign-out and the
-- browser sign-in routes. Every row of control-plane-routes.tsv is
-- reachable by name; these are the ones that concern the service itself.
local transport = require "unsandbox.transport"
local Error = require "unsandbox.errors"

local Manager = {}   -- the methods this file adds to unsandbox.Manager

local function get(self, fname, path, o)
  return transport.cp_request(self, fname, "GET", path, o)
end

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
function Manager:oidc_login(query) return redirect(self, "oidc_login", "/v1/auth/oidc/login", query) end
function Manager:oidc_callback(query) return redirect(self, "oidc_callback", "/v1/auth/oidc/callback", query) end

return Manager
