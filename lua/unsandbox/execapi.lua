--- The rest of the execution API's routes (spec section 4) as Client
-- methods: session power, service administration and env vault, snapshot
-- creation and cloning, images. Kept apart from init.lua, which installs
-- them with install(Client) on first use of one of them (public.lua),
-- with the shapes of a call of calls.lua; each is declared in public.lua, so
-- it is also unsandbox.<name>(...) on the default client. Same conventions as the rest of the facade: misuse
-- raises at the caller's line, expected failures return nil, Error, and
-- the destructive routes (unlock, image delete) take the sudo options.
-- Internal module; its methods are documented as the Client's.
-- @submodule unsandbox
local transport = require "unsandbox.transport"
local calls = require "unsandbox.calls"
local check = require "unsandbox.check"
local execute = require "unsandbox.execute"
local shape = require "unsandbox.shape"

local M = {}

local VISIBILITY = { private = true, unlisted = true, public = true }
local IMAGE_LISTS = { all = true, owned = true, shared = true, public = true }
local CLONE_TYPES = { session = true, service = true }
local SOURCE_TYPES = { session = true, service = true }
local IMAGE_SOURCES = { service = true, snapshot = true }

-- Each function's options, timeout (s, the call's) among them.
local function opts_of(fname, opts, allowed)
  return calls.plain(fname, opts, allowed or calls.PLAIN)
end

-- A list of strings (domains, keys) or of ports, checked item by item.
local function list_arg(fname, arg, v, ports)
  if v == nil then return nil end
  check.type(fname, arg, v, "table")
  if not shape.is_list(v) then check.fail(fname, arg, "a list expected") end
  for i, x in ipairs(v) do
    if ports then check.int_range(fname, arg .. "[" .. i .. "]", x, 1, 65535)
    else check.nonempty(fname, arg .. "[" .. i .. "]", x) end
  end
  return setmetatable(v, require("cjson").array_mt)
end

-- POST path with body ({} when none) and the call's options.
local function post(self, path, body, opts)
  return transport.request(self, "POST", path, body or {}, calls.request_opts(opts or {}))
end

local function sessions(Client, h)
  --- Freezes a session (its processes stopped, its files kept).
  -- @function Client:freeze_session
  Client.freeze_session = h.by_id("POST", "/sessions/", "freeze_session", "/freeze")
  --- Unfreezes a frozen session.
  -- @function Client:unfreeze_session
  Client.unfreeze_session = h.by_id("POST", "/sessions/", "unfreeze_session", "/unfreeze")
  --- Returns a boosted session to its own vcpu.
  -- @function Client:unboost_session
  Client.unboost_session = h.by_id("POST", "/sessions/", "unboost_session", "/unboost")
  --- Raises the vcpu of the session's later commands (default 2, 1-8).
  function Client:boost_session(id, vcpu, opts)
    check.id("boost_session", "id", id)
    vcpu = check.int_range("boost_session", "vcpu", vcpu, 1, 8) or 2
    opts = opts_of("boost_session", opts)
    return transport.one(post(self, "/sessions/" .. id .. "/boost", { vcpu = vcpu }, opts))
  end
end

local UPDATE_OPTIONS = { vcpu = true, unfreeze_on_demand = true, show_freeze_page = true, timeout = true }
local DOMAINS = { add = true, remove = true, replace = true }
local DOMAIN_OPTIONS = { add = true, remove = true, replace = true, timeout = true }
local REDEPLOY_OPTIONS = { bootstrap = true, bootstrap_content = true, input_files = true, timeout = true }

local function services(Client, h)
  --- Freezes a service (its bootstrap stopped, its files kept).
  -- @function Client:freeze_service
  Client.freeze_service = h.by_id("POST", "/services/", "freeze_service", "/freeze")
  --- Unfreezes a frozen service (its bootstrap starts again).
  -- @function Client:unfreeze_service
  Client.unfreeze_service = h.by_id("POST", "/services/", "unfreeze_service", "/unfreeze")
  --- Locks a service against deletion.
  -- @function Client:lock_service
  Client.lock_service = h.by_id("POST", "/services/", "lock_service", "/lock")
  --- Unlocks a service. opts: on_sudo, or challenge_id and otp.
  -- @function Client:unlock_service
  Client.unlock_service = h.destructive("POST", "/services/", "unlock_service", "/unlock")

  --- PATCH of vcpu (1-8), unfreeze_on_demand, show_freeze_page.
  function Client:update_service(id, opts)
    check.id("update_service", "id", id)
    opts = opts_of("update_service", opts, UPDATE_OPTIONS)
    local body = {
      vcpu = check.int_range("update_service", "vcpu", opts.vcpu, 1, 8),
      unfreeze_on_demand = check.type("update_service", "unfreeze_on_demand", opts.unfreeze_on_demand, "boolean", true),
      show_freeze_page = check.type("update_service", "show_freeze_page", opts.show_freeze_page, "boolean", true),
    }
    if next(body) == nil then check.fail("update_service", "opts", "one of vcpu, unfreeze_on_demand, show_freeze_page expected") end
    return transport.one(transport.request(self, "PATCH", "/services/" .. id, body, calls.request_opts(opts)))
  end

  --- Changes the vcpu of a service (PATCH {vcpu}). opts: timeout.
  function Client:resize_service(id, vcpu, opts)
    check.int_range("resize_service", "vcpu", vcpu, 1, 8)
    check.type("resize_service", "vcpu", vcpu, "number")
    opts = opts_of("resize_service", opts)
    return Client.update_service(self, id, { vcpu = vcpu, timeout = opts.timeout })
  end

  --- Custom domains: exactly one of add, remove, replace (lists of names).
  function Client:set_service_domains(id, opts)
    check.id("set_service_domains", "id", id)
    opts = opts_of("set_service_domains", opts, DOMAIN_OPTIONS)
    local key, list
    for k in pairs(DOMAINS) do
      if opts[k] ~= nil then
        if key then check.fail("set_service_domains", "opts", "only one of add, remove, replace") end
        key, list = k, list_arg("set_service_domains", k, opts[k])
      end
    end
    if not key then check.fail("set_service_domains", "opts", "one of add, remove, replace expected") end
    return transport.one(transport.request(self, "PUT", "/services/" .. id .. "/domains",
      { [key == "replace" and "custom_domains" or key] = list }, calls.request_opts(opts)))
  end

  --- Restarts the bootstrap, with a new one and input files if given.
  function Client:redeploy_service(id, opts)
    check.id("redeploy_service", "id", id)
    opts = opts_of("redeploy_service", opts, REDEPLOY_OPTIONS)
    local body, err = execute.sandbox_fields("redeploy_service", { input_files = opts.input_files })
    if not body then return nil, err end
    body.bootstrap = check.type("redeploy_service", "bootstrap", opts.bootstrap, "string", true)
    body.bootstrap_content = check.type("redeploy_service", "bootstrap_content", opts.bootstrap_content, "string", true)
    return transport.one(post(self, "/services/" .. id .. "/redeploy", body, opts))
  end
end

-- The vault's PUT is text/plain, signed over the raw text (the C client
-- signs exactly the bytes it is given, so no JSON encoding is involved).
local function put_text(self, path, text, opts)
  return transport.one(transport.request(self, "PUT", path, nil, { raw = text, timeout = opts.timeout,
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

local function vault(Client, h)
  --- {has_vault, count, updated_at}: never the values.
  -- @function Client:get_service_env
  Client.get_service_env = h.by_id("GET", "/services/", "get_service_env", "/env")
  --- Replaces the vault: a .env text, or a table {NAME = value}.
  function Client:set_service_env(id, env, opts)
    check.id("set_service_env", "id", id)
    local text = env_text("set_service_env", env)
    return put_text(self, "/services/" .. id .. "/env", text, opts_of("set_service_env", opts))
  end
  --- The vault's .env text.
  function Client:export_service_env(id, opts)
    check.id("export_service_env", "id", id)
    opts = opts_of("export_service_env", opts)
    local doc, rid = post(self, "/services/" .. id .. "/env/export", nil, opts)
    if not doc then return nil, rid end
    if type(doc.env) ~= "string" then return shape.fail(rid, "'env' is not a string") end
    return doc.env
  end
  --- Deletes the service's env vault.
  -- @function Client:delete_service_env
  Client.delete_service_env = h.by_id("DELETE", "/services/", "delete_service_env", "/env")
end

local CLONE_OPTIONS = { type = true, name = true, shell = true, ports = true, timeout = true }
local CREATE_SNAPSHOT_OPTIONS = { source_type = true, source_id = true, name = true, hot = true,
  timeout = true }

local function snapshots(Client, h)
  --- POST /snapshots {source_type, source_id, name?, hot?}.
  function Client:create_snapshot(opts)
    opts = opts_of("create_snapshot", opts, CREATE_SNAPSHOT_OPTIONS)
    check.type("create_snapshot", "source_type", opts.source_type, "string")
    check.oneof("create_snapshot", "source_type", opts.source_type, SOURCE_TYPES)
    check.id("create_snapshot", "source_id", opts.source_id)
    local doc, rid = post(self, "/snapshots", {
      source_type = opts.source_type, source_id = opts.source_id,
      name = check.type("create_snapshot", "name", opts.name, "string", true),
      hot = check.type("create_snapshot", "hot", opts.hot, "boolean", true) }, opts)
    return h.with_id(doc, rid, "snapshot_id")
  end
  --- A new session or service (opts.type) from a snapshot.
  function Client:clone_snapshot(id, opts)
    check.id("clone_snapshot", "id", id)
    opts = opts_of("clone_snapshot", opts, CLONE_OPTIONS)
    check.type("clone_snapshot", "type", opts.type, "string")
    check.oneof("clone_snapshot", "type", opts.type, CLONE_TYPES)
    local doc, rid = post(self, "/snapshots/" .. id .. "/clone", {
      type = opts.type, name = check.type("clone_snapshot", "name", opts.name, "string", true),
      shell = check.type("clone_snapshot", "shell", opts.shell, "string", true),
      ports = list_arg("clone_snapshot", "ports", opts.ports, true) }, opts)
    return h.with_id(doc, rid, opts.type .. "_id")
  end
end

local PUBLISH_OPTIONS = { source_type = true, source_id = true, name = true, description = true,
  timeout = true }
local SPAWN_OPTIONS = { name = true, ports = true, bootstrap = true, network_mode = true, timeout = true }
local IMAGE_CLONE_OPTIONS = { name = true, description = true, timeout = true }

local function key_route(fname, suffix, field)
  return function(self, id, key, opts)
    check.id(fname, "id", id)
    check.id(fname, "key", key)
    opts = opts_of(fname, opts)
    return transport.one(post(self, "/images/" .. id .. suffix, { [field] = key }, opts))
  end
end

local function images(Client, h)
  --- Publishes a service or a snapshot as an image.
  function Client:publish_image(opts)
    opts = opts_of("publish_image", opts, PUBLISH_OPTIONS)
    check.type("publish_image", "source_type", opts.source_type, "string")
    check.oneof("publish_image", "source_type", opts.source_type, IMAGE_SOURCES)
    check.id("publish_image", "source_id", opts.source_id)
    local doc, rid = post(self, "/images", {
      source_type = opts.source_type, source_id = opts.source_id,
      name = check.type("publish_image", "name", opts.name, "string", true),
      description = check.type("publish_image", "description", opts.description, "string", true) },
      opts)
    return h.with_id(doc, rid, "image_id")
  end
  --- Images: "all" (default), "owned", "shared" or "public". opts: timeout.
  function Client:list_images(which, opts)
    which = check.oneof("list_images", "which", which, IMAGE_LISTS) or "all"
    opts = opts_of("list_images", opts)
    return h.get_list(self, which == "all" and "/images" or "/images/" .. which, "images", opts)
  end
end

-- Who may see and use an image, and its lock.
local function image_sharing(Client, h)
  --- One image's document (with request_id).
  -- @function Client:get_image
  Client.get_image = h.by_id("GET", "/images/", "get_image")
  --- Deletes an image. opts: on_sudo, or challenge_id and otp.
  -- @function Client:delete_image
  Client.delete_image = h.destructive("DELETE", "/images/", "delete_image")
  --- Locks an image against deletion.
  -- @function Client:lock_image
  Client.lock_image = h.by_id("POST", "/images/", "lock_image", "/lock")
  --- Unlocks an image. opts: on_sudo, or challenge_id and otp.
  -- @function Client:unlock_image
  Client.unlock_image = h.destructive("POST", "/images/", "unlock_image", "/unlock")
  --- visibility: "private", "unlisted" or "public".
  function Client:set_image_visibility(id, visibility, opts)
    check.id("set_image_visibility", "id", id)
    check.type("set_image_visibility", "visibility", visibility, "string")
    check.oneof("set_image_visibility", "visibility", visibility, VISIBILITY)
    opts = opts_of("set_image_visibility", opts)
    return transport.one(post(self, "/images/" .. id .. "/visibility", { visibility = visibility }, opts))
  end
  --- Lets another public key use the image.
  -- @function Client:grant_image_access
  Client.grant_image_access = key_route("grant_image_access", "/grant", "trusted_api_key")
  --- Takes back another key's access to the image.
  -- @function Client:revoke_image_access
  Client.revoke_image_access = key_route("revoke_image_access", "/revoke", "trusted_api_key")
  --- Gives the image to another public key.
  -- @function Client:transfer_image
  Client.transfer_image = key_route("transfer_image", "/transfer", "to_api_key")
  --- The public keys trusted with the image (a list).
  function Client:image_trusted(id, opts)
    check.id("image_trusted", "id", id)
    opts = opts_of("image_trusted", opts)
    local doc, rid = transport.request(self, "GET", "/images/" .. id .. "/trusted", nil, calls.request_opts(opts))
    if not doc then return nil, rid end
    local keys = doc.trusted_api_keys
    if type(keys) ~= "table" or not shape.is_list(keys) then
      return shape.fail(rid, "'trusted_api_keys' is not a list")
    end
    for _, k in ipairs(keys) do
      if type(k) ~= "string" then return shape.fail(rid, "'trusted_api_keys' holds a non-string") end
    end
    return keys
  end
end

local function image_use(Client, h)
  --- A new service from the image.
  function Client:spawn_image(id, opts)
    check.id("spawn_image", "id", id)
    opts = opts_of("spawn_image", opts, SPAWN_OPTIONS)
    local body = execute.sandbox_fields("spawn_image", { network_mode = opts.network_mode })
    body.name = check.type("spawn_image", "name", opts.name, "string", true)
    body.bootstrap = check.type("spawn_image", "bootstrap", opts.bootstrap, "string", true)
    body.ports = list_arg("spawn_image", "ports", opts.ports, true)
    local doc, rid = post(self, "/images/" .. id .. "/spawn", body, opts)
    return h.with_id(doc, rid, "service_id")
  end
  --- A copy of the image, owned by this client's key.
  function Client:clone_image(id, opts)
    check.id("clone_image", "id", id)
    opts = opts_of("clone_image", opts, IMAGE_CLONE_OPTIONS)
    local doc, rid = post(self, "/images/" .. id .. "/clone", {
      name = check.type("clone_image", "name", opts.name, "string", true),
      description = check.type("clone_image", "description", opts.description, "string", true) },
      opts)
    return h.with_id(doc, rid, "image_id")
  end
end

--- Adds the methods to Client.
function M.install(Client)
  local helpers = calls
  sessions(Client, helpers)
  services(Client, helpers)
  vault(Client, helpers)
  snapshots(Client, helpers)
  images(Client, helpers)
  image_sharing(Client, helpers)
  image_use(Client, helpers)
end

return M
