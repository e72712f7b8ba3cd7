--- The public functions of the execution API, declared once: each is a
-- method of every Client and a module function of the same name that uses
-- the default client. The number is the position of the function's
-- options table: every public function takes one last (timeout at least),
-- and refuses an option it does not know. A module function takes the
-- connection options (url, public_key, ...) from it to make a one-off
-- client for that call; a negative position names a function that always
-- uses the default client (its result outlives the call), whose
-- connection options raise as unknown ones. Nothing else of the Client
-- (request, info, url, close) becomes a module function. Internal module:
-- init.lua installs it.
local compat = require "unsandbox.compat"

local M = {}

-- The Client's methods by module, one module per resource of the
-- execution API: those loaded with the module (eager), and those loaded
-- on first use of one of them (a script that only runs code does not
-- compile the others when it requires unsandbox). Each module returns its
-- methods as a table (methods.lua adds them to the Client).
local GROUPS = {
  { module = "unsandbox.exec.jobs", eager = true, names = {
    execute_code = 3, execute_async = 3, get_job = 2, wait_for_job = 2,
    cancel_job = 2, list_jobs = 1 } },
  -- (and info, on_request, detect_language: methods, not module functions)
  { module = "unsandbox.exec.client", names = {
    get_languages = 1, validate_keys = 1, health = 1, call = 4, warm_up = -1 },
    private = { "info", "on_request", "detect_language" } },
  { module = "unsandbox.exec.sessions", names = {
    create_session = 1, list_sessions = 1, get_session = 2, delete_session = 2, session_execute = 3,
    session_snapshot = 2, freeze_session = 2, unfreeze_session = 2, boost_session = 3,
    unboost_session = 2 } },
  { module = "unsandbox.exec.services", names = {
    create_service = 1, list_services = 1, get_service = 2, delete_service = 2, service_logs = 2,
    service_execute = 3, service_snapshot = 2,
    freeze_service = 2, unfreeze_service = 2, lock_service = 2, unlock_service = 2,
    update_service = 2, resize_service = 3, set_service_domains = 2, redeploy_service = 2,
    get_service_env = 2, set_service_env = 3, export_service_env = 2, delete_service_env = 2 } },
  { module = "unsandbox.exec.snapshots", names = {
    list_snapshots = 1, get_snapshot = 2, delete_snapshot = 2, restore_snapshot = 2,
    lock_snapshot = 2, unlock_snapshot = 2, create_snapshot = 1, clone_snapshot = 2 } },
  { module = "unsandbox.exec.images", names = {
    publish_image = 1, list_images = 2, get_image = 2, delete_image = 2, lock_image = 2,
    unlock_image = 2, set_image_visibility = 3, grant_image_access = 3, revoke_image_access = 3,
    transfer_image = 3, image_trusted = 2, spawn_image = 2, clone_image = 2 } },
  -- execute_each and map_each return iterators that outlive the call, so
  -- they always use the default client, never a one-off one
  { module = "unsandbox.exec.batch", names = {
    execute_many = 2, map = 4, execute_each = -2, map_each = -4 } },
  -- the session terminal (exec/terminal.lua, whose install fills the
  -- table it is given): a one-off client is fine for attach too, since a
  -- Terminal copies what it needs when it connects
  { module = "unsandbox.exec.terminal", names = { session_attach = 2, session_shell = 3 } },
}

-- Functions of the module itself that live in other modules, loaded on
-- first use too: name -> {module, field}.
M.LAZY_FIELDS = {
  spawn = { "unsandbox.tasks", "spawn" }, step = { "unsandbox.tasks", "step" },
  run = { "unsandbox.tasks", "run" }, pollfds = { "unsandbox.tasks", "pollfds" },
  completed = { "unsandbox.tasks", "completed" }, Task = { "unsandbox.tasks", "Task" },
  current_task = { "unsandbox.tasks", "current" },
  save_artifacts = { "unsandbox.exec.artifacts", "save" },
}
-- the Control Plane client (lua/unsandbox/cp/init.lua)
for _, name in ipairs { "manager", "Manager", "Sandbox", "acting_subject", "trace",
                        "current_trace", "new_trace_id" } do
  M.LAZY_FIELDS[name] = { "unsandbox.cp", name }
end

-- name -> the position of its options table; name -> its module (the
-- methods that are no module function too)
M.PUBLIC, M.MODULE_OF = {}, {}
for _, g in ipairs(GROUPS) do
  for name, pos in pairs(g.names) do
    M.PUBLIC[name] = pos
    M.MODULE_OF[name] = g.module
  end
  for _, name in ipairs(g.private or {}) do M.MODULE_OF[name] = g.module end
end

--- The methods of a group's module, as a table.
function M.group(module)
  local mod = require(module)
  if type(mod.install) ~= "function" then return mod end
  local t = {}
  mod.install(t)
  return t
end

-- Methods of a Client that are not module functions: plumbing, and
-- detect_language and on_request (the module has its own: a pure
-- detect_language, and on_request sets the hook of every client). Any other method must
-- be declared above: install() refuses one that is not, so a new method
-- cannot be forgotten (or exported by accident).
local PRIVATE = { request = true, info = true, url = true, close = true, detect_language = true,
                  on_request = true }

-- The connection options of opts (timeout excepted: it is the call's), or nil.
local function connection_opts(opts, connection)
  if type(opts) ~= "table" then return nil end
  local conn
  for k in pairs(connection) do
    if k ~= "timeout" and opts[k] ~= nil then
      conn = conn or {}
      conn[k] = opts[k]
    end
  end
  return conn
end

-- opts without its connection options (the method refuses them).
local function strip(opts, connection)
  local rest = {}
  for k, v in pairs(opts) do
    if not connection[k] or k == "timeout" then rest[k] = v end
  end
  return rest
end

local function check_declared(Client)
  for name, v in pairs(Client) do
    if type(v) == "function" and not PRIVATE[name] and not name:match("^_") and not M.PUBLIC[name] then
      error("Client:" .. name .. " is not declared in lua/unsandbox/public.lua", 3)
    end
  end
end

local function check_present(Client, module)
  for name, from in pairs(M.MODULE_OF) do
    if from == module then
      assert(type(rawget(Client, name)) == "function", "public.lua names a missing method: " .. name)
    end
  end
end

-- Client's lazy methods: the first lookup of one loads its module and
-- add(methods) adds the group's methods to Client.
local function lazy_methods(Client, add, loaded)
  setmetatable(Client, { __index = function(_, name)
    local module = M.MODULE_OF[name]
    if not module or loaded[module] then return nil end
    loaded[module] = true
    add(M.group(module), module)
    check_declared(Client)
    check_present(Client, module)
    return rawget(Client, name)
  end })
end

-- unsandbox's lazy fields (M.LAZY_FIELDS), loaded on first lookup.
local function lazy_fields(unsandbox)
  setmetatable(unsandbox, { __index = function(t, k)
    local from = M.LAZY_FIELDS[k]
    if not from then return nil end
    local v = require(from[1])[from[2]]
    rawset(t, k, v)
    return v
  end })
end

--- Adds the eager groups' methods to Client (add(methods, module): methods.add
-- with the Client's frame), readies the others for their first use, and
-- adds unsandbox[name] for every public name and the lazy fields.
-- connection: the set of option names that make a client (init.lua's
-- CONNECTION).
function M.install(unsandbox, Client, connection, add)
  local loaded = {}
  for _, g in ipairs(GROUPS) do
    if g.eager then
      add(M.group(g.module), g.module)
      loaded[g.module] = true
    end
  end
  check_declared(Client)
  for module in pairs(loaded) do check_present(Client, module) end
  lazy_methods(Client, add, loaded)
  lazy_fields(unsandbox)
  for name, pos in pairs(M.PUBLIC) do
    unsandbox[name] = function(...)
      local method = Client[name]
      local conn = pos > 0 and connection_opts((select(pos, ...)), connection)
      if not conn then return method(unsandbox.default_client(), ...) end
      local args = compat.pack(...)
      args[pos] = strip(args[pos], connection)
      local c = unsandbox.client(conn)
      return compat.closing({ c, n = 1 }, method, c, compat.unpack(args, 1, args.n))
    end
  end
end

return M
