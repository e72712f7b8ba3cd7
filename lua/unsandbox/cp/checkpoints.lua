--- The checkpoints of a session's workspace (spec §4.2, §8) as methods
-- of unsandbox.Manager: made (it needs a running runtime), listed,
-- restored (optionally checked by sha256) and deleted. The workspace is
-- the session key's, ensured first (leases.lua).
local core = require "unsandbox.core"
local check = require "unsandbox.check"
local transport = require "unsandbox.transport"

local Manager = {}   -- the methods this file adds to unsandbox.Manager

local function workspace_path(self, key, suffix)
  local ws, err = self:ensure_workspace(key)
  if not ws then return nil, err end
  return "/v1/workspaces/" .. ws.workspace_id .. suffix
end

local function checkpoint_id(fname, id)
  check.type(fname, "checkpoint_id", id, "string")
  if not core.cp.valid_checkpoint_id(id) then
    check.fail(fname, "checkpoint_id", "a checkpoint id ([a-z0-9][a-z0-9-]{0,62}) expected")
  end
  return id
end

local function simple(self, fname, key, method, suffix, o)
  local path, err = workspace_path(self, key, suffix)
  if not path then return nil, err end
  return transport.cp_request(self, fname, method, path, o)
end

--- POST …/checkpoints {} (needs a running runtime: 400 otherwise).
function Manager:checkpoint_workspace(key)
  return simple(self, "checkpoint_workspace", key, "POST", "/checkpoints", { body = {}, timeout = 150 })
end

function Manager:list_workspace_checkpoints(key)
  return simple(self, "list_workspace_checkpoints", key, "GET", "/checkpoints", nil)
end

--- POST …/checkpoints/{cp}/restore {sha256} or {}.
function Manager:restore_workspace(checkpoint_id_, sha256, key)
  checkpoint_id("restore_workspace", checkpoint_id_)
  check.type("restore_workspace", "sha256", sha256, "string", true)
  if sha256 == "" then sha256 = nil end
  return simple(self, "restore_workspace", key, "POST", "/checkpoints/" .. checkpoint_id_ .. "/restore",
    { body = { sha256 = sha256 }, timeout = 150 })
end

function Manager:delete_workspace_checkpoint(checkpoint_id_, key)
  checkpoint_id("delete_workspace_checkpoint", checkpoint_id_)
  return simple(self, "delete_workspace_checkpoint", key, "DELETE", "/checkpoints/" .. checkpoint_id_,
    nil)
end

return Manager
