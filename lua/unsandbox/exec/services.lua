--- Services (spec §4.3) as methods of every unsandbox.Client: a service
-- is a persistent sandbox whose bootstrap command keeps running; created,
-- listed, read, deleted, run in, snapshotted, frozen, locked, changed,
-- redeployed, and its env vault. Loaded on first use of one of them
-- (public.lua). Each is declared in public.lua, so it is also
-- unsandbox.<name>(...) on the default client. The destructive routes
-- (delete, unlock) take the sudo options. Internal module; its methods are
-- documented as the Client's.
-- @classmod Client
local transport = require "unsandbox.transport"
local calls = require "unsandbox.exec.calls"
local check = require "unsandbox.check"
local execute = require "unsandbox.exec.execute"
local results = require "unsandbox.exec.results"
local shape = require "unsandbox.shape"

local Client = {}   -- the methods this file adds to unsandbox.Client

local by_id, destructive, with_id = calls.by_id, calls.destructive, calls.with_id

local SERVICE_OPTIONS = { name = true, bootstrap = true, bootstrap_content = true, ports = true,
  custom_domains = true, network_mode = true, vcpu = true, input_files = true, timeout = true }

--- Services
-- @section services

--- Creates a service: a long-lived sandbox whose bootstrap command keeps
-- running, its ports served.
-- @tparam table opts
-- @tparam string opts.name the service's name
-- @tparam[opt] string opts.bootstrap the command that keeps running
-- (this or bootstrap_content is required)
-- @tparam[opt] string opts.bootstrap_content a script run as the bootstrap
-- @tparam[opt] table opts.ports a list of port numbers to serve
-- @tparam[opt] table opts.custom_domains a list of domain names
-- @tparam[opt] string opts.network_mode "zerotrust" (default) or "semitrusted"
-- @tparam[opt] integer opts.vcpu 1..8
-- @tparam[opt] table opts.input_files as for `execute_code`
-- @tparam[opt] number opts.timeout seconds of the request
-- @treturn[1] table the service's document: `id` (also `service_id`), ...
-- @return[2] nil
-- @treturn[2] Error
-- @raise opts missing, no name, neither bootstrap nor
-- bootstrap_content, an unknown option, a value of the wrong type
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

--- The services of this key.
-- @function list_services
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table a list of `{id, name, status, ...}`
-- @return[2] nil
-- @treturn[2] Error
Client.list_services = calls.list_of("services")
--- One service's document (`urls` of its ports, with unsandboxd).
-- @function get_service
-- @tparam string id the service's id
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table the document, with request_id
-- @return[2] nil
-- @treturn[2] Error (http 404: no such service)
-- @raise id not an id
Client.get_service = by_id("GET", "/services/", "get_service")
--- Deletes a service (a locked one must be unlocked first); may meet a
-- sudo challenge, as `delete_session` does.
-- @function delete_service
-- @tparam string id the service's id
-- @tparam[opt] table opts `on_sudo(err)` -> otp, or `challenge_id` and
-- `otp` (see `delete_session`); `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error
-- @raise id not an id
Client.delete_service = destructive("DELETE", "/services/", "delete_service")

--- The service's bootstrap output.
-- @tparam string id the service's id
-- @tparam[opt] table opts `all` (true: all of it, not the tail), `timeout`
-- @treturn[1] string the log text
-- @return[2] nil
-- @treturn[2] Error
-- @raise id not an id
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

--- Runs a shell command in a running service: submitted as a job and
-- waited for.
-- @tparam string id the service's id
-- @tparam string command a shell line
-- @tparam[opt] table opts `timeout` (s, the command's limit, default 30;
-- the wait allows 30 s more), `on_poll(job, attempt)`
-- @treturn[1] table a result as `execute_code` gives it
-- @return[2] nil
-- @treturn[2] Error (http 409: the service is not running)
-- @raise id not an id, command not a string
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
  return calls.wait_started(self, job_id, timeout + 30, opts.on_poll)
end

--- Snapshots a service's files.
-- @function service_snapshot
-- @tparam string id the service's id
-- @tparam[opt] table opts `name`, `hot` (boolean), `timeout`
-- @treturn[1] table the snapshot's document: `id` (also `snapshot_id`), ...
-- @return[2] nil
-- @treturn[2] Error
Client.service_snapshot = calls.snapshot_of("service")

-- Administration --

--- Freezes a service (its bootstrap stopped, its files kept).
-- @function freeze_service
-- @tparam string id the service's id
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error
Client.freeze_service = by_id("POST", "/services/", "freeze_service", "/freeze")
--- Unfreezes a frozen service (its bootstrap starts again).
-- @function unfreeze_service
-- @tparam string id the service's id
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error
Client.unfreeze_service = by_id("POST", "/services/", "unfreeze_service", "/unfreeze")
--- Locks a service against deletion.
-- @function lock_service
-- @tparam string id the service's id
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error
Client.lock_service = by_id("POST", "/services/", "lock_service", "/lock")
--- Unlocks a service; may meet a sudo challenge.
-- @function unlock_service
-- @tparam string id the service's id
-- @tparam[opt] table opts `on_sudo(err)` -> otp, or `challenge_id` and
-- `otp` (see `delete_session`); `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error
Client.unlock_service = destructive("POST", "/services/", "unlock_service", "/unlock")

local UPDATE_OPTIONS = { vcpu = true, unfreeze_on_demand = true, show_freeze_page = true, timeout = true }
local DOMAINS = { add = true, remove = true, replace = true }
local DOMAIN_OPTIONS = { add = true, remove = true, replace = true, timeout = true }
local REDEPLOY_OPTIONS = { bootstrap = true, bootstrap_content = true, input_files = true, timeout = true }

--- Changes a service's settings (PATCH /services/{id}).
-- @tparam string id the service's id
-- @tparam table opts at least one of `vcpu` (1..8),
-- `unfreeze_on_demand` (boolean), `show_freeze_page` (boolean); `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error
-- @raise none of the three given, a value out of range
function Client:update_service(id, opts)
  check.id("update_service", "id", id)
  opts = calls.plain("update_service", opts, UPDATE_OPTIONS)
  local body = {
    vcpu = check.int_range("update_service", "vcpu", opts.vcpu, 1, 8),
    unfreeze_on_demand = check.type("update_service", "unfreeze_on_demand", opts.unfreeze_on_demand, "boolean", true),
    show_freeze_page = check.type("update_service", "show_freeze_page", opts.show_freeze_page, "boolean", true),
  }
  if next(body) == nil then
    check.fail("update_service", "opts", "one of vcpu, unfreeze_on_demand, show_freeze_page expected")
  end
  return calls.one(transport.request(self, "PATCH", "/services/" .. id, body, calls.request_opts(opts)))
end

--- Changes the vcpu of a service (`update_service` with vcpu).
-- @tparam string id the service's id
-- @tparam integer vcpu 1..8
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error
-- @raise vcpu missing or out of range
function Client:resize_service(id, vcpu, opts)
  check.int_range("resize_service", "vcpu", vcpu, 1, 8)
  check.type("resize_service", "vcpu", vcpu, "number")
  opts = calls.plain("resize_service", opts)
  return Client.update_service(self, id, { vcpu = vcpu, timeout = opts.timeout })
end

--- Changes a service's custom domains.
-- @tparam string id the service's id
-- @tparam table opts exactly one of `add`, `remove`, `replace` (a list
-- of domain names); `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error
-- @raise none or two of add, remove, replace; a list with an empty name
function Client:set_service_domains(id, opts)
  check.id("set_service_domains", "id", id)
  opts = calls.plain("set_service_domains", opts, DOMAIN_OPTIONS)
  local key, list
  for k in pairs(DOMAINS) do
    if opts[k] ~= nil then
      if key then check.fail("set_service_domains", "opts", "only one of add, remove, replace") end
      key, list = k, calls.list_arg("set_service_domains", k, opts[k])
    end
  end
  if not key then check.fail("set_service_domains", "opts", "one of add, remove, replace expected") end
  return calls.one(transport.request(self, "PUT", "/services/" .. id .. "/domains",
    { [key == "replace" and "custom_domains" or key] = list }, calls.request_opts(opts)))
end

--- Restarts the bootstrap, with a new one and input files if given.
-- @tparam string id the service's id
-- @tparam[opt] table opts `bootstrap`, `bootstrap_content`,
-- `input_files` (as for `execute_code`), `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error
function Client:redeploy_service(id, opts)
  check.id("redeploy_service", "id", id)
  opts = calls.plain("redeploy_service", opts, REDEPLOY_OPTIONS)
  local body, err = execute.sandbox_fields("redeploy_service", { input_files = opts.input_files })
  if not body then return nil, err end
  body.bootstrap = check.type("redeploy_service", "bootstrap", opts.bootstrap, "string", true)
  body.bootstrap_content = check.type("redeploy_service", "bootstrap_content", opts.bootstrap_content, "string", true)
  return calls.one(calls.post(self, "/services/" .. id .. "/redeploy", body, opts))
end

-- The env vault --

-- The vault's PUT is text/plain, signed over the raw text (the C client
-- signs exactly the bytes it is given, so no JSON encoding is involved).
local function put_text(self, path, text, opts)
  return calls.one(transport.request(self, "PUT", path, nil, { raw = text, timeout = opts.timeout,
    headers = { ["Content-Type"] = "text/plain" } }))
end

-- A .env text from a string, or from a table {NAME = value} (sorted).
local function env_text(fname, env)
  if type(env) == "string" then return env end
  check.type(fname, "env", env, "table")
  local names = {}
  for k, v in pairs(env) do
    if type(k) ~= "string" then check.fail(fname, "env", "variable names must be strings") end
    if type(v) ~= "string" and type(v) ~= "number" then
      check.fail(fname, "env", "value of " .. k .. " must be a string or number")
    end
    if tostring(v):find("[\r\n]") then check.fail(fname, "env", "value of " .. k .. " holds a line break") end
    names[#names + 1] = k
  end
  table.sort(names)
  local lines = {}
  for i, k in ipairs(names) do lines[i] = k .. "=" .. tostring(env[k]) .. "\n" end
  return table.concat(lines)
end

--- About a service's env vault, never its values.
-- @function get_service_env
-- @tparam string id the service's id
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table `{has_vault, count, updated_at, request_id}`
-- @return[2] nil
-- @treturn[2] Error
Client.get_service_env = by_id("GET", "/services/", "get_service_env", "/env")

--- Replaces a service's env vault (PUT text/plain).
-- @tparam string id the service's id
-- @tparam string|table env a .env text, or `{NAME = value}` (values
-- strings or numbers, without line breaks; written sorted by name)
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error
-- @raise env neither a string nor a table, a value with a line break
function Client:set_service_env(id, env, opts)
  check.id("set_service_env", "id", id)
  local text = env_text("set_service_env", env)
  return put_text(self, "/services/" .. id .. "/env", text, calls.plain("set_service_env", opts))
end

--- A service's env vault as a .env text.
-- @tparam string id the service's id
-- @tparam[opt] table opts `timeout`
-- @treturn[1] string the .env text
-- @return[2] nil
-- @treturn[2] Error
function Client:export_service_env(id, opts)
  check.id("export_service_env", "id", id)
  opts = calls.plain("export_service_env", opts)
  local doc, rid = calls.post(self, "/services/" .. id .. "/env/export", nil, opts)
  if not doc then return nil, rid end
  if type(doc.env) ~= "string" then return shape.fail(rid, "'env' is not a string") end
  return doc.env
end

--- Deletes a service's env vault.
-- @function delete_service_env
-- @tparam string id the service's id
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error
Client.delete_service_env = by_id("DELETE", "/services/", "delete_service_env", "/env")

return Client
