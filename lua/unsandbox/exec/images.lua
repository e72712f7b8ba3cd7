--- Images (spec §4.5) as methods of every unsandbox.Client: published
-- from a service or a snapshot, listed, read, deleted, locked, shared with
-- other keys or given to one, and used: a new service spawned from one, a
-- copy cloned. Loaded on first use of one of them (public.lua). Each is
-- declared in public.lua, so it is also unsandbox.<name>(...) on the
-- default client. The destructive routes (delete, unlock) take the sudo
-- options. Internal module; its methods are documented as the Client's.
-- @classmod Client
local transport = require "unsandbox.transport"
local calls = require "unsandbox.exec.calls"
local check = require "unsandbox.check"
local execute = require "unsandbox.exec.execute"
local shape = require "unsandbox.shape"

local Client = {}   -- the methods this file adds to unsandbox.Client

local VISIBILITY = { private = true, unlisted = true, public = true }
local IMAGE_LISTS = { all = true, owned = true, shared = true, public = true }
local IMAGE_SOURCES = { service = true, snapshot = true }
local PUBLISH_OPTIONS = { source_type = true, source_id = true, name = true, description = true,
  timeout = true }
local SPAWN_OPTIONS = { name = true, ports = true, bootstrap = true, network_mode = true, timeout = true }
local IMAGE_CLONE_OPTIONS = { name = true, description = true, timeout = true }

local function key_route(fname, suffix, field)
  return function(self, id, key, opts)
    check.id(fname, "id", id)
    check.id(fname, "key", key)
    opts = calls.plain(fname, opts)
    return calls.one(calls.post(self, "/images/" .. id .. suffix, { [field] = key }, opts))
  end
end

--- Images
-- @section images

--- Publishes a service or a snapshot as an image.
-- @tparam table opts `source_type` ("service" or "snapshot"),
-- `source_id`, `name`, `description`, `timeout`
-- @treturn[1] table the image's document: `id` (also `image_id`), ...
-- @return[2] nil
-- @treturn[2] Error
-- @raise a missing or unknown source_type, source_id not an id
function Client:publish_image(opts)
  opts = calls.plain("publish_image", opts, PUBLISH_OPTIONS)
  check.type("publish_image", "source_type", opts.source_type, "string")
  check.oneof("publish_image", "source_type", opts.source_type, IMAGE_SOURCES)
  check.id("publish_image", "source_id", opts.source_id)
  local doc, rid = calls.post(self, "/images", {
    source_type = opts.source_type, source_id = opts.source_id,
    name = check.type("publish_image", "name", opts.name, "string", true),
    description = check.type("publish_image", "description", opts.description, "string", true) },
    opts)
  return calls.with_id(doc, rid, "image_id")
end

--- Lists images.
-- @tparam[opt="all"] string which "all", "owned", "shared" or "public"
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table a list of image documents
-- @return[2] nil
-- @treturn[2] Error
-- @raise an unknown which
function Client:list_images(which, opts)
  which = check.oneof("list_images", "which", which, IMAGE_LISTS) or "all"
  opts = calls.plain("list_images", opts)
  return calls.get_list(self, which == "all" and "/images" or "/images/" .. which, "images", opts)
end

-- Who may see and use an image, and its lock --

--- One image's document.
-- @function get_image
-- @tparam string id the image's id
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table the document, with request_id
-- @return[2] nil
-- @treturn[2] Error (http 404: no such image)
Client.get_image = calls.by_id("GET", "/images/", "get_image")
--- Deletes an image; may meet a sudo challenge, as `delete_session` does.
-- @function delete_image
-- @tparam string id the image's id
-- @tparam[opt] table opts `on_sudo(err)` -> otp, or `challenge_id` and
-- `otp` (see `delete_session`); `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error
Client.delete_image = calls.destructive("DELETE", "/images/", "delete_image")
--- Locks an image against deletion.
-- @function lock_image
-- @tparam string id the image's id
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error
Client.lock_image = calls.by_id("POST", "/images/", "lock_image", "/lock")
--- Unlocks an image; may meet a sudo challenge.
-- @function unlock_image
-- @tparam string id the image's id
-- @tparam[opt] table opts `on_sudo(err)` -> otp, or `challenge_id` and
-- `otp` (see `delete_session`); `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error
Client.unlock_image = calls.destructive("POST", "/images/", "unlock_image", "/unlock")
--- Sets who may see an image.
-- @tparam string id the image's id
-- @tparam string visibility "private", "unlisted" or "public"
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error
-- @raise an unknown visibility
function Client:set_image_visibility(id, visibility, opts)
  check.id("set_image_visibility", "id", id)
  check.type("set_image_visibility", "visibility", visibility, "string")
  check.oneof("set_image_visibility", "visibility", visibility, VISIBILITY)
  opts = calls.plain("set_image_visibility", opts)
  return calls.one(calls.post(self, "/images/" .. id .. "/visibility", { visibility = visibility }, opts))
end
--- Lets another public key use the image.
-- @function grant_image_access
-- @tparam string id the image's id
-- @tparam string key the other public key
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error
-- @raise id or key not an id
Client.grant_image_access = key_route("grant_image_access", "/grant", "trusted_api_key")
--- Takes back another key's access to the image.
-- @function revoke_image_access
-- @tparam string id the image's id
-- @tparam string key the other public key
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error
-- @raise id or key not an id
Client.revoke_image_access = key_route("revoke_image_access", "/revoke", "trusted_api_key")
--- Gives the image to another public key.
-- @function transfer_image
-- @tparam string id the image's id
-- @tparam string key the other public key
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table the service's answer, with request_id
-- @return[2] nil
-- @treturn[2] Error
-- @raise id or key not an id
Client.transfer_image = key_route("transfer_image", "/transfer", "to_api_key")
-- the names the service's SDKs read for the trusted list, in that order
local TRUSTED_FIELDS = { "trusted_api_keys", "trusted_keys", "trusted" }

--- The public keys trusted with an image.
-- @tparam string id the image's id
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table a list of public keys
-- @return[2] nil
-- @treturn[2] Error
function Client:image_trusted(id, opts)
  check.id("image_trusted", "id", id)
  opts = calls.plain("image_trusted", opts)
  local doc, rid = transport.request(self, "GET", "/images/" .. id .. "/trusted", nil, calls.request_opts(opts))
  if not doc then return nil, rid end
  local field = TRUSTED_FIELDS[1]
  for _, name in ipairs(TRUSTED_FIELDS) do
    if doc[name] ~= nil then field = name break end
  end
  local keys = doc[field]
  if type(keys) ~= "table" or not shape.is_list(keys) then
    return shape.fail(rid, "'" .. field .. "' is not a list")
  end
  for _, k in ipairs(keys) do
    if type(k) ~= "string" then return shape.fail(rid, "'" .. field .. "' holds a non-string") end
  end
  return keys
end

--- A new service from an image.
-- @tparam string id the image's id
-- @tparam[opt] table opts `name`, `ports` (a list of port numbers),
-- `bootstrap`, `network_mode`, `timeout`
-- @treturn[1] table the service's document: `id` (also `service_id`), ...
-- @return[2] nil
-- @treturn[2] Error
function Client:spawn_image(id, opts)
  check.id("spawn_image", "id", id)
  opts = calls.plain("spawn_image", opts, SPAWN_OPTIONS)
  local body = execute.sandbox_fields("spawn_image", { network_mode = opts.network_mode })
  body.name = check.type("spawn_image", "name", opts.name, "string", true)
  body.bootstrap = check.type("spawn_image", "bootstrap", opts.bootstrap, "string", true)
  body.ports = calls.list_arg("spawn_image", "ports", opts.ports, true)
  local doc, rid = calls.post(self, "/images/" .. id .. "/spawn", body, opts)
  return calls.with_id(doc, rid, "service_id")
end
--- A copy of an image, owned by this client's key.
-- @tparam string id the image's id
-- @tparam[opt] table opts `name`, `description`, `timeout`
-- @treturn[1] table the copy's document: `id` (also `image_id`), ...
-- @return[2] nil
-- @treturn[2] Error
function Client:clone_image(id, opts)
  check.id("clone_image", "id", id)
  opts = calls.plain("clone_image", opts, IMAGE_CLONE_OPTIONS)
  local doc, rid = calls.post(self, "/images/" .. id .. "/clone", {
    name = check.type("clone_image", "name", opts.name, "string", true),
    description = check.type("clone_image", "description", opts.description, "string", true) },
    opts)
  return calls.with_id(doc, rid, "image_id")
end

return Client
