--- What to do about a failure, where the client can tell: set as the
-- Error's hint (tostring shows it). The cases a new user meets first: a
-- URL with a path (`/v1` appended to either service's root), a URL that
-- is the other service's port, a refused key pair, and no credentials at
-- all. An https:// URL at a plain-HTTP server is the core's own message
-- (its TLS error says to use http://). Each rule is read from the
-- exchange (the service, the status, the route, the URL), never from the
-- server's text. Internal module.
local M = {}

-- Routes every execution API serves, whatever its keys hold: a 404 on
-- one means the URL is not an execution API.
local EXEC_ROUTES = {
  ["POST /execute"] = true, ["POST /execute/async"] = true, ["GET /jobs"] = true,
  ["GET /languages"] = true, ["GET /sessions"] = true, ["POST /sessions"] = true,
  ["GET /services"] = true, ["GET /snapshots"] = true, ["POST /keys/validate"] = true,
}

-- The path of a URL ("" for none or "/").
local function path_of(url)
  local path = url:match("^%a+://[^/]+(/.*)$") or ""
  return path == "/" and "" or path
end

local function root_of(url)
  return url:match("^(%a+://[^/]+)") or url
end

local NO_ACCOUNT = "no account? `unlua --local script.lua` (or `un --local ...`) runs against a "
  .. "local unsandboxd with keys of its own"

local exec = {}

function exec.credentials()
  return NO_ACCOUNT .. "; unsandbox.credentials() tells where keys are looked for"
end

function exec.http(err, url, route)
  local path = path_of(url)
  if (err.status == 404 or err.status == 401) and path ~= "" then
    return "the execution API's routes are at the root of its URL: use " .. root_of(url)
      .. " (without " .. path .. ")"
  end
  if err.status == 404 and EXEC_ROUTES[route] then
    return url .. " has no " .. route .. ": is it the execution API (UNSANDBOX_URL)? The Control "
      .. "Plane (SANDBOX_CONTROL_PLANE_URL) is another service, on another port"
  end
  if err.status == 401 then
    return "the key pair or its signature was refused: unsandbox.credentials() tells which "
      .. "public key was used; a URL that is not the execution API refuses every key"
  end
end

local cp = {}

function cp.credentials()
  return "set SANDBOX_TOKEN (and SANDBOX_CONTROL_PLANE_URL); " .. NO_ACCOUNT
end

function cp.http(err, url)
  local path = path_of(url)
  if (err.status == 404 or err.status == 401) and path:match("/v1/?$") then
    return "the Control Plane URL is its root: the client adds /v1 to every route; use "
      .. root_of(url)
  end
  if err.status == 401 then
    return "the token (SANDBOX_TOKEN) was refused; is " .. url .. " the Control Plane "
      .. "(SANDBOX_CONTROL_PLANE_URL)? The execution API (UNSANDBOX_URL) is another service, on "
      .. "another port, and refuses every token"
  end
end

local POLICIES = { exec = exec, cp = cp }

--- Adds err.hint for a failure of a call of service ("exec" or "cp") to
-- url's method and path, when a rule applies and err has none. Returns err.
function M.add(service, err, url, method, path)
  local p = POLICIES[service]
  if not p or err.hint then return err end
  if err.kind == "credentials" then err.hint = p.credentials()
  elseif err.kind == "http" and type(url) == "string" then
    err.hint = p.http(err, url, method .. " " .. (path:match("^[^?]*")))
  end
  return err
end

return M
