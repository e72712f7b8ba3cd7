--- The checkpoints of a session's workspace (spec §4.2, §8) as methods
-- of unsandbox.Manager: made (it needs a running runtime), listed,
-- restored (optionally checked by sha256) and deleted. The workspace is
-- the session key's, ensured first (leases.lua).
-- @classmod Manager
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

--- Checkpoints of a workspace
-- @section checkpoints

--- Checkpoints the session's workspace: a gzip tar of its files in the
-- checkpoint store (POST …/checkpoints; 150 s).
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table the Checkpoint: `{checkpoint_id, workspace_id,
-- bucket, key, bytes, sha256, content_type}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error (http 400: no running runtime)
function Manager:checkpoint_workspace(key)
  return simple(self, "checkpoint_workspace", key, "POST", "/checkpoints", { body = {}, timeout = 150 })
end

--- The checkpoints of the session's workspace.
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table `{workspace_id, checkpoints = {{checkpoint_id, key,
-- bytes, last_modified}, ...}}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:list_workspace_checkpoints(key)
  return simple(self, "list_workspace_checkpoints", key, "GET", "/checkpoints", nil)
end

--- Restores a checkpoint into the session's workspace (needs a running
-- runtime; 150 s).
-- @tparam string checkpoint_id_ a checkpoint id (`[a-z0-9][a-z0-9-]{0,62}`)
-- @tparam[opt] string sha256 the checkpoint's expected digest (checked
-- by the server; nil or "": none)
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table `{checkpoint_id, workspace_id, bucket, key, sha256,
-- files, bytes, ...}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error (http 400: no runtime, or the sha256 does not match;
-- 404: no such checkpoint)
-- @raise a malformed checkpoint id, sha256 not a string
function Manager:restore_workspace(checkpoint_id_, sha256, key)
  checkpoint_id("restore_workspace", checkpoint_id_)
  check.type("restore_workspace", "sha256", sha256, "string", true)
  if sha256 == "" then sha256 = nil end
  return simple(self, "restore_workspace", key, "POST", "/checkpoints/" .. checkpoint_id_ .. "/restore",
    { body = { sha256 = sha256 }, timeout = 150 })
end

--- Deletes a checkpoint of the session's workspace.
-- @tparam string checkpoint_id_ a checkpoint id (`[a-z0-9][a-z0-9-]{0,62}`)
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table `{workspace_id, checkpoint_id, deleted = true,
-- history_retained}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error (http 404)
-- @raise a malformed checkpoint id
function Manager:delete_workspace_checkpoint(checkpoint_id_, key)
  checkpoint_id("delete_workspace_checkpoint", checkpoint_id_)
  return simple(self, "delete_workspace_checkpoint", key, "DELETE", "/checkpoints/" .. checkpoint_id_,
    nil)
end

return Manager
