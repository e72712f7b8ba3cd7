--- The workspace and runtime records of the Control Plane (spec §4.2,
-- §8) as methods of unsandbox.Manager, by id rather than by session key:
-- the lists, one runtime, its deletion and token, and a runtime made for a
-- workspace with no lease kept (the session-key flows are leases.lua).
-- @classmod Manager
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

--- Workspaces and runtimes by id
-- @section records

--- The workspaces this credential may see (GET /v1/workspaces).
-- @treturn[1] table a list of `{id, status, created_at, last_used_at,
-- idle_expires_at, runtime_attached, tenant}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:list_workspaces() return list_of(self, "list_workspaces", "/v1/workspaces", "workspaces") end
--- The runtimes of the workspaces this credential owns (GET /v1/sandboxes).
-- @treturn[1] table a list of `{id, workspace_id, status, runtime_class,
-- template, created_at, expires_at}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:list_runtimes() return list_of(self, "list_runtimes", "/v1/sandboxes", "sandboxes") end

--- One runtime by id (GET /v1/sandboxes/{sb}).
-- @tparam string sb a sandbox (runtime) id, "sb-" and 12 hex
-- @treturn[1] table pending `{id, status = "pending", ...}`, live (the
-- Sandbox record) or gone `{id, status}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error (http 404)
-- @raise a malformed id
function Manager:get_runtime(sb)
  return get(self, "get_runtime", "/v1/sandboxes/" .. sandbox_id("get_runtime", sb))
end

--- Releases a runtime by id (`release_runtime` does it by session key).
-- @tparam string sb a sandbox (runtime) id, "sb-" and 12 hex
-- @treturn[1] table `{id, released = true}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error (http 404)
-- @raise a malformed id
function Manager:delete_runtime(sb)
  return send(self, "delete_runtime", "DELETE", "/v1/sandboxes/" .. sandbox_id("delete_runtime", sb))
end

--- A fresh token for a runtime (it also refreshes its idle clock).
-- @tparam string sb a sandbox (runtime) id, "sb-" and 12 hex
-- @treturn[1] table the ScopedToken: `{id, access_token,
-- access_token_expires_in}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error (http 404)
-- @raise a malformed id
function Manager:runtime_token(sb)
  return send(self, "runtime_token", "POST", "/v1/sandboxes/" .. sandbox_id("runtime_token", sb) .. "/token", {})
end

--- Creates a runtime for a workspace by id (POST /v1/sandboxes), keeping
-- no lease (`ensure_runtime` is the session-key form).
-- @tparam string workspace_id "ws-" and 12 hex
-- @tparam[opt="default"] string template
-- @tparam[opt=true] boolean wait false: answer at once (202) with a
-- pending runtime
-- @treturn[1] table the SandboxLease (or the pending one)
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
-- @raise a malformed workspace id
function Manager:create_runtime(workspace_id, template, wait)
  id_arg("create_runtime", "workspace_id", workspace_id, core.cp.valid_workspace_id,
    "a workspace id (ws-<12 hex>)")
  check.type("create_runtime", "template", template, "string", true)
  check.type("create_runtime", "wait", wait, "boolean", true)
  return send(self, "create_runtime", "POST", "/v1/sandboxes",
    { workspace_id = workspace_id, template_id = template, wait = wait }, { timeout = 130 })
end

return Manager
