--- The public functions of the execution API, declared once: each is a
-- method of every Client and a module function of the same name that uses
-- the default client. The number is the position of the function's
-- options table (0: none), from which a module function takes the
-- connection options (url, public_key, ...) to make a one-off client for
-- that call. Nothing else of the Client (request, info, url, close)
-- becomes a module function. Internal module: init.lua installs it.
local M = {}

M.PUBLIC = {
  execute_code = 3, execute_async = 3, get_job = 0, wait_for_job = 2, execute_many = 2,
  -- (batch.lua) execute_each and map_each return iterators that outlive
  -- the call, so they always use the default client, never a one-off one
  map = 4, execute_each = 0, map_each = 0,
  cancel_job = 0, list_jobs = 0,
  get_languages = 1, validate_keys = 0, health = 0, call = 0,
  create_session = 1, list_sessions = 0, get_session = 0, delete_session = 2, session_execute = 3,
  create_service = 1, list_services = 0, get_service = 0, delete_service = 2, service_logs = 2,
  service_execute = 3,
  session_snapshot = 2, service_snapshot = 2, list_snapshots = 0, get_snapshot = 0,
  delete_snapshot = 2, restore_snapshot = 0, lock_snapshot = 0, unlock_snapshot = 2,
  -- the routes of issue 14 (execapi.lua)
  freeze_session = 0, unfreeze_session = 0, boost_session = 0, unboost_session = 0,
  freeze_service = 0, unfreeze_service = 0, lock_service = 0, unlock_service = 2,
  update_service = 2, resize_service = 0, set_service_domains = 2, redeploy_service = 2,
  get_service_env = 0, set_service_env = 0, export_service_env = 0, delete_service_env = 0,
  create_snapshot = 1, clone_snapshot = 2,
  publish_image = 1, list_images = 0, get_image = 0, delete_image = 2, lock_image = 0,
  unlock_image = 2, set_image_visibility = 0, grant_image_access = 0, revoke_image_access = 0,
  transfer_image = 0, image_trusted = 0, spawn_image = 2, clone_image = 2,
  -- the session terminal (terminal.lua): a one-off client is fine for
  -- attach too, since a Terminal copies what it needs when it connects
  session_attach = 2, session_shell = 3,
}

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

--- Adds unsandbox[name] for every public name. connection: the set of
-- option names that make a client (init.lua's CONNECTION).
function M.install(unsandbox, Client, connection)
  for name, v in pairs(Client) do
    if type(v) == "function" and not PRIVATE[name] and not name:match("^_") and not M.PUBLIC[name] then
      error("Client:" .. name .. " is not declared in lua/unsandbox/public.lua", 2)
    end
  end
  for name, pos in pairs(M.PUBLIC) do
    local method = Client[name]
    assert(type(method) == "function", "PUBLIC names a missing method: " .. name)
    unsandbox[name] = function(...)
      local conn = pos > 0 and connection_opts((select(pos, ...)), connection)
      if not conn then return method(unsandbox.default_client(), ...) end
      local args = table.pack(...)
      args[pos] = strip(args[pos], connection)
      local c <close> = unsandbox.client(conn)
      return method(c, table.unpack(args, 1, args.n))
    end
  end
end

return M
