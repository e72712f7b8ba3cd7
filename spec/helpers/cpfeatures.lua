-- Which parts of the Control Plane a running unsandboxd serves, for specs
-- that must wait (pending, naming the route) while a part is being built:
-- an unmatched route answers 404 {"error":"not found"}, everything served
-- answers something else. Asks with the break-glass token on a scratch
-- session of its own, and releases the runtime it made.
local cp = require "spec.helpers.cp"

local M = {}

local function served(srv, method, path, token, body, headers)
  local st, doc = cp.request(srv, method, path, { token = token, body = body, headers = headers })
  return not (st == 404 and type(doc) == "table" and doc.error == "not found")
end

-- {mcp=, files=, checkpoints=, objects=} booleans.
function M.probe(srv)
  local sid = string.rep("f", 32)
  local _, ws = cp.request(srv, "POST", "/v1/workspaces", { token = srv.token, body = { session_id = sid } })
  local _, rt = cp.request(srv, "POST", "/v1/sandboxes", { token = srv.token,
    body = { workspace_id = ws.workspace_id } })
  local has = {
    mcp = served(srv, "POST", "/v1/sandboxes/" .. rt.id .. "/mcp", rt.access_token,
      { jsonrpc = "2.0", id = 1, method = "tools/list" }),
    files = served(srv, "GET", "/v1/workspaces/" .. ws.workspace_id .. "/files/list?path=.", ws.access_token),
    checkpoints = served(srv, "GET", "/v1/workspaces/" .. ws.workspace_id .. "/checkpoints", srv.token),
    objects = served(srv, "POST", "/v1/storage/tickets", srv.token, {}),
  }
  cp.request(srv, "DELETE", "/v1/sandboxes/" .. rt.id, { token = srv.token })
  return has
end

M.ROUTES = {
  mcp = "POST /v1/sandboxes/{sb}/mcp (issue 9)",
  files = "the workspace file routes /v1/workspaces/{ws}/files/* (issue 8)",
  checkpoints = "the checkpoint routes /v1/workspaces/{ws}/checkpoints (issue 8)",
  objects = "object storage /v1/storage/* (issue 9)",
}

-- Why a spec needing the named features must wait, or nil when all are
-- served (the spec calls busted's pending() with it: pending is a global
-- of spec files only).
function M.missing(has, ...)
  for _, f in ipairs { ... } do
    if not has[f] then return "unsandboxd does not serve " .. M.ROUTES[f] .. " yet" end
  end
  return nil
end

return M
