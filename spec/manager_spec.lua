-- #integration specs of unsandbox.manager against the local Control
-- Plane of a real unsandboxd: the §8 rows served by the frame (health,
-- identity, workspaces, runtimes, leases, admin), lease reuse and refresh
-- (a fake client clock and a short server token TTL), acting subjects of
-- two interleaved coroutines, trace context, error mapping, and "nothing
-- was sent" for local errors, proven by the server's request counters.
local server = require "spec.helpers.unsandboxd"
local cp = require "spec.helpers.cp"
local wait = require "spec.helpers.wait"

local SUBJ_A = string.rep("a", 32)
local SUBJ_B = string.rep("b", 32)

-- Requests the server answered, by route, from its /metrics (the
-- /metrics route itself left out, so reading the counters changes none).
local function counters(srv)
  local st, _, _, raw = cp.request(srv, "GET", "/metrics")
  assert.equal(200, st)
  local by, total = {}, 0
  for route, status, n in raw:gmatch('sandbox_control_plane_requests_total{route="([^"]+)",status="(%d+)"} (%d+)') do
    if route ~= "/metrics" then
      by[route .. " " .. status] = (by[route .. " " .. status] or 0) + tonumber(n)
      total = total + tonumber(n)
    end
  end
  return total, by
end

-- The count of the routes whose "<pattern> <status>" matches lua_pattern.
local function count_of(by, lua_pattern)
  local n = 0
  for k, v in pairs(by) do
    if k:match(lua_pattern) then n = n + v end
  end
  return n
end

describe("unsandbox.manager #integration", function()
  local srv, unsandbox

  setup(function()
    -- scoped tokens live 65 s: 5 s more than the client's 60 s margin, so
    -- a fake clock moved 6 s makes every lease's token "expiring"
    srv = server.start { args = { "--cp-token-ttl", "65" } }
    unsandbox = require "unsandbox"
  end)
  teardown(function() if srv then srv.stop() end end)

  -- a result's fields from the server (the library adds the call's timing)
  local function fields(r)
    local t = {}
    for k, v in pairs(r) do if k ~= "timing" then t[k] = v end end
    return t
  end

  local function manager(extra)
    local o = { url = srv.cp_url, token = srv.token, session = "spec-session", env = {} }
    for k, v in pairs(extra or {}) do o[k] = v end
    return unsandbox.manager(o)
  end

  describe("operations and identity", function()
    it("ping()s /healthz and reads the public routes", function()
      local m = manager()
      local doc, rid = assert(m:ping())
      assert.equal("ok", doc.status)
      assert.matches("^%x+$", rid)
      local live = assert(m:livez())
      assert.equal("alive", live.status)
      assert.equal(1, live.timing.exchanges)   -- the library's, beside the server's fields
      assert.same({ status = "ready" }, fields(assert(m:readyz())))
      assert.same({ local_login = true, oidc = false }, fields(assert(m:auth_methods())))
      assert.matches("sandbox_control_plane_requests_total", (assert(m:metrics())))
      local r, err = m:oidc_login()
      assert.is_nil(r)
      assert.equal(404, err.status)
    end)

    it("whoami(), templates() and monitoring() with the break-glass token", function()
      local m = manager()
      local me = assert(m:whoami())
      assert.equal("break-glass", me.kind)
      assert.is_table(me.capabilities)
      local t = assert(m:templates())
      assert.is_truthy(table.concat(t.templates, ","):find("default", 1, true))
      -- the platform's closed MonitoringSnapshot: metrics count nodes and
      -- runtimes, and every node has a status
      local mon = assert(m:monitoring())
      assert.same({ "cluster", true }, { mon.scope, mon.nodes_visible })
      assert.equal(#mon.nodes, mon.metrics.nodes)
      assert.equal(#mon.runtimes, mon.metrics.runtimes)
      assert.is_true(#mon.nodes >= 1)
      for _, n in ipairs(mon.nodes) do assert.equal("ready", n.status) end
    end)

    it("maps HTTP errors: status, the server's text, the request id", function()
      local m = manager { token = "sk_nope" }
      local r, err = m:whoami()
      assert.is_nil(r)
      assert.same({ "http", 401, "unauthorized" }, { err.kind, err.status, err.message })
      assert.matches("^%x+$", err.request_id)
    end)
  end)

  describe("workspaces and runtimes", function()
    it("ensure_workspace() creates once and reuses its lease without a request", function()
      local m = manager { session = "ws-reuse" }
      local ws = assert(m:ensure_workspace())
      assert.matches("^ws%-%x+$", ws.workspace_id)
      assert.is_true(ws.created)
      local before = counters(srv)
      local again = assert(m:ensure_workspace())
      assert.equal(ws.workspace_id, again.workspace_id)
      assert.equal(before, (counters(srv)), "no request for a reused lease")
      local fresh = assert(m:ensure_workspace(nil, nil, true))      -- refresh: asks again, same id
      assert.equal(ws.workspace_id, fresh.workspace_id)
      assert.equal(before + 1, (counters(srv)))
      local other = manager { session = "ws-reuse" }               -- another Manager: same workspace
      assert.equal(ws.workspace_id, assert(other:ensure_workspace()).workspace_id)
    end)

    it("resolve_workspace() never creates; delete_workspace() removes", function()
      local m = manager { session = "ws-resolve" }
      local r, err = m:resolve_workspace()
      assert.is_nil(r)
      assert.same({ 404, "workspace not found" }, { err.status, err.message })
      local ws = assert(m:ensure_workspace())
      local res = assert(m:resolve_workspace())
      assert.equal(ws.workspace_id, res.workspace_id)
      assert.is_nil(res.sandbox_id)
      local del = assert(m:delete_workspace(nil, true))
      assert.is_true(del.released)
      assert.is_nil(m:status().workspace_id, "the lease is forgotten")
      assert.is_nil(m:resolve_workspace())
    end)

    it("ensure_runtime() creates, reuses, refuses another template locally, and releases", function()
      local now = 1000
      local m = manager { session = "rt-life", clock = function() return now end }
      local rt = assert(m:ensure_runtime())
      assert.matches("^sb%-%x+$", rt.id)
      assert.equal("default", rt.template)
      local st = m:status()
      assert.is_true(st.workspace_ready and st.runtime_ready)
      assert.equal(rt.id, st.sandbox_id)
      local before, by = counters(srv)
      assert.equal(rt.id, assert(m:ensure_runtime()).id)
      assert.equal(before, (counters(srv)), "a fresh lease is reused: no request")
      -- 6 s later both tokens expire within the 60 s margin: the workspace
      -- lease is asked for again and the runtime's token refreshed, nothing more
      now = now + 6
      local again = assert(m:ensure_runtime())
      assert.equal(rt.id, again.id)
      local after, by2 = counters(srv)
      assert.equal(before + 2, after)
      assert.equal(count_of(by, "/token 200$") + 1, count_of(by2, "/token 200$"))
      assert.equal(count_of(by, "^/v1/workspaces 20%d$") + 1, count_of(by2, "^/v1/workspaces 20%d$"))
      local r, err = m:ensure_runtime(nil, "gpu")
      assert.is_nil(r)
      assert.same({ "validation", 409 }, { err.kind, err.status })
      assert.equal(after, (counters(srv)), "the 409 sent nothing")
      assert.same(rt.id, assert(m:lookup_runtime()).id)
      local list = assert(m:list_runtimes())
      local found
      for _, s in ipairs(list) do found = found or s.id == rt.id end
      assert.is_true(found)
      assert.is_true(assert(m:release_runtime()).released)
      assert.equal("released", assert(m:get_runtime(rt.id)).status)
      r, err = m:lookup_runtime("rt-life")
      assert.is_nil(r)
      assert.same({ 404, "sandbox 'rt-life' is not running" }, { err.status, err.message })
      assert.same({ released = false, reason = "no active Runtime" }, m:release_runtime())
    end)

    it("refreshes a lease when the client's refresh period has passed (fake clock)", function()
      local now = 5000
      local m = manager { session = "rt-stale", clock = function() return now end, refresh = 5 }
      -- (the server's 65 s tokens stay clear of the margin for these 5 s)
      local ws = assert(m:ensure_workspace())
      local before = counters(srv)
      now = now + 4
      assert(m:ensure_workspace())
      assert.equal(before, (counters(srv)))
      now = now + 1
      assert.equal(ws.workspace_id, assert(m:ensure_workspace()).workspace_id)
      assert.equal(before + 1, (counters(srv)))
    end)

    it("forgets a runtime the server no longer knows and makes a new one (404 on refresh)", function()
      local now = 1000
      local m = manager { session = "rt-gone", clock = function() return now end }
      local rt = assert(m:ensure_runtime())
      assert(manager():delete_runtime(rt.id))                -- released behind the Manager's back
      assert.equal(rt.id, assert(m:ensure_runtime()).id, "within the refresh period the lease is trusted")
      now = now + 60                                          -- stale: the token refresh 404s
      local again = assert(m:ensure_runtime())                -- forget, create
      assert.are_not.equal(rt.id, again.id)
      assert(m:release_runtime())
    end)

    it("create_runtime(), runtime_token() and get_runtime() by id", function()
      local m = manager { session = "rt-raw" }
      local ws = assert(m:ensure_workspace())
      local pending = assert(m:create_runtime(ws.workspace_id, nil, false))
      assert.equal("pending", pending.status)
      local view
      wait.eventually(function()
        view = assert(m:get_runtime(pending.id))
        return view.status ~= "pending"
      end, 20)
      assert.equal("running", view.status)
      local tok = assert(m:runtime_token(pending.id))
      assert.equal(pending.id, tok.id)
      assert.is_string(tok.access_token)
      assert.is_true(assert(m:delete_runtime(pending.id)).released)
    end)
  end)

  describe("acting subjects", function()
    local key

    setup(function()
      key = cp.tenant_key(srv, "subjects", { act_as_subjects = true })
    end)

    it("two interleaved coroutines on one Manager each get their own workspace", function()
      local m = manager { token = key, session = "shared-key" }
      local got = {}
      local function worker(subject)
        return coroutine.wrap(function()
          m:with_subject(subject, function()
            got[subject] = assert(m:ensure_workspace()).workspace_id
            coroutine.yield()
            local seen = {}
            for _, w in ipairs(assert(m:list_workspaces())) do seen[#seen + 1] = w.id end
            got[subject .. ":list"] = seen
            coroutine.yield()
            got[subject .. ":again"] = assert(m:ensure_workspace()).workspace_id
          end)
        end)
      end
      local a, b = worker(SUBJ_A), worker(SUBJ_B)
      a() b() a() b() a() b()
      assert.are_not.equal(got[SUBJ_A], got[SUBJ_B])
      assert.same({ got[SUBJ_A] }, got[SUBJ_A .. ":list"])
      assert.same({ got[SUBJ_B] }, got[SUBJ_B .. ":list"])
      assert.equal(got[SUBJ_A], got[SUBJ_A .. ":again"])
      assert.equal(got[SUBJ_B], got[SUBJ_B .. ":again"])
      -- without a subject: the tenant's own namespace, a third workspace
      local plain = assert(m:ensure_workspace()).workspace_id
      assert.are_not.equal(plain, got[SUBJ_A])
      assert.are_not.equal(plain, got[SUBJ_B])
    end)

    it("is refused by the server for keys without act_as_subjects, and for break-glass", function()
      local plain = cp.tenant_key(srv, "nosubjects")
      local m = manager { token = plain }
      local r, err = m:with_subject(SUBJ_A, m.whoami, m)
      assert.is_nil(r)
      assert.equal(403, err.status)
      local bg = manager()
      r, err = bg:with_subject(SUBJ_A, bg.whoami, bg)
      assert.is_nil(r)
      assert.same({ 403, "this credential may not act for a subject" }, { err.status, err.message })
      local mk = manager { token = key }
      assert.equal(SUBJ_A, assert(mk:with_subject(SUBJ_A, mk.whoami, mk)).acting_subject)
    end)
  end)

  describe("trace context", function()
    it("sends the bound trace id (the server answers it as X-Request-Id), else a random one", function()
      local m = manager()
      local id = unsandbox.new_trace_id()
      local _, rid = unsandbox.trace(id, function() return assert(m:whoami()) end)
      assert.equal(id, rid)
      local _, r1 = assert(m:whoami())
      local _, r2 = assert(m:whoami())
      assert.are_not.equal(r1, r2)
      assert.are_not.equal(id, r1)
    end)
  end)

  describe("administration", function()
    it("tenants, keys, owner tenants, audit and templates", function()
      local m = manager()
      local t = assert(m:create_tenant("admin-spec", { display_name = "Spec", max_runtimes = 2 }))
      assert.same({ "admin-spec", "active", 2 }, { t.id, t.status, t.max_runtimes })
      local ids = {}
      for _, x in ipairs(assert(m:list_tenants()).tenants) do ids[x.id] = true end
      assert.is_true(ids["admin-spec"])
      local k = assert(m:issue_tenant_key("admin-spec", { label = "ci", permissions = { "act_as_subjects" } }))
      assert.matches("^sk_", k.api_key)
      local keys = assert(m:list_tenant_keys("admin-spec")).keys
      assert.equal(1, #keys)
      assert.is_nil(keys[1].api_key)
      local ak = assert(m:issue_admin_key { label = "ops" })
      local found
      for _, x in ipairs(assert(m:list_admin_keys()).keys) do found = found or x.id == ak.id end
      assert.is_true(found)
      assert.is_true(assert(m:revoke_key(k.id)).revoked)
      local r, err = manager { token = k.api_key }:whoami()
      assert.is_nil(r)
      assert.equal(401, err.status)
      assert(m:allow_owner_tenant("admin-spec", "subjects"))
      assert.equal(1, #assert(m:list_owner_tenants("admin-spec")).owner_tenants)
      assert(m:revoke_owner_tenant("admin-spec", "subjects"))
      assert.equal("suspended", assert(m:set_tenant_status("admin-spec", "suspended")).status)
      assert.equal("active", assert(m:set_tenant_status("admin-spec", "active")).status)
      assert.equal("suspended", assert(m:suspend_tenant("admin-spec")).status)
      local events = assert(m:audit(5)).events
      assert.is_true(#events >= 1 and #events <= 5)
      assert.is_table(assert(m:list_admin_templates()).builtin)
      r, err = m:put_template("mine", "registry.example/img:1")
      assert.is_nil(r)
      assert.equal(409, err.status)
      r, err = m:delete_template("mine")
      assert.is_nil(r)
      assert.equal(409, err.status)
      r, err = manager { tenant = "subjects" }:list_tenants()
      assert.is_nil(r)
      assert.equal(403, err.status)
    end)
  end)

  describe("local errors send nothing", function()
    it("is shown by the server's request counters", function()
      local m = manager()
      local none = manager { token = "" }
      local before = counters(srv)
      assert.equal("credentials", select(2, none:whoami()).kind)
      assert.equal("credentials", select(2, none:ensure_runtime()).kind)
      assert.has_error(function() m:stat_object { scope = "upload", upload_id = "u1" } end)
      assert.has_error(function() m:read_file("/etc/passwd") end)
      assert.has_error(function() m:with_subject("NOT-HEX", m.whoami, m) end)
      assert.has_error(function() m:call("GET", "/v1/whoami", { headers = { Authorization = "x" } }) end)
      assert.has_error(function() m:shell_session("run", "s1") end)
      assert.same({ released = false, reason = "no active Runtime" }, m:release_runtime("never-made"))
      assert.equal(before, (counters(srv)))
    end)
  end)
end)
