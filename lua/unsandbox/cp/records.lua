--- The workspace and runtime records of the Control Plane (spec §4.2,
-- §8) as methods of unsandbox.Manager, by id rather than by session key:
-- the lists, one runtime, its deletion and token, and a runtime made for a
-- workspace with no lease kept (the session-key flows are leases.lua).
local core = require "unsandbox.core"
local check = require "unsandbox.check"
local transport = require "unsandbox.transport"

local Manager = {}   -- the methods this file adds to unsandbox.Manager

local function get(self, fname, path)
  return transport.cp_request(self, fname, "GET", path)
end

local function send(self, fname, method, path, body, o)
  o = o or {}
  o.body = body
  return transport.cp_request(self, fname, method, path, o)
end

-- an id of the caller's that goes into a path, in its shape (core/lease.h)
local function id_arg(fname, arg, v, valid, what)
  check.type(fname, arg, v, "string")
  if not valid(v) then check.fail(fname, arg, what .. " expected") end
  return v
end
local function sandbox_id(fname, v)
  return id_arg(fname, "sandbox_id", v, core.cp.valid_sandbox_id, "a sandbox id (sb-<12 hex>)")
end

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
  id_arg("create_runtime", "workspace_id", workspace_id, core.cp.valid_workspace_id,
    "a workspace id (ws-<12 hex>)")
  check.type("create_runtime", "template", template, "string", true)
  check.type("create_runtime", "wait", wait, "boolean", true)
  return send(self, "create_runtime", "POST", "/v1/sandboxes",
    { workspace_id = workspace_id, template_id = template, wait = wait }, { timeout = 130 })
end

return Manager
