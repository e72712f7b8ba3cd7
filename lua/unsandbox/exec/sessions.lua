--- Sessions (spec §4.2) as methods of every unsandbox.Client: a session
-- is a persistent sandbox that runs commands; created, listed, read,
-- deleted, run in, snapshotted, frozen and boosted here (its terminal is
-- exec/terminal.lua). Loaded on first use of one of them (public.lua): a
-- script that only runs code does not compile it. Each is declared in
-- public.lua, so it is also unsandbox.<name>(...) on the default client.
-- Internal module; its methods are documented as the Client's.
-- @submodule unsandbox
local transport = require "unsandbox.transport"
local calls = require "unsandbox.exec.calls"
local check = require "unsandbox.check"
local execute = require "unsandbox.exec.execute"
local results = require "unsandbox.exec.results"

local Client = {}   -- the methods this file adds to unsandbox.Client

local by_id, destructive, with_id = calls.by_id, calls.destructive, calls.with_id

local SESSION_OPTIONS = { network_mode = true, ttl = true, shell = true, vcpu = true,
  input_files = true, timeout = true, multiplexer = true }

--- Creates a session: a persistent sandbox that runs commands.
function Client:create_session(opts)
  opts = check.options("create_session", opts, SESSION_OPTIONS)
  local body, err = execute.sandbox_fields("create_session", opts)
  if not body then return nil, err end
  body.ttl = check.int_range("create_session", "ttl", opts.ttl, 1, 86400)
  body.shell = check.type("create_session", "shell", opts.shell, "string", true)
  body.multiplexer = check.type("create_session", "multiplexer", opts.multiplexer, "string", true)
  check.positive("create_session", "timeout", opts.timeout)
  local doc, rid = transport.request(self, "POST", "/sessions", body, calls.request_opts(opts))
  return with_id(doc, rid, "session_id")
end

--- The sessions of this key: a list of {id, status, shell, network_mode, ...}.
-- @function Client:list_sessions
Client.list_sessions = calls.list_of("sessions")
--- One session's document (with request_id).
-- @function Client:get_session
Client.get_session = by_id("GET", "/sessions/", "get_session")
--- Deletes a session. opts: on_sudo(err) asked for the one-time password
-- of a sudo challenge, or challenge_id and otp to answer one.
-- @function Client:delete_session
Client.delete_session = destructive("DELETE", "/sessions/", "delete_session")

--- Runs a shell command in a session; returns a result like execute_code.
function Client:session_execute(id, command, opts)
  check.id("session_execute", "id", id)
  check.type("session_execute", "command", command, "string")
  opts = check.options("session_execute", opts, { timeout = true })
  check.positive("session_execute", "timeout", opts.timeout)
  local body = { command = command, timeout = opts.timeout and math.floor(opts.timeout * 1000) or nil }
  local doc, rid = transport.request(self, "POST", "/sessions/" .. id .. "/shell", body,
    { timeout = opts.timeout and opts.timeout + 30 })
  if not doc then return nil, rid end
  return results.normalise(doc, rid)
end

--- Snapshots a session. opts: name, hot (boolean). Returns the snapshot's document with its id.
-- @function Client:session_snapshot
Client.session_snapshot = calls.snapshot_of("session")

--- Freezes a session (its processes stopped, its files kept).
-- @function Client:freeze_session
Client.freeze_session = by_id("POST", "/sessions/", "freeze_session", "/freeze")
--- Unfreezes a frozen session.
-- @function Client:unfreeze_session
Client.unfreeze_session = by_id("POST", "/sessions/", "unfreeze_session", "/unfreeze")
--- Returns a boosted session to its own vcpu.
-- @function Client:unboost_session
Client.unboost_session = by_id("POST", "/sessions/", "unboost_session", "/unboost")

--- Raises the vcpu of the session's later commands (default 2, 1-8).
function Client:boost_session(id, vcpu, opts)
  check.id("boost_session", "id", id)
  vcpu = check.int_range("boost_session", "vcpu", vcpu, 1, 8) or 2
  opts = calls.plain("boost_session", opts)
  return calls.one(calls.post(self, "/sessions/" .. id .. "/boost", { vcpu = vcpu }, opts))
end

return Client
