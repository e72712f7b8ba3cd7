--- Services (spec §4.3) as methods of every unsandbox.Client: a service
-- is a persistent sandbox whose bootstrap command keeps running; created,
-- listed, read, deleted, run in, snapshotted, frozen, locked, changed,
-- redeployed, and its env vault. Loaded on first use of one of them
-- (public.lua). Each is declared in public.lua, so it is also
-- unsandbox.<name>(...) on the default client. The destructive routes
-- (delete, unlock) take the sudo options. Internal module; its methods are
-- documented as the Client's.
-- @submodule unsandbox
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
Client.list_services = calls.list_of("services")
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
  return calls.wait_started(self, job_id, timeout + 30, opts.on_poll)
end

--- Snapshots a service. opts: name, hot (boolean). Returns the snapshot's document with its id.
-- @function Client:service_snapshot
Client.service_snapshot = calls.snapshot_of("service")

-- Administration --

--- Freezes a service (its bootstrap stopped, its files kept).
-- @function Client:freeze_service
Client.freeze_service = by_id("POST", "/services/", "freeze_service", "/freeze")
--- Unfreezes a frozen service (its bootstrap starts again).
-- @function Client:unfreeze_service
Client.unfreeze_service = by_id("POST", "/services/", "unfreeze_service", "/unfreeze")
--- Locks a service against deletion.
-- @function Client:lock_service
Client.lock_service = by_id("POST", "/services/", "lock_service", "/lock")
--- Unlocks a service. opts: on_sudo, or challenge_id and otp.
-- @function Client:unlock_service
Client.unlock_service = destructive("POST", "/services/", "unlock_service", "/unlock")

local UPDATE_OPTIONS = { vcpu = true, unfreeze_on_demand = true, show_freeze_page = true, timeout = true }
local DOMAINS = { add = true, remove = true, replace = true }
local DOMAIN_OPTIONS = { add = true, remove = true, replace = true, timeout = true }
local REDEPLOY_OPTIONS = { bootstrap = true, bootstrap_content = true, input_files = true, timeout = true }

--- PATCH of vcpu (1-8), unfreeze_on_demand, show_freeze_page.
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

--- Changes the vcpu of a service (PATCH {vcpu}). opts: timeout.
function Client:resize_service(id, vcpu, opts)
  check.int_range("resize_service", "vcpu", vcpu, 1, 8)
  check.type("resize_service", "vcpu", vcpu, "number")
  opts = calls.plain("resize_service", opts)
  return Client.update_service(self, id, { vcpu = vcpu, timeout = opts.timeout })
end

--- Custom domains: exactly one of add, remove, replace (lists of names).
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

--- {has_vault, count, updated_at}: never the values.
-- @function Client:get_service_env
Client.get_service_env = by_id("GET", "/services/", "get_service_env", "/env")

--- Replaces the vault: a .env text, or a table {NAME = value}.
function Client:set_service_env(id, env, opts)
  check.id("set_service_env", "id", id)
  local text = env_text("set_service_env", env)
  return put_text(self, "/services/" .. id .. "/env", text, calls.plain("set_service_env", opts))
end

--- The vault's .env text.
function Client:export_service_env(id, opts)
  check.id("export_service_env", "id", id)
  opts = calls.plain("export_service_env", opts)
  local doc, rid = calls.post(self, "/services/" .. id .. "/env/export", nil, opts)
  if not doc then return nil, rid end
  if type(doc.env) ~= "string" then return shape.fail(rid, "'env' is not a string") end
  return doc.env
end

--- Deletes the service's env vault.
-- @function Client:delete_service_env
Client.delete_service_env = by_id("DELETE", "/services/", "delete_service_env", "/env")

return Client
