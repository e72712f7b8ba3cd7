--- Snapshots (spec §4.4) as methods of every unsandbox.Client: listed,
-- read, deleted, restored, locked, made of a session or a service, and
-- cloned into a new one (a session's or a service's own snapshot is
-- session_snapshot / service_snapshot). Loaded on first use of one of them
-- (public.lua). Each is declared in public.lua, so it is also
-- unsandbox.<name>(...) on the default client. Internal module; its
-- methods are documented as the Client's.
-- @classmod Client
local calls = require "unsandbox.exec.calls"
local check = require "unsandbox.check"

local Client = {}   -- the methods this file adds to unsandbox.Client

local by_id, destructive = calls.by_id, calls.destructive

--- Snapshots
-- @section snapshots

--- The snapshots of this key.
-- @function list_snapshots
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table a list of `{id, name, source_type, source_id,
-- size_bytes, ...}`
-- @return[2] nil
-- @treturn[2] Error (http 403: snapshots are not in the free tier)
Client.list_snapshots = calls.list_of("snapshots")
--- One snapshot's document.
-- @function get_snapshot
-- @tparam string id the snapshot's id
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table `{id, name, source_type, source_id, status,
-- size_bytes, created_at, hot, locked, request_id}`
-- @return[2] nil
-- @treturn[2] Error (http 404: no such snapshot)
Client.get_snapshot = by_id("GET", "/snapshots/", "get_snapshot")
--- Deletes a snapshot (a locked one must be unlocked first); may meet a
-- sudo challenge, as `delete_session` does.
-- @function delete_snapshot
-- @tparam string id the snapshot's id
-- @tparam[opt] table opts `on_sudo(err)` -> otp, or `challenge_id` and
-- `otp` (see `delete_session`); `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error
Client.delete_snapshot = destructive("DELETE", "/snapshots/", "delete_snapshot")
--- Restores a snapshot into the session or service it was taken of.
-- @function restore_snapshot
-- @tparam string id the snapshot's id
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error
Client.restore_snapshot = by_id("POST", "/snapshots/", "restore_snapshot", "/restore")
--- Locks a snapshot against deletion.
-- @function lock_snapshot
-- @tparam string id the snapshot's id
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error
Client.lock_snapshot = by_id("POST", "/snapshots/", "lock_snapshot", "/lock")
--- Unlocks a snapshot; may meet a sudo challenge.
-- @function unlock_snapshot
-- @tparam string id the snapshot's id
-- @tparam[opt] table opts `on_sudo(err)` -> otp, or `challenge_id` and
-- `otp` (see `delete_session`); `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error
Client.unlock_snapshot = destructive("POST", "/snapshots/", "unlock_snapshot", "/unlock")

local SOURCE_TYPES = { session = true, service = true }
local CLONE_TYPES = { session = true, service = true }
local CLONE_OPTIONS = { type = true, name = true, shell = true, ports = true, timeout = true }
local CREATE_SNAPSHOT_OPTIONS = { source_type = true, source_id = true, name = true, hot = true,
  timeout = true }

--- Snapshots a session or a service by its id (POST /snapshots).
-- @tparam table opts `source_type` ("session" or "service"), `source_id`,
-- `name`, `hot` (boolean), `timeout`
-- @treturn[1] table the snapshot's document: `id` (also `snapshot_id`), ...
-- @return[2] nil
-- @treturn[2] Error
-- @raise a missing or unknown source_type, source_id not an id
function Client:create_snapshot(opts)
  opts = calls.plain("create_snapshot", opts, CREATE_SNAPSHOT_OPTIONS)
  check.type("create_snapshot", "source_type", opts.source_type, "string")
  check.oneof("create_snapshot", "source_type", opts.source_type, SOURCE_TYPES)
  check.id("create_snapshot", "source_id", opts.source_id)
  local doc, rid = calls.post(self, "/snapshots", {
    source_type = opts.source_type, source_id = opts.source_id,
    name = check.type("create_snapshot", "name", opts.name, "string", true),
    hot = check.type("create_snapshot", "hot", opts.hot, "boolean", true) }, opts)
  return calls.with_id(doc, rid, "snapshot_id")
end

--- A new session or service made from a snapshot.
-- @tparam string id the snapshot's id
-- @tparam table opts `type` ("session" or "service"), `name`, `shell`,
-- `ports` (a list of port numbers), `timeout`
-- @treturn[1] table the new one's document: `id` (also `session_id` or
-- `service_id`), ...
-- @return[2] nil
-- @treturn[2] Error
-- @raise a missing or unknown type, a port out of 1..65535
function Client:clone_snapshot(id, opts)
  check.id("clone_snapshot", "id", id)
  opts = calls.plain("clone_snapshot", opts, CLONE_OPTIONS)
  check.type("clone_snapshot", "type", opts.type, "string")
  check.oneof("clone_snapshot", "type", opts.type, CLONE_TYPES)
  local doc, rid = calls.post(self, "/snapshots/" .. id .. "/clone", {
    type = opts.type, name = check.type("clone_snapshot", "name", opts.name, "string", true),
    shell = check.type("clone_snapshot", "shell", opts.shell, "string", true),
    ports = calls.list_arg("clone_snapshot", "ports", opts.ports, true) }, opts)
  return calls.with_id(doc, rid, opts.type .. "_id")
end

return Client
