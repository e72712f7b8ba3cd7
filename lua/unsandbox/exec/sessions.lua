--- Sessions (spec §4.2) as methods of every unsandbox.Client: a session
-- is a persistent sandbox that runs commands; created, listed, read,
-- deleted, run in, snapshotted, frozen and boosted here (its terminal is
-- exec/terminal.lua). Loaded on first use of one of them (public.lua): a
-- script that only runs code does not compile it. Each is declared in
-- public.lua, so it is also unsandbox.<name>(...) on the default client.
-- Internal module; its methods are documented as the Client's.
-- @classmod Client
local transport = require "unsandbox.transport"
local calls = require "unsandbox.exec.calls"
local check = require "unsandbox.check"
local execute = require "unsandbox.exec.execute"
local results = require "unsandbox.exec.results"

local Client = {}   -- the methods this file adds to unsandbox.Client

local by_id, destructive, with_id = calls.by_id, calls.destructive, calls.with_id

local SESSION_OPTIONS = { network_mode = true, ttl = true, shell = true, vcpu = true,
  input_files = true, timeout = true, multiplexer = true }

--- Sessions
-- @section sessions

--- Creates a session: a long-lived sandbox that runs commands, keeping
-- its files and background processes from one command to the next
-- until its ttl or `delete_session`.
-- @tparam[opt] table opts
-- @tparam[opt] string opts.shell the shell ("bash", ...)
-- @tparam[opt] string opts.multiplexer "tmux" or "screen" (freezing
-- needs one)
-- @tparam[opt] string opts.network_mode "zerotrust" (default) or "semitrusted"
-- @tparam[opt] integer opts.ttl seconds the session lives, 1..86400
-- @tparam[opt] integer opts.vcpu 1..8
-- @tparam[opt] table opts.input_files as for `execute_code`
-- @tparam[opt] number opts.timeout seconds of the request
-- @treturn[1] table the session's document: `id` (also `session_id`),
-- `status`, ..., `request_id`
-- @return[2] nil
-- @treturn[2] Error (validation: an input file that cannot be read)
-- @raise an unknown option, a value out of range
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

--- The sessions of this key.
-- @function list_sessions
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table a list of `{id, status, shell, network_mode, ...}`
-- @return[2] nil
-- @treturn[2] Error
Client.list_sessions = calls.list_of("sessions")
--- One session's document.
-- @function get_session
-- @tparam string id the session's id
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table the document, with request_id
-- @return[2] nil
-- @treturn[2] Error (http 404: no such session)
-- @raise id not an id (letters, digits, ".", "_", "-")
Client.get_session = by_id("GET", "/sessions/", "get_session")
--- Deletes a session (its processes end, its files go). The service may
-- answer with a sudo challenge (428): `on_sudo(err)` is then asked for
-- the one-time password (nil or "" gives up) and the request is sent
-- again with it; or a challenge already known is answered with
-- `challenge_id` and `otp`. The library never reads a terminal itself.
-- @function delete_session
-- @tparam string id
-- @tparam[opt] table opts `on_sudo(err)` -> otp, or `challenge_id` and
-- `otp`; `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error (http 428 with err.challenge_id when a challenge went
-- unanswered)
-- @raise id not an id, challenge_id without otp (or the other way)
Client.delete_session = destructive("DELETE", "/sessions/", "delete_session")

--- Runs a shell command in a session (POST /sessions/{id}/shell), in its
-- state: the files and background processes of earlier commands are
-- there.
-- @tparam string id the session's id
-- @tparam string command a shell line
-- @tparam[opt] table opts `timeout` (s: the command's limit; the request
-- waits 30 s more)
-- @treturn[1] table a result as `execute_code` gives it
-- @return[2] nil
-- @treturn[2] Error (http 404: no such session)
-- @raise id not an id, command not a string
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

--- Snapshots a session's files.
-- @function session_snapshot
-- @tparam string id the session's id
-- @tparam[opt] table opts `name`, `hot` (boolean: a hot snapshot), `timeout`
-- @treturn[1] table the snapshot's document: `id` (also `snapshot_id`), ...
-- @return[2] nil
-- @treturn[2] Error
Client.session_snapshot = calls.snapshot_of("session")

--- Freezes a session (its processes stopped, its files kept): a session
-- made with a multiplexer only.
-- @function freeze_session
-- @tparam string id
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error
Client.freeze_session = by_id("POST", "/sessions/", "freeze_session", "/freeze")
--- Unfreezes a frozen session.
-- @function unfreeze_session
-- @tparam string id
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error
Client.unfreeze_session = by_id("POST", "/sessions/", "unfreeze_session", "/unfreeze")
--- Returns a boosted session to its own vcpu.
-- @function unboost_session
-- @tparam string id
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error
Client.unboost_session = by_id("POST", "/sessions/", "unboost_session", "/unboost")

--- Raises the vcpu of the session's later commands.
-- @tparam string id
-- @tparam[opt=2] integer vcpu 1..8
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error
-- @raise id not an id, vcpu out of range
function Client:boost_session(id, vcpu, opts)
  check.id("boost_session", "id", id)
  vcpu = check.int_range("boost_session", "vcpu", vcpu, 1, 8) or 2
  opts = calls.plain("boost_session", opts)
  return calls.one(calls.post(self, "/sessions/" .. id .. "/boost", { vcpu = vcpu }, opts))
end

return Client
