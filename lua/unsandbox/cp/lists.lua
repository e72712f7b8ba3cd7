--- The Manager's lists as iterators as well as tables. The protocol has
-- no paging on these routes, so an answer is read whole; the iterator
-- walks it without copying. Items that are not objects are skipped, as
-- list_workspaces does.
-- @classmod Manager
local check = require "unsandbox.check"
local transport = require "unsandbox.transport"

local Manager = {}   -- the methods this file adds to unsandbox.Manager

-- method -> the field of its answer that holds the list (true: the
-- answer is the list)
local LISTS = {
  list_workspaces = true, list_runtimes = true, list = true,
  list_objects = "objects", object_versions = "versions",
  list_workspace_checkpoints = "checkpoints", list_dir = "entries",
  list_tenants = "tenants", list_tenant_keys = "keys", list_admin_keys = "keys",
  list_owner_tenants = "owner_tenants", list_admin_templates = "templates",
}

local function names()
  local t = {}
  for k in pairs(LISTS) do t[#t + 1] = k end
  table.sort(t)
  return table.concat(t, ", ")
end

--- Lists as iterators
-- @section lists

--- Makes the list call `method(...)` now and returns an iterator over the
-- list in its answer (the field that holds it: objects, versions,
-- checkpoints, entries, tenants, keys, ...).
--
--     for i, ws in assert(m:each("list_workspaces")) do ... end
--     for i, obj in assert(m:each("list_objects", locator)) do ... end
-- @tparam string method list_workspaces, list_runtimes, list,
-- list_objects, object_versions, list_workspace_checkpoints, list_dir,
-- list_tenants, list_tenant_keys, list_admin_keys, list_owner_tenants or
-- list_admin_templates
-- @param ... the method's own arguments
-- @treturn[1] function an iterator of `i, item`
-- @return[2] nil
-- @treturn[2] Error the call's, or protocol when its answer has no list
-- @raise a method that is not one of these
function Manager:each(method, ...)
  check.type("each", "method", method, "string")
  local field = LISTS[method]
  if not field then check.fail("each", "method", "one of " .. names() .. " expected, got '" .. method .. "'") end
  local doc, err = self[method](self, ...)
  if doc == nil then return nil, err end
  local list = doc
  if field ~= true then list = type(doc) == "table" and doc[field] or nil end
  if type(list) ~= "table" then
    return nil, transport.cp.bad_reply("Control Plane response has no " ..
      (field == true and method or field) .. " list")
  end
  local i = 0
  return function()
    repeat
      i = i + 1
      local v = list[i]
      if type(v) == "table" then return i, v end
    until v == nil
    return nil
  end
end

return Manager
