--- The administration routes (spec §4.4) as methods of
-- unsandbox.Manager: tenants, their keys and owner tenants, admin keys,
-- the audit log and store templates. They need an admin key or the
-- break-glass token, and no tenant= on the Manager (the server says 403
-- otherwise). Ids are checked for their shapes before anything is sent,
-- since they become path segments.
-- @classmod Manager
local core = require "unsandbox.core"
local check = require "unsandbox.check"
local transport = require "unsandbox.transport"

local Manager = {}   -- the methods this file adds to unsandbox.Manager

local call = transport.cp_request

local function tenant(fname, t, arg)
  check.type(fname, arg or "tenant", t, "string")
  if not core.cp.valid_tenant(t) then check.fail(fname, arg or "tenant", "a tenant id expected") end
  return t
end

local function fields(fname, opts, allowed)
  return check.options(fname, opts, allowed)
end

--- Administration: tenants.
-- The administration routes need an admin key or the break-glass token,
-- and no tenant= on the Manager (the server answers 403 otherwise).
-- @section admin_tenants

--- The tenants.
-- @treturn[1] table `{tenants = {{id, display_name, status,
-- max_workspaces, max_runtimes, workspaces_in_use}, ...}}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:list_tenants() return call(self, "list_tenants", "GET", "/v1/admin/tenants") end

--- Creates a tenant.
-- @tparam string id the tenant id
-- @tparam[opt] table opts `display_name`, `max_workspaces` (default 64),
-- `max_runtimes` (default 4)
-- @treturn[1] table the Tenant
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error (http 409: a duplicate, invalid or reserved id)
-- @raise a malformed id, an unknown option
function Manager:create_tenant(id, opts)
  opts = fields("create_tenant", opts, { display_name = true, max_workspaces = true, max_runtimes = true })
  return call(self, "create_tenant", "POST", "/v1/admin/tenants", { body = {
    id = tenant("create_tenant", id, "id"),
    display_name = check.type("create_tenant", "display_name", opts.display_name, "string", true),
    max_workspaces = check.int_range("create_tenant", "max_workspaces", opts.max_workspaces, 0, 1000000),
    max_runtimes = check.int_range("create_tenant", "max_runtimes", opts.max_runtimes, 0, 1000000) } })
end

--- Suspends a tenant (its data kept).
-- @tparam string t a tenant id
-- @treturn[1] table `{id, status = "suspended"}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error (http 404)
function Manager:suspend_tenant(t)
  return call(self, "suspend_tenant", "DELETE", "/v1/admin/tenants/" .. tenant("suspend_tenant", t))
end

--- Sets a tenant's status.
-- @tparam string t a tenant id
-- @tparam string status "active" or "suspended"
-- @treturn[1] table `{id, status}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:set_tenant_status(t, status)
  check.oneof("set_tenant_status", "status", check.type("set_tenant_status", "status", status, "string"),
    { active = true, suspended = true })
  return call(self, "set_tenant_status", "POST", "/v1/admin/tenants/" .. tenant("set_tenant_status", t) ..
    "/status", { body = { status = status } })
end

--- Administration: keys.
-- @section admin_keys

local KEY_OPTIONS = { label = true, permissions = true, expires_in_seconds = true }

local function key_body(fname, opts)
  opts = fields(fname, opts, KEY_OPTIONS)
  local perms = check.type(fname, "permissions", opts.permissions, "table", true)
  if perms then
    for i, p in ipairs(perms) do check.type(fname, "permissions[" .. i .. "]", p, "string") end
  end
  local label = check.type(fname, "label", opts.label, "string", true)
  if label and #label > 128 then check.fail(fname, "label", "at most 128 characters") end
  return { label = label, permissions = perms,
    expires_in_seconds = check.int_range(fname, "expires_in_seconds", opts.expires_in_seconds, 1, 31536000) }
end

--- A tenant's API keys (never the keys themselves).
-- @tparam string t a tenant id
-- @treturn[1] table `{keys = {{id, tenant_id, key_prefix, label,
-- created_at, last_used_at, revoked_at, permissions, expires_at}, ...}}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:list_tenant_keys(t)
  return call(self, "list_tenant_keys", "GET", "/v1/admin/tenants/" .. tenant("list_tenant_keys", t) .. "/keys")
end

--- Issues an API key for a tenant.
-- @tparam string t a tenant id
-- @tparam[opt] table opts `label` (at most 128 characters),
-- `permissions` (a list: {"act_as_subjects"}), `expires_in_seconds`
-- (1..31536000)
-- @treturn[1] table the IssuedApiKey: `{id, tenant_id, label, api_key,
-- permissions, expires_at, note}`; api_key is shown once
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
-- @raise an unknown option, a value out of range
function Manager:issue_tenant_key(t, opts)
  return call(self, "issue_tenant_key", "POST", "/v1/admin/tenants/" .. tenant("issue_tenant_key", t) .. "/keys",
    { body = key_body("issue_tenant_key", opts) })
end

--- The admin keys.
-- @treturn[1] table `{keys = {...}}` (tenant_id null)
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:list_admin_keys() return call(self, "list_admin_keys", "GET", "/v1/admin/keys") end

--- Issues an admin key.
-- @tparam[opt] table opts as for `issue_tenant_key`
-- @treturn[1] table the IssuedApiKey
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:issue_admin_key(opts)
  return call(self, "issue_admin_key", "POST", "/v1/admin/keys", { body = key_body("issue_admin_key", opts) })
end

--- Revokes a key; idempotent.
-- @tparam string key_id 16 hex
-- @treturn[1] table `{id, revoked = true}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error (http 404: no such key)
-- @raise a key_id of another shape
function Manager:revoke_key(key_id)
  check.type("revoke_key", "key_id", key_id, "string")
  if not key_id:match("^%x+$") or #key_id ~= 16 then check.fail("revoke_key", "key_id", "16 hex digits expected") end
  return call(self, "revoke_key", "DELETE", "/v1/admin/keys/" .. key_id)
end

--- Administration: owner tenants.
-- @section admin_owners

--- The tenants whose objects a tenant may act on as owner.
-- @tparam string t a tenant id
-- @treturn[1] table `{owner_tenants = {{owner_tenant, created_at,
-- created_by}, ...}}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:list_owner_tenants(t)
  return call(self, "list_owner_tenants", "GET", "/v1/admin/tenants/" .. tenant("list_owner_tenants", t) ..
    "/owner-tenants")
end

--- Lets a tenant act as owner for another; idempotent.
-- @tparam string t a tenant id
-- @tparam string owner_tenant a tenant id
-- @treturn[1] table `{tenant_id, owner_tenant}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:allow_owner_tenant(t, owner_tenant)
  return call(self, "allow_owner_tenant", "POST", "/v1/admin/tenants/" .. tenant("allow_owner_tenant", t) ..
    "/owner-tenants", { body = { owner_tenant = tenant("allow_owner_tenant", owner_tenant, "owner_tenant") } })
end

--- Takes back `allow_owner_tenant`.
-- @tparam string t a tenant id
-- @tparam string owner_tenant
-- @treturn[1] table `{tenant_id, owner_tenant, revoked = true}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error (http 404)
function Manager:revoke_owner_tenant(t, owner_tenant)
  return call(self, "revoke_owner_tenant", "DELETE", "/v1/admin/tenants/" .. tenant("revoke_owner_tenant", t) ..
    "/owner-tenants/" .. tenant("revoke_owner_tenant", owner_tenant, "owner_tenant"))
end

--- Administration: audit and templates.
-- @section admin_audit

--- The audit log, newest first.
-- @tparam[opt=100] integer limit events, 1..1000
-- @treturn[1] table `{events = {{id, tenant, actor_kind, actor_id, action,
-- target, outcome, created_at}, ...}}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
-- @raise limit out of range
function Manager:audit(limit)
  return call(self, "audit", "GET", "/v1/admin/audit",
    { query = { limit = check.int_range("audit", "limit", limit, 1, 1000) } })
end

--- The store templates and the built-in ones.
-- @treturn[1] table `{templates = {{tenant_id, template_id, image,
-- created_at, created_by, allowed}, ...}, builtin = {id = image}}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:list_admin_templates()
  return call(self, "list_admin_templates", "GET", "/v1/admin/templates")
end

--- Adds or replaces a store template.
-- @tparam string template_id
-- @tparam string image an image of an allowed registry
-- @tparam[opt] string tenant_id a tenant, or "*" (all)
-- @treturn[1] table `{tenant_id, template_id, image, created_by}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error (http 409: template management is disabled, or a
-- built-in id; 400: an image not allowed)
function Manager:put_template(template_id, image, tenant_id)
  check.nonempty("put_template", "template_id", template_id)
  check.nonempty("put_template", "image", image)
  if tenant_id ~= nil and tenant_id ~= "*" then tenant("put_template", tenant_id, "tenant_id") end
  return call(self, "put_template", "POST", "/v1/admin/templates",
    { body = { template_id = template_id, image = image, tenant_id = tenant_id } })
end

--- Deletes a store template.
-- @tparam string template_id
-- @tparam[opt] string tenant_id a tenant, or "*"
-- @treturn[1] table `{tenant_id, template_id, deleted}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:delete_template(template_id, tenant_id)
  check.type("delete_template", "template_id", template_id, "string")
  if not core.cp.valid_template(template_id) then
    check.fail("delete_template", "template_id", "a template id expected")
  end
  if tenant_id ~= nil and tenant_id ~= "*" then tenant("delete_template", tenant_id, "tenant_id") end
  return call(self, "delete_template", "DELETE", "/v1/admin/templates/" .. template_id,
    { query = { tenant_id = tenant_id } })
end

return Manager
