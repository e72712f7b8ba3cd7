--- Snapshots (spec §4.4) as methods of every unsandbox.Client: listed,
-- read, deleted, restored, locked, made of a session or a service, and
-- cloned into a new one (a session's or a service's own snapshot is
-- session_snapshot / service_snapshot). Loaded on first use of one of them
-- (public.lua). Each is declared in public.lua, so it is also
-- unsandbox.<name>(...) on the default client. Internal module; its
-- methods are documented as the Client's.
-- @submodule unsandbox
local calls = require "unsandbox.exec.calls"
local check = require "unsandbox.check"

local Client = {}   -- the methods this file adds to unsandbox.Client

local by_id, destructive = calls.by_id, calls.destructive

--- The snapshots of this key: a list of {id, name, source_type, source_id, size_bytes, ...}.
-- @function Client:list_snapshots
Client.list_snapshots = calls.list_of("snapshots")
--- One snapshot's document (with request_id).
-- @function Client:get_snapshot
Client.get_snapshot = by_id("GET", "/snapshots/", "get_snapshot")
--- Deletes a snapshot (a locked one must be unlocked first). opts: on_sudo, or challenge_id and otp.
-- @function Client:delete_snapshot
Client.delete_snapshot = destructive("DELETE", "/snapshots/", "delete_snapshot")
--- Restores a snapshot into the session or service it was taken of.
-- @function Client:restore_snapshot
Client.restore_snapshot = by_id("POST", "/snapshots/", "restore_snapshot", "/restore")
--- Locks a snapshot against deletion.
-- @function Client:lock_snapshot
Client.lock_snapshot = by_id("POST", "/snapshots/", "lock_snapshot", "/lock")
--- Unlocks a snapshot. opts: on_sudo, or challenge_id and otp.
-- @function Client:unlock_snapshot
Client.unlock_snapshot = destructive("POST", "/snapshots/", "unlock_snapshot", "/unlock")

local SOURCE_TYPES = { session = true, service = true }
local CLONE_TYPES = { session = true, service = true }
local CLONE_OPTIONS = { type = true, name = true, shell = true, ports = true, timeout = true }
local CREATE_SNAPSHOT_OPTIONS = { source_type = true, source_id = true, name = true, hot = true,
  timeout = true }

--- POST /snapshots {source_type, source_id, name?, hot?}.
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

--- A new session or service (opts.type) from a snapshot.
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
