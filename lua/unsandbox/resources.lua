--- Sessions, services and snapshots as Client methods (spec section 4.2
-- to 4.4's core routes), loaded on first use of one of them (public.lua):
-- a script that only runs code does not compile them. Each is declared in
-- public.lua, so it is also unsandbox.<name>(...) on the default client.
-- Internal module; its methods are documented as the Client's.
-- @submodule unsandbox
local transport = require "unsandbox.transport"
local calls = require "unsandbox.calls"
local check = require "unsandbox.check"
local execute = require "unsandbox.execute"
local results = require "unsandbox.results"
local shape = require "unsandbox.shape"

local M = {}

local wait_started = calls.wait_started
local list_of, by_id, destructive, with_id = calls.list_of, calls.by_id, calls.destructive, calls.with_id

--- Adds the methods to Client.
function M.install(Client)
  local SESSION_OPTIONS = { network_mode = true, ttl = true, shell = true, vcpu = true,
    input_files = true, timeout = true }

  --- Creates a session: a persistent sandbox that runs commands.
  function Client:create_session(opts)
    opts = check.options("create_session", opts, SESSION_OPTIONS)
    local body, err = execute.sandbox_fields("create_session", opts)
    if not body then return nil, err end
    body.ttl = check.int_range("create_session", "ttl", opts.ttl, 1, 86400)
    body.shell = check.type("create_session", "shell", opts.shell, "string", true)
    check.positive("create_session", "timeout", opts.timeout)
    local doc, rid = transport.request(self, "POST", "/sessions", body, calls.request_opts(opts))
    return with_id(doc, rid, "session_id")
  end

  --- The sessions of this key: a list of {id, status, shell, network_mode, ...}.
  -- @function Client:list_sessions
  Client.list_sessions = list_of("sessions")
  --- One session's document (with request_id).
  -- @function Client:get_session
  Client.get_session = by_id("GET", "/sessions/", "get_session")
  --- Deletes a session. opts: on_sudo, or challenge_id and otp (see above).
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

  local SERVICE_OPTIONS = { name = true, bootstrap = true, bootstrap_content = true, ports = true,
    custom_domains = true, network_mode = true, vcpu = true, input_files = true, timeout = true }

  --- Creates a service: a persistent sandbox whose bootstrap command keeps
  -- running.
  function Client:create_service(opts)
    check.options("create_service", opts, SERVICE_OPTIONS, true)
    check.nonempty("create_service", "name", opts.name)
    if opts.bootstrap == nil and opts.bootstrap_content == nil then
      check.fail("create_service", "bootstrap", "a bootstrap command or bootstrap_content is required")
    end
    local body, err = execute.sandbox_fields("create_service", opts)
    if not body then return nil, err end
    body.name = opts.name
    body.bootstrap = check.type("create_service", "bootstrap", opts.bootstrap, "string", true)
    body.bootstrap_content = check.type("create_service", "bootstrap_content", opts.bootstrap_content, "string", true)
    body.ports = check.type("create_service", "ports", opts.ports, "table", true)
    body.custom_domains = check.type("create_service", "custom_domains", opts.custom_domains, "table", true)
    check.positive("create_service", "timeout", opts.timeout)
    local doc, rid = transport.request(self, "POST", "/services", body, calls.request_opts(opts))
    return with_id(doc, rid, "service_id")
  end

  --- The services of this key: a list of {id, name, status, ...}.
  -- @function Client:list_services
  Client.list_services = list_of("services")
  --- One service's document (with request_id).
  -- @function Client:get_service
  Client.get_service = by_id("GET", "/services/", "get_service")
  --- Deletes a service. opts: on_sudo, or challenge_id and otp.
  -- @function Client:delete_service
  Client.delete_service = destructive("DELETE", "/services/", "delete_service")

  --- The service's bootstrap output; opts.all asks for all of it.
  function Client:service_logs(id, opts)
    check.id("service_logs", "id", id)
    opts = calls.plain("service_logs", opts, { all = true, timeout = true })
    local all = check.type("service_logs", "all", opts.all, "boolean", true)
    local doc, rid = transport.request(self, "GET", "/services/" .. id .. "/logs" .. (all and "?all=true" or ""),
      nil, calls.request_opts(opts))
    if not doc then return nil, rid end
    local log = doc.log or doc.logs or ""
    if type(log) ~= "string" then return shape.fail(rid, "'log' is not a string") end
    return log
  end

  --- Runs a command in a running service: submitted as a job and waited for.
  function Client:service_execute(id, command, opts)
    check.id("service_execute", "id", id)
    check.type("service_execute", "command", command, "string")
    opts = check.options("service_execute", opts, { timeout = true, on_poll = true })
    check.positive("service_execute", "timeout", opts.timeout)
    check.type("service_execute", "on_poll", opts.on_poll, "function", true)
    local timeout = opts.timeout or 30
    local doc, rid = transport.request(self, "POST", "/services/" .. id .. "/execute",
      { command = command, timeout = math.floor(timeout * 1000) })
    if not doc then return nil, rid end
    -- the service answers 202 {job_id}, usually without a status
    if doc.job_id == nil or results.TERMINAL[doc.status] then return results.normalise(doc, rid) end
    local job_id, bad = results.pending_id(doc, rid)
    if not job_id then return nil, bad end
    return wait_started(self, job_id, timeout + 30, opts.on_poll)
  end

  local SNAPSHOT_OPTIONS = { name = true, hot = true, timeout = true }

  local function snapshot_of(kind)
    local fname = kind .. "_snapshot"
    return function(self, id, opts)
      check.id(fname, "id", id)
      opts = calls.plain(fname, opts, SNAPSHOT_OPTIONS)
      local body = { name = check.type(fname, "name", opts.name, "string", true),
                     hot = check.type(fname, "hot", opts.hot, "boolean", true) or false }
      local doc, rid = transport.request(self, "POST", "/" .. kind .. "s/" .. id .. "/snapshot", body,
        calls.request_opts(opts))
      return with_id(doc, rid, "snapshot_id")
    end
  end

  --- Snapshots a session. opts: name, hot (boolean). Returns the snapshot's document with its id.
  -- @function Client:session_snapshot
  Client.session_snapshot = snapshot_of("session")
  --- Snapshots a service. opts: name, hot (boolean). Returns the snapshot's document with its id.
  -- @function Client:service_snapshot
  Client.service_snapshot = snapshot_of("service")
  --- The snapshots of this key: a list of {id, name, source_type, source_id, size_bytes, ...}.
  -- @function Client:list_snapshots
  Client.list_snapshots = list_of("snapshots")
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
end

return M
