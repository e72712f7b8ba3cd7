-- #integration specs of the Control Plane's frame in unsandboxd: the
-- route contract of control-plane-routes.tsv, request ids from trace
-- context, the auth order of spec §3 with its exact texts, body rules,
-- tenants, keys, owner tenants, audit, templates, workspaces and
-- ownership. Every request goes to a real server over HTTP.
-- One Lua: the subject is the server's wire (raw HTTP).
local server = require "spec.helpers.unsandboxd"
local cp = require "spec.helpers.cp"
local fs = require "spec.helpers.fs"
local json = require "cjson"
local wait = require "spec.helpers.wait"

local req = cp.request
local SUBJECT_A = string.rep("a", 32)
local SUBJECT_B = string.rep("b", 32)

-- The TSV, as {method, path, credential, status}.
local function routes()
  local out = {}
  for line in io.lines("spec/fixtures/control-plane-routes.tsv") do
    local m, p, c, s = line:match("^(%S+)\t(%S+)\t(%S+)\t(%S+)$")
    if m and m ~= "method" then out[#out + 1] = { method = m, path = p, cred = c, status = s } end
  end
  return out
end

-- A concrete path for a pattern: well-shaped ids nobody owns.
local function concrete(pattern)
  return (pattern:gsub("{workspace_id}", "ws-000000000000"):gsub("{sandbox_id}", "sb-000000000000")
    :gsub("{checkpoint_id}", "cp-1-deadbeef"):gsub("{tenant_id}", "nobody")
    :gsub("{owner_tenant_id}", "nobody-else"):gsub("{key_id}", "0000000000000000")
    :gsub("{template_id}", "nothing"))
end

describe("Control Plane frame #integration", function()
  local srv

  setup(function() srv = server.start {} end)
  teardown(function() if srv then srv.stop() end end)

  describe("the route contract", function()
    it("has the 60 routes of the TSV, 53 of them protected", function()
      local all, protected = routes(), 0
      for _, r in ipairs(all) do if r.cred ~= "none" then protected = protected + 1 end end
      assert.are.equal(60, #all)
      assert.are.equal(53, protected)
    end)

    it("answers 401 {\"error\":\"unauthorized\"} on every protected route without a credential", function()
      local wrong = {}
      for _, r in ipairs(routes()) do
        if r.cred ~= "none" then
          local st, doc = req(srv, r.method, concrete(r.path), { body = r.method ~= "GET" and "{}" or nil })
          if st ~= 401 or type(doc) ~= "table" or doc.error ~= "unauthorized" then
            wrong[#wrong + 1] = r.method .. " " .. r.path .. " -> " .. tostring(st) .. " " .. json.encode(doc)
          end
        end
      end
      assert.same({}, wrong)
    end)

    it("refuses a credential of the wrong kind on every protected route", function()
      local ws_token
      do
        local _, lease = req(srv, "POST", "/v1/workspaces", { token = srv.token, body = { session_id = "contract" } })
        ws_token = lease.access_token
      end
      local wrong = {}
      for _, r in ipairs(routes()) do
        local cred, bad, want = r.cred, nil, nil
        if cred:match("^control%-plane") or cred == "admin" then bad, want = ws_token, 401
        -- a control-plane credential is right there; another workspace's token is not
        elseif cred:match("^scoped%-workspace%-or%-control%-plane") then bad, want = ws_token, 401
        elseif cred:match("^scoped") then bad, want = srv.token, 401
        elseif cred == "ticket" then bad, want = srv.token, 401 end
        if bad then
          local st = req(srv, r.method, concrete(r.path), { token = bad, body = r.method ~= "GET" and "{}" or nil })
          if st ~= want then wrong[#wrong + 1] = r.method .. " " .. r.path .. " -> " .. tostring(st) end
        end
      end
      assert.same({}, wrong)
    end)

    it("serves the public routes", function()
      assert.are.equal(200, (req(srv, "GET", "/livez")))
      local st, doc = req(srv, "GET", "/readyz")
      assert.are.equal(200, st); assert.are.equal("ready", doc.status)
      st, doc = req(srv, "GET", "/healthz")
      assert.are.equal(200, st); assert.are.equal("ok", doc.status); assert.are.equal("ok", doc.database)
      st, doc = req(srv, "GET", "/v1/auth/methods")
      assert.are.equal(200, st)
      assert.same({ local_login = true, oidc = false }, doc)
      assert.are.equal(404, (req(srv, "GET", "/v1/auth/oidc/login")))
      local mst, text, h = req(srv, "GET", "/metrics")
      assert.are.equal(200, mst)
      assert.matches("^text/plain", h["content-type"])
      assert.matches('sandbox_control_plane_requests_total{route="/livez",status="200"} %d+', text)
      assert.matches("sandbox_control_plane_runtimes_live %d+", text)
    end)

    it("answers unknown paths 404 not found, but a DELETE authenticates first", function()
      for _, m in ipairs { "GET", "POST", "PUT" } do
        local st, doc = req(srv, m, "/v1/nothing", { token = srv.token, body = m ~= "GET" and "{}" or nil })
        assert.are.equal(404, st, m)
        assert.same({ error = "not found" }, doc)
      end
      assert.are.equal(401, (req(srv, "DELETE", "/v1/nothing")))
      assert.are.equal(404, (req(srv, "DELETE", "/v1/nothing", { token = srv.token })))
      -- a malformed id matches no route
      assert.are.equal(404, (req(srv, "GET", "/v1/sandboxes/sb-XYZ", { token = srv.token })))
      assert.are.equal(404, (req(srv, "GET", "/v1/workspaces/ws-0/checkpoints", { token = srv.token })))
    end)
  end)

  describe("request ids", function()
    local vectors = json.decode(fs.read("spec/fixtures/trace.json")).cases

    it("derive from traceparent, then X-Request-Id, else are random, as trace.json says", function()
      local ran = 0
      for _, v in ipairs(vectors) do
        local h = {}
        if v.kind == "request_id" then h["X-Request-Id"] = v.x_request_id
        elseif v.kind == "traceparent" then h.traceparent = v.traceparent
        elseif v.kind == "resolution" then h.traceparent = v.traceparent; h["X-Request-Id"] = v.x_request_id end
        if next(h) then
          local _, _, hd = req(srv, "GET", "/livez", { headers = h })
          local want = v.expected and v.expected.trace_id
          if want and want ~= json.null then assert.are.equal(want, hd["x-request-id"], json.encode(v)) end
          assert.matches("^%x+$", hd["x-request-id"])
          assert.are.equal(32, #hd["x-request-id"])
          ran = ran + 1
        end
      end
      assert.is_true(ran > 5)
      local _, _, h1 = req(srv, "GET", "/livez")
      local _, _, h2 = req(srv, "GET", "/livez", { headers = { traceparent = "garbage" } })
      assert.are_not.equal(h1["x-request-id"], h2["x-request-id"])
    end)
  end)

  describe("the auth order", function()
    local key, subj_key

    setup(function()
      key = cp.tenant_key(srv, "tenant-a")
      subj_key = cp.tenant_key(srv, "tenant-a", { act_as_subjects = true })
    end)

    it("refuses a non-ASCII or non-Bearer Authorization as absent", function()
      assert.are.equal(401, (req(srv, "GET", "/v1/whoami", { headers = { Authorization = "Basic x" } })))
      assert.are.equal(401, (req(srv, "GET", "/v1/whoami", { headers = { Authorization = "bearer " .. srv.token } })))
      assert.are.equal(401, (req(srv, "GET", "/v1/whoami", { headers = { Authorization = "Bearer caf\195\169" } })))
      assert.are.equal(401, (req(srv, "GET", "/v1/whoami", { token = "sk_nothing_tenant-a_nothing" })))
    end)

    it("keeps break-glass from acting for a subject", function()
      local st, doc = req(srv, "GET", "/v1/whoami", { token = srv.token,
        headers = { ["X-Acting-Subject"] = SUBJECT_A } })
      assert.are.equal(403, st)
      assert.are.equal("this credential may not act for a subject", doc.error)
    end)

    it("lets only keys with act_as_subjects act for a well-shaped subject", function()
      local st, doc = req(srv, "GET", "/v1/whoami", { token = key, headers = { ["X-Acting-Subject"] = SUBJECT_A } })
      assert.are.equal(403, st)
      assert.are.equal("this credential may not act for a subject", doc.error)
      st, doc = req(srv, "GET", "/v1/whoami", { token = subj_key, headers = { ["X-Acting-Subject"] = "ABC" } })
      assert.are.equal(400, st)
      assert.are.equal("X-Acting-Subject must be 32 lowercase hex characters", doc.error)
      st, doc = req(srv, "GET", "/v1/whoami", { token = subj_key,
        headers = { ["X-Acting-Subject"] = " " .. SUBJECT_A .. " " } })
      assert.are.equal(200, st)
      assert.are.equal(SUBJECT_A, doc.acting_subject)
      assert.are.equal("tenant", doc.kind)
      assert.are.equal("tenant-a", doc.tenant_id)
    end)

    it("binds tenant keys to their tenant and lets admins act for one", function()
      local st, doc = req(srv, "GET", "/v1/whoami", { token = key, headers = { ["X-Sandbox-Tenant"] = "tenant-a" } })
      assert.are.equal(403, st)
      assert.are.equal("this credential is bound to a tenant; X-Sandbox-Tenant is not accepted", doc.error)
      st, doc = req(srv, "GET", "/v1/whoami", { token = srv.token, headers = { ["X-Sandbox-Tenant"] = "no-such" } })
      assert.are.equal(404, st)
      assert.are.equal("unknown tenant: no-such", doc.error)
      st, doc = req(srv, "GET", "/v1/whoami", { token = srv.token, headers = { ["X-Sandbox-Tenant"] = "tenant-a" } })
      assert.are.equal(200, st)
      assert.are.equal("break-glass", doc.kind)
      assert.are.equal("tenant-a", doc.tenant_id)
    end)

    it("refuses suspended tenants, revoked and expired keys", function()
      local k = cp.tenant_key(srv, "tenant-s")
      assert.are.equal(200, (req(srv, "GET", "/v1/whoami", { token = k })))
      assert.are.equal(200, (req(srv, "DELETE", "/v1/admin/tenants/tenant-s", { token = srv.token })))
      local st, doc = req(srv, "GET", "/v1/whoami", { token = k })
      assert.are.equal(403, st)
      assert.are.equal("tenant is suspended: tenant-s", doc.error)
      st, doc = req(srv, "GET", "/v1/whoami", { token = srv.token, headers = { ["X-Sandbox-Tenant"] = "tenant-s" } })
      assert.are.equal(403, st)
      assert.are.equal("tenant is suspended: tenant-s", doc.error)
      assert.are.equal(200, (req(srv, "POST", "/v1/admin/tenants/tenant-s/status", { token = srv.token,
        body = { status = "active" } })))
      assert.are.equal(200, (req(srv, "GET", "/v1/whoami", { token = k })))

      local _, issued = req(srv, "POST", "/v1/admin/tenants/tenant-s/keys", { token = srv.token, body = {} })
      assert.are.equal(200, (req(srv, "GET", "/v1/whoami", { token = issued.api_key })))
      assert.are.equal(200, (req(srv, "DELETE", "/v1/admin/keys/" .. issued.id, { token = srv.token })))
      assert.are.equal(200, (req(srv, "DELETE", "/v1/admin/keys/" .. issued.id, { token = srv.token })))
      assert.are.equal(401, (req(srv, "GET", "/v1/whoami", { token = issued.api_key })))

      local _, short = req(srv, "POST", "/v1/admin/tenants/tenant-s/keys", { token = srv.token,
        body = { expires_in_seconds = 1 } })
      assert.is_number(short.expires_at)
      -- refused once the clock the server reads has passed its expiry
      assert.is_true(wait.eventually(function() return os.time() >= short.expires_at end, 5))
      assert.are.equal(401, (req(srv, "GET", "/v1/whoami", { token = short.api_key })))
    end)

    it("keeps admin routes for admins without X-Sandbox-Tenant", function()
      local st, doc = req(srv, "GET", "/v1/admin/tenants", { token = key })
      assert.are.equal(403, st)
      assert.are.equal("admin key required", doc.error)
      st, doc = req(srv, "GET", "/v1/admin/tenants", { token = srv.token,
        headers = { ["X-Sandbox-Tenant"] = "tenant-a" } })
      assert.are.equal(403, st)
      assert.are.equal("admin operations require an admin key without X-Sandbox-Tenant", doc.error)
      local _, admin = req(srv, "POST", "/v1/admin/keys", { token = srv.token, body = { label = "ops" } })
      assert.matches("^sk_[%w_-]+_admin_[%w_-]+$", admin.api_key)
      assert.is_nil(admin.tenant_id ~= json.null and admin.tenant_id or nil)
      st, doc = req(srv, "GET", "/v1/whoami", { token = admin.api_key })
      assert.are.equal(200, st)
      assert.are.equal("admin", doc.kind)
      assert.are.equal(200, (req(srv, "GET", "/v1/admin/tenants", { token = admin.api_key })))
    end)
  end)

  describe("bodies", function()
    it("need a Content-Length, at most 6 MiB of JSON, and an object", function()
      local st, doc = req(srv, "POST", "/v1/workspaces", { token = srv.token, raw_length = false,
        body = "2\r\n{}\r\n0\r\n\r\n", headers = { ["Transfer-Encoding"] = "chunked" } })
      assert.are.equal(400, st)
      assert.are.equal("Content-Length is required", doc.error)
      st, doc = req(srv, "POST", "/v1/workspaces", { token = srv.token, body = string.rep(" ", 6 * 1024 * 1024 + 1) })
      assert.are.equal(400, st)
      assert.are.equal("request body is too large", doc.error)
      st, doc = req(srv, "POST", "/v1/workspaces", { token = srv.token, body = "{nope" })
      assert.are.equal(400, st)
      assert.are.equal("request body must be valid JSON", doc.error)
      st, doc = req(srv, "POST", "/v1/workspaces", { token = srv.token, body = "[1]" })
      assert.are.equal(400, st)
      assert.are.equal("request body must be a JSON object", doc.error)
      st, doc = req(srv, "POST", "/v1/workspaces", { token = srv.token, body = { session_id = 5 } })
      assert.are.equal(400, st)
      assert.matches("session_id", doc.error)
    end)
  end)

  describe("administration", function()
    it("creates tenants once, refuses invalid and reserved ids, and audits it", function()
      local st, t = req(srv, "POST", "/v1/admin/tenants", { token = srv.token, body = { id = "acme",
        display_name = "Acme" } })
      assert.are.equal(201, st)
      assert.same({ id = "acme", display_name = "Acme", status = "active", max_workspaces = 64,
                    max_runtimes = 4, workspaces_in_use = 0 }, t)
      assert.are.equal(409, (req(srv, "POST", "/v1/admin/tenants", { token = srv.token, body = { id = "acme" } })))
      assert.are.equal(409, (req(srv, "POST", "/v1/admin/tenants", { token = srv.token, body = { id = "Bad_Id" } })))
      assert.are.equal(409, (req(srv, "POST", "/v1/admin/tenants", { token = srv.token,
        body = { id = "management" } })))
      local _, audit = req(srv, "GET", "/v1/admin/audit?limit=5", { token = srv.token })
      local found
      for _, e in ipairs(audit.events) do if e.action == "tenant.create" and e.target == "acme" then found = e end end
      assert.is_truthy(found)
      assert.are.equal("break-glass", found.actor_kind)
      assert.are.equal("ok", found.outcome)
      assert.are.equal(400, (req(srv, "GET", "/v1/admin/audit?limit=x", { token = srv.token })))
      local _, one = req(srv, "GET", "/v1/admin/audit?limit=0", { token = srv.token })
      assert.are.equal(1, #one.events)
    end)

    it("issues keys shown once, lists them without the secret, refuses unknown permissions", function()
      local st, doc = req(srv, "POST", "/v1/admin/tenants/acme/keys", { token = srv.token,
        body = { permissions = { "root" } } })
      assert.are.equal(400, st)
      assert.are.equal("unknown key permission: root", doc.error)
      assert.are.equal(400, (req(srv, "POST", "/v1/admin/tenants/acme/keys", { token = srv.token,
        body = { expires_in_seconds = 0 } })))
      assert.are.equal(404, (req(srv, "POST", "/v1/admin/tenants/nobody/keys", { token = srv.token, body = {} })))
      local _, k = req(srv, "POST", "/v1/admin/tenants/acme/keys", { token = srv.token,
        body = { permissions = { "act_as_subjects" } } })
      assert.matches("^sk_[%w_-]+_acme_[%w_-]+$", k.api_key)
      assert.matches("^%x+$", k.id); assert.are.equal(16, #k.id)
      assert.are.equal("unnamed", k.label)
      assert.are.equal("api_key is shown once and cannot be retrieved later", k.note)
      local _, list = req(srv, "GET", "/v1/admin/tenants/acme/keys", { token = srv.token })
      local raw = json.encode(list)
      assert.is_nil(raw:find(k.api_key, 1, true))
      assert.are.equal(k.api_key:sub(1, 12), list.keys[#list.keys].key_prefix)
      assert.are.equal(404, (req(srv, "DELETE", "/v1/admin/keys/0123456789abcdef", { token = srv.token })))
    end)

    it("manages owner tenants idempotently", function()
      local st, doc = req(srv, "POST", "/v1/admin/tenants/acme/owner-tenants", { token = srv.token,
        body = { owner_tenant = "partner" } })
      assert.are.equal(201, st)
      assert.same({ tenant_id = "acme", owner_tenant = "partner" }, doc)
      assert.are.equal(201, (req(srv, "POST", "/v1/admin/tenants/acme/owner-tenants", { token = srv.token,
        body = { owner_tenant = "partner" } })))
      local _, list = req(srv, "GET", "/v1/admin/tenants/acme/owner-tenants", { token = srv.token })
      assert.are.equal(1, #list.owner_tenants)
      st, doc = req(srv, "DELETE", "/v1/admin/tenants/acme/owner-tenants/partner", { token = srv.token })
      assert.are.equal(200, st)
      assert.is_true(doc.revoked)
      st, doc = req(srv, "DELETE", "/v1/admin/tenants/acme/owner-tenants/partner", { token = srv.token })
      assert.are.equal(404, st)
      assert.are.equal("no such owner tenant: partner", doc.error)
    end)

    it("refuses template management without registries and lists the built-in", function()
      local st, doc = req(srv, "POST", "/v1/admin/templates", { token = srv.token, body = { template_id = "py",
        image = "x" } })
      assert.are.equal(409, st)
      assert.are.equal("template management is disabled: SANDBOX_IMAGE_REGISTRIES is not configured", doc.error)
      st, doc = req(srv, "GET", "/v1/admin/templates", { token = srv.token })
      assert.are.equal(200, st)
      assert.is_string(doc.builtin.default)
      st, doc = req(srv, "GET", "/v1/templates", { token = srv.token })
      assert.are.equal(200, st)
      assert.same({ templates = { "default" } }, doc)
    end)
  end)

  describe("identity", function()
    it("whoami lists the capabilities of each kind, sorted", function()
      local _, bg = req(srv, "GET", "/v1/whoami", { token = srv.token })
      assert.are.equal("break-glass", bg.kind)
      assert.same({ "keys:write", "monitoring:read", "nodes:read", "sandboxes:write", "templates:read",
                    "templates:read:all", "tenants:write", "workspaces:read", "workspaces:read:all",
                    "workspaces:write" }, bg.capabilities)
      local k = cp.tenant_key(srv, "tenant-w")
      local _, t = req(srv, "GET", "/v1/whoami", { token = k })
      assert.same({ "monitoring:read", "sandboxes:write", "templates:read", "workspaces:read",
                    "workspaces:write" }, t.capabilities)
      assert.are.equal("tenant-w", t.tenant.name)
      assert.are.equal(0, t.tenant.used_workspaces)
    end)
  end)

  describe("workspaces", function()
    it("are created idempotently with a lease whose token works on the files routes only", function()
      local st, a = req(srv, "POST", "/v1/workspaces", { token = srv.token, body = { session_id = "s1" } })
      assert.are.equal(201, st)
      assert.matches("^ws%-%x+$", a.workspace_id)
      assert.are.equal("ready", a.status)
      assert.is_true(a.created)
      assert.are.equal("/v1/workspaces/" .. a.workspace_id .. "/files", a.file_url)
      assert.are.equal(900, a.access_token_expires_in)
      assert.are.equal(json.null, a.owner)
      local _, b = req(srv, "POST", "/v1/workspaces", { token = srv.token, body = { session_id = "s1" } })
      assert.are.equal(a.workspace_id, b.workspace_id)
      assert.is_false(b.created)
      -- the workspace token is not a control-plane credential
      assert.are.equal(401, (req(srv, "GET", "/v1/workspaces", { token = a.access_token })))
    end)

    it("keep tenants and subjects apart, and resolve never creates", function()
      local k = cp.tenant_key(srv, "tenant-x", { act_as_subjects = true })
      local function create(subject, sid, extra)
        local body = { session_id = sid }
        for kk, v in pairs(extra or {}) do body[kk] = v end
        return req(srv, "POST", "/v1/workspaces", { token = k, body = body,
          headers = subject and { ["X-Acting-Subject"] = subject } or nil })
      end
      local _, wa = create(SUBJECT_A, "same")
      local _, wb = create(SUBJECT_B, "same")
      local _, wn = create(nil, "same")
      assert.are_not.equal(wa.workspace_id, wb.workspace_id)
      assert.are_not.equal(wa.workspace_id, wn.workspace_id)
      assert.are.equal("tenant-x/" .. SUBJECT_A, wa.owner)
      local st, doc = create(SUBJECT_A, "same", { principal = { kind = "service", id = "x" } })
      assert.are.equal(400, st)
      assert.are.equal("principal cannot be combined with X-Acting-Subject", doc.error)
      st, doc = create(nil, "same", { owner = "tenant-x/" .. SUBJECT_A })
      assert.are.equal(403, st)
      assert.matches("owner is derived from the credential", doc.error)
      -- B cannot see A's workspace: 404 and an audit row
      st, doc = req(srv, "DELETE", "/v1/workspaces/" .. wa.workspace_id, { token = k,
        headers = { ["X-Acting-Subject"] = SUBJECT_B } })
      assert.are.equal(404, st)
      assert.same({ error = "workspace not found" }, doc)
      local _, audit = req(srv, "GET", "/v1/admin/audit", { token = srv.token })
      assert.are.equal("workspace.access", audit.events[1].action)
      assert.are.equal(wa.workspace_id, audit.events[1].target)
      assert.are.equal("denied", audit.events[1].outcome)
      -- resolve finds, never creates
      st, doc = req(srv, "POST", "/v1/workspaces/resolve", { token = k, body = { session_id = "same" },
        headers = { ["X-Acting-Subject"] = SUBJECT_A } })
      assert.are.equal(200, st)
      assert.same({ workspace_id = wa.workspace_id, sandbox_id = json.null, template = json.null }, doc)
      st, doc = req(srv, "POST", "/v1/workspaces/resolve", { token = k, body = { session_id = "never" } })
      assert.are.equal(404, st)
      assert.are.equal("workspace not found", doc.error)
      local _, list = req(srv, "GET", "/v1/workspaces", { token = k, headers = { ["X-Acting-Subject"] = SUBJECT_A } })
      assert.are.equal(1, #list.workspaces)
      assert.are.equal(wa.workspace_id, list.workspaces[1].id)
      assert.is_nil(list.workspaces[1].tenant)
      local _, all = req(srv, "GET", "/v1/workspaces", { token = srv.token })
      assert.is_true(#all.workspaces >= 3)
      assert.is_string(all.workspaces[1].tenant)
    end)

    it("hold the tenant's workspace limit, and delete frees the slot and the volume", function()
      local k = cp.tenant_key(srv, "tenant-l", { max_workspaces = 1 })
      local _, w = req(srv, "POST", "/v1/workspaces", { token = k, body = { session_id = "one" } })
      local st, doc = req(srv, "POST", "/v1/workspaces", { token = k, body = { session_id = "two" } })
      assert.are.equal(429, st)
      assert.matches("tenant%-l", doc.error)
      assert.is_truthy(io.open(srv.data .. "/workspaces/" .. w.workspace_id .. "/disk.img"))
      st, doc = req(srv, "DELETE", "/v1/workspaces/" .. w.workspace_id .. "?purge=1", { token = k })
      assert.are.equal(200, st)
      assert.same({ workspace_id = w.workspace_id, released = true, data_retained = false, purged = true,
                    checkpoints_purged = 0 }, doc)
      assert.is_nil(io.open(srv.data .. "/workspaces/" .. w.workspace_id))
      assert.are.equal(201, (req(srv, "POST", "/v1/workspaces", { token = k, body = { session_id = "two" } })))
    end)

    it("refuse bad session ids and principals", function()
      local st = req(srv, "POST", "/v1/workspaces", { token = srv.token, body = { session_id = "" } })
      assert.are.equal(400, st)
      st = req(srv, "POST", "/v1/workspaces", { token = srv.token, body = { session_id = string.rep("x", 257) } })
      assert.are.equal(400, st)
      local doc
      st, doc = req(srv, "POST", "/v1/workspaces", { token = srv.token, body = { session_id = string.rep("x", 200) } })
      assert.are.equal(503, st)
      assert.are.equal("failed to record ownership", doc.error)
      st = req(srv, "POST", "/v1/workspaces", { token = srv.token, body = { session_id = "p",
        principal = { kind = "" } } })
      assert.are.equal(400, st)
      st = req(srv, "POST", "/v1/workspaces", { token = srv.token, body = { session_id = "p", principal = "x" } })
      assert.are.equal(400, st)
      st = req(srv, "POST", "/v1/workspaces", { token = srv.token, body = { session_id = "p", owner = "no-slash" } })
      assert.are.equal(400, st)
    end)
  end)
end)

describe("Control Plane sandboxes #integration", function()
  local srv

  setup(function() srv = server.start { args = { "--cp-idle-ttl", "3" } } end)
  teardown(function() if srv then srv.stop() end end)

  local function workspace(token, sid)
    local _, w = req(srv, "POST", "/v1/workspaces", { token = token, body = { session_id = sid } })
    return w.workspace_id
  end

  it("start with wait, are reused per workspace, give tokens and are released", function()
    local ws = workspace(srv.token, "sb-one")
    local st, lease = req(srv, "POST", "/v1/sandboxes", { token = srv.token, body = { workspace_id = ws } })
    assert.are.equal(201, st, json.encode(lease))
    assert.matches("^sb%-%x+$", lease.id)
    assert.are.equal("running", lease.status)
    assert.are.equal(ws, lease.workspace_id)
    assert.are.equal("default", lease.template)
    assert.are.equal("bubblewrap", lease.runtime_class)
    assert.are.equal("/v1/sandboxes/" .. lease.id .. "/mcp", lease.mcp_url)
    assert.is_string(lease.access_token)
    local st2, again = req(srv, "POST", "/v1/sandboxes", { token = srv.token, body = { workspace_id = ws } })
    assert.are.equal(201, st2)
    assert.are.equal(lease.id, again.id)
    local _, got = req(srv, "GET", "/v1/sandboxes/" .. lease.id, { token = srv.token })
    assert.are.equal("running", got.status)
    assert.is_nil(got.access_token)
    local _, tok = req(srv, "POST", "/v1/sandboxes/" .. lease.id .. "/token", { token = srv.token })
    assert.are.equal(lease.id, tok.id)
    assert.are.equal(900, tok.access_token_expires_in)
    local _, res = req(srv, "POST", "/v1/workspaces/resolve", { token = srv.token, body = { session_id = "sb-one" } })
    assert.are.equal(lease.id, res.sandbox_id)
    local _, list = req(srv, "GET", "/v1/sandboxes", { token = srv.token })
    local seen = false
    for _, s in ipairs(list.sandboxes) do seen = seen or s.id == lease.id end
    assert.is_true(seen)
    local dst, ddoc = req(srv, "DELETE", "/v1/workspaces/" .. ws, { token = srv.token })
    assert.are.equal(409, dst)
    assert.are.equal("workspace still has active Runtime Pods", ddoc.error)
    local rst, rel = req(srv, "DELETE", "/v1/sandboxes/" .. lease.id, { token = srv.token })
    assert.are.equal(200, rst)
    assert.same({ id = lease.id, released = true }, rel)
    local _, gone = req(srv, "GET", "/v1/sandboxes/" .. lease.id, { token = srv.token })
    assert.same({ id = lease.id, status = "released" }, gone)
    assert.are.equal(404, (req(srv, "POST", "/v1/sandboxes/" .. lease.id .. "/token", { token = srv.token })))
    assert.are.equal(200, (req(srv, "DELETE", "/v1/workspaces/" .. ws, { token = srv.token })))
  end)

  it("answer 202 and a pending view without wait", function()
    local ws = workspace(srv.token, "sb-two")
    local st, p = req(srv, "POST", "/v1/sandboxes", { token = srv.token, body = { workspace_id = ws, wait = false } })
    assert.is_true(st == 202 or st == 201)
    if st == 202 then
      assert.are.equal("pending", p.status)
      assert.is_string(p.access_token)
      assert.are.equal(ws, p.workspace_id)
    end
    local status
    wait.eventually(function()
      local _, g = req(srv, "GET", "/v1/sandboxes/" .. p.id, { token = srv.token })
      status = g.status
      return status == "running"
    end)
    assert.are.equal("running", status)
    req(srv, "DELETE", "/v1/sandboxes/" .. p.id, { token = srv.token })
  end)

  it("refuse bad input, foreign workspaces and unknown templates", function()
    local st, doc = req(srv, "POST", "/v1/sandboxes", { token = srv.token, body = { workspace_id = "nope" } })
    assert.are.equal(400, st)
    assert.matches("workspace_id", doc.error)
    st, doc = req(srv, "POST", "/v1/sandboxes", { token = srv.token, body = { workspace_id = "ws-0123456789ab" } })
    assert.are.equal(404, st)
    assert.are.equal("workspace not found", doc.error)
    local ws = workspace(srv.token, "sb-three")
    st, doc = req(srv, "POST", "/v1/sandboxes", { token = srv.token, body = { workspace_id = ws,
      template_id = "gpu" } })
    assert.are.equal(400, st)
    assert.are.equal("unknown template: gpu", doc.error)
    st = req(srv, "POST", "/v1/sandboxes", { token = srv.token, body = { workspace_id = ws, image = "x" } })
    assert.are.equal(400, st)
    local k = cp.tenant_key(srv, "tenant-sb")
    assert.are.equal(404, (req(srv, "POST", "/v1/sandboxes", { token = k, body = { workspace_id = ws } })))
  end)

  it("hold a tenant's max_runtimes and release idle runtimes", function()
    local k = cp.tenant_key(srv, "tenant-cap", { max_runtimes = 1 })
    local w1, w2 = workspace(k, "c1"), workspace(k, "c2")
    local st, one = req(srv, "POST", "/v1/sandboxes", { token = k, body = { workspace_id = w1 } })
    assert.are.equal(201, st)
    local st2, doc = req(srv, "POST", "/v1/sandboxes", { token = k, body = { workspace_id = w2 } })
    assert.are.equal(429, st2)
    assert.matches("tenant%-cap", doc.error)
    -- the idle TTL of this server is 3 s
    local status
    wait.eventually(function()
      local _, g = req(srv, "GET", "/v1/sandboxes/" .. one.id, { token = k })
      status = g.status
      return status == "released"
    end)
    assert.are.equal("released", status)
    assert.are.equal(201, (req(srv, "POST", "/v1/sandboxes", { token = k, body = { workspace_id = w2 } })))
  end)
end)

describe("Control Plane restart and command line #integration", function()
  it("keeps tenants, keys and workspaces across a restart, with a fresh break-glass token", function()
    local srv = server.start {}
    local k = cp.tenant_key(srv, "keeper")
    local _, w = req(srv, "POST", "/v1/workspaces", { token = k, body = { session_id = "kept" } })
    local old = srv.token
    srv.stop(true)
    local again = server.start { data = srv.data }
    local ok, err = pcall(function()
      assert.are_not.equal(old, again.token)
      assert.are.equal(401, (req(again, "GET", "/v1/whoami", { token = old })))
      local st, w2 = req(again, "POST", "/v1/workspaces", { token = k, body = { session_id = "kept" } })
      assert.are.equal(201, st)
      assert.are.equal(w.workspace_id, w2.workspace_id)
      assert.is_false(w2.created)
    end)
    again.stop()
    fs.rm_rf(srv.data)
    os.remove(srv.log)
    assert(ok, err)
  end)

  it("prints lasting credentials with tenants add and keys add", function()
    local data = fs.tmpdir("unsbd-cli")
    local function run(args)
      local p = io.popen(server.bin .. " " .. args .. " --data " .. fs.quote(data) .. " 2>&1; echo EXIT=$?")
      local out = p:read("*a")
      p:close()
      return out, tonumber(out:match("EXIT=(%d+)"))
    end
    local out, code = run("tenants add cli-t --max-runtimes 2")
    assert.are.equal(0, code, out)
    assert.matches("SANDBOX_TENANT=cli%-t", out)
    out, code = run("tenants add cli-t")
    assert.are.equal(1, code, out)
    out, code = run("keys add --tenant cli-t --act-as-subjects")
    assert.are.equal(0, code, out)
    local key = out:match("SANDBOX_TOKEN=(sk_%S+)")
    assert.is_truthy(key)
    out, code = run("keys add --admin")
    assert.are.equal(0, code, out)
    local admin = out:match("SANDBOX_TOKEN=(sk_[%w_-]+_admin_%S+)")
    assert.is_truthy(admin)
    out, code = run("keys add --tenant missing")
    assert.are.equal(1, code, out)
    out, code = run("tenants add BAD")
    assert.are.equal(2, code, out)
    local srv = server.start { data = data }
    local ok, err = pcall(function()
      local st, who = req(srv, "GET", "/v1/whoami", { token = key, headers = { ["X-Acting-Subject"] = SUBJECT_A } })
      assert.are.equal(200, st)
      assert.are.equal("cli-t", who.tenant_id)
      st, who = req(srv, "GET", "/v1/whoami", { token = admin })
      assert.are.equal(200, st)
      assert.are.equal("admin", who.kind)
    end)
    srv.stop(true)
    fs.rm_rf(data)
    os.remove(srv.log)
    assert(ok, err)
  end)
end)
