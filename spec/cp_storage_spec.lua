-- #integration specs of counted storage on the Control Plane ("Sharing
-- one machine", docs/internals.md): a tenant's workspace volumes,
-- objects and their versions, and checkpoints are in the one ledger the
-- execution API uses; a tenant over its quota gets the platform's 429
-- ("storage limit reached for tenant <id>") before a byte is written,
-- a server over its budget 429 "storage capacity is exhausted; this is
-- transient, retry later", and other tenants go on. Played with the API
-- only against a server with 16 MiB volumes and a 96 MiB budget (a
-- tenant's default quota: 24 MiB). Every loop is bounded in count.
local server = require "spec.helpers.unsandboxd"
local cp = require "spec.helpers.cp"
local mcp = require "spec.helpers.mcp"
local obj = require "spec.helpers.objects"
local core = require "unsandbox.core"
local json = require "cjson"
local fs = require "spec.helpers.fs"

local MiB = 1024 * 1024
local SUBJ = string.rep("c", 32)
local req = cp.request

local function random_bytes(n)
  local f = assert(io.open("/dev/urandom", "rb"))
  local s = f:read(n)
  f:close()
  return s
end

local function files_in(dir)
  local p = io.popen("ls -A " .. fs.quote(dir) .. " 2>/dev/null")
  local n = 0
  for _ in p:lines() do n = n + 1 end
  p:close()
  return n
end

local function as_subject() return { ["X-Acting-Subject"] = SUBJ } end

describe("storage: the ledger and quotas, Control Plane #integration", function()
  local srv

  setup(function() srv = server.start { args = { "--disk-mb", "16", "--disk-budget-mb", "96" } } end)
  teardown(function() if srv then srv.stop() end end)
  after_each(function() assert.are.equal(200, (req(srv, "GET", "/livez"))) end)

  it("objects count: the tenant gets 429 with the platform's words, nothing is stored, another tenant goes on",
    function()
    local key = cp.tenant_key(srv, "fill-obj", { act_as_subjects = true })
    local blob = random_bytes(3 * MiB)
    local stored, refused = 0, nil
    for i = 1, 12 do
      local loc = { scope = "upload", upload_id = "u1", path = "source/f" .. i .. ".bin" }
      local st, doc = obj.post(srv, key, loc, blob, { headers = as_subject() })
      if st ~= 201 then refused = { st = st, doc = doc, loc = loc }; break end
      stored = stored + 1
    end
    -- the refused object has no version; a ticket upload is refused before its body is read
    local vst = refused and obj.get(srv, key, "/versions", refused.loc, { headers = as_subject() })
    local tloc = { scope = "upload", upload_id = "u1", path = "source/by-ticket.bin" }
    local tst, ticket = obj.ticket(srv, key, tloc, "upload", { max_bytes = MiB }, as_subject())
    local ust, udoc = obj.upload(srv, ticket.access_token, random_bytes(MiB))
    local tvst = obj.get(srv, key, "/versions", tloc, { headers = as_subject() })
    local leftovers = files_in(srv.data .. "/objects/tmp")
    -- the tenant sees its own usage; the admin the totals
    local _, mon = req(srv, "GET", "/v1/monitoring", { token = key })
    local _, all = req(srv, "GET", "/v1/monitoring", { token = srv.token })
    local _, metrics = req(srv, "GET", "/metrics")
    -- another tenant is not held up
    local other = cp.tenant_key(srv, "other-obj", { act_as_subjects = true })
    local ost = obj.post(srv, other, { scope = "upload", upload_id = "u1", path = "source/ok.txt" }, "fine",
                         { headers = as_subject() })
    local wst, ws = req(srv, "POST", "/v1/workspaces", { token = other, body = { session_id = "still-works" } })
    -- deleting with purge gives the bytes back
    for i = 1, stored do
      obj.get(srv, key, "", { scope = "upload", upload_id = "u1", path = "source/f" .. i .. ".bin",
              purge_versions = "true" }, { method = "DELETE", headers = as_subject() })
    end
    local _, freed = req(srv, "GET", "/v1/monitoring", { token = key })
    req(srv, "DELETE", "/v1/workspaces/" .. (ws.workspace_id or "none"), { token = other })

    assert.is_true(stored >= 1)
    assert.is_not_nil(refused, "12 objects of 3 MiB were stored with a quota of 24 MiB")
    assert.are.equal(429, refused.st)
    assert.are.equal("storage limit reached for tenant fill-obj", refused.doc.error)
    assert.are.equal(404, vst)
    assert.are.equal(201, tst)
    assert.are.equal(429, ust)
    assert.are.equal("storage limit reached for tenant fill-obj", udoc.error)
    assert.are.equal(404, tvst)
    assert.are.equal(0, leftovers)
    assert.are.equal("tenant", mon.scope)
    assert.are.equal(24 * MiB, mon.metrics.storage_quota_bytes)
    assert.is_true(mon.metrics.storage_used_bytes >= stored * 3 * MiB)
    assert.is_true(mon.metrics.storage_used_bytes <= 24 * MiB)
    assert.are.equal(96 * MiB, all.metrics.storage_budget_bytes)
    assert.is_true(all.metrics.storage_used_bytes >= mon.metrics.storage_used_bytes)
    assert.matches('sandbox_control_plane_storage_bytes{kind="object"} ' .. stored * 3 * MiB .. "\n", metrics, 1, true)
    assert.are.equal(201, ost)
    assert.are.equal(201, wst)
    assert.are.equal(0, freed.metrics.storage_used_bytes)
  end)

  it("checkpoints count: 429 once the tenant's quota is used, the list keeps only whole ones", function()
    local key = cp.tenant_key(srv, "fill-ckpt")
    local ws, sb = mcp.sandbox(srv, "ckpt", key)
    mcp.sh(srv, sb, "head -c 3145728 /dev/urandom > /workspace/blob && echo ok", 30)
    local made, refused = {}, nil
    for _ = 1, 10 do
      local st, doc = req(srv, "POST", "/v1/workspaces/" .. ws.workspace_id .. "/checkpoints",
                          { token = key, timeout = 120 })
      if st ~= 201 then refused = { st = st, doc = doc }; break end
      made[#made + 1] = doc.checkpoint_id
    end
    local _, list = req(srv, "GET", "/v1/workspaces/" .. ws.workspace_id .. "/checkpoints", { token = key })
    local leftovers = files_in(srv.data .. "/objects/tmp")
    req(srv, "DELETE", "/v1/sandboxes/" .. sb.id, { token = key })
    local dst = req(srv, "DELETE", "/v1/workspaces/" .. ws.workspace_id .. "?purge=1", { token = key })

    assert.is_true(#made >= 1)
    assert.is_not_nil(refused, "10 checkpoints of 3 MiB were stored with a quota of 24 MiB")
    assert.are.equal(429, refused.st)
    assert.are.equal("storage limit reached for tenant fill-ckpt", refused.doc.error)
    assert.are.equal(#made, #list.checkpoints)
    assert.are.equal(0, leftovers)
    assert.are.equal(200, dst)
  end)

  it("the Lua Manager surfaces the 429 as an ordinary http error with the server's message", function()
    local key = cp.tenant_key(srv, "fill-lua", { act_as_subjects = true })
    local unsandbox = require "unsandbox"
    local m = unsandbox.manager { url = srv.cp_url, token = key, env = {} }
    local blob = random_bytes(3 * MiB)
    local err
    m:with_subject(SUBJ, function()
      for i = 1, 12 do
        local ok, e = m:put_object({ scope = "upload", upload_id = "lua", path = "source/" .. i }, blob)
        if not ok then err = e; break end
      end
    end)
    assert.is_not_nil(err)
    assert.are.equal("http", err.kind)
    assert.are.equal(429, err.status)
    assert.are.equal("storage limit reached for tenant fill-lua", err.message)
  end)
end)

describe("storage: a workspace when the budget is used up #integration", function()
  it("is 429 with no row and no volume, not 201 with nothing behind it", function()
    -- a 64 MiB budget: four keys with one 16 MiB session each use it all
    local srv = server.start { args = { "--disk-mb", "16", "--disk-budget-mb", "64" } }
    finally(function() if server.alive(srv.pid) then srv.stop() end end)
    local clients, sessions = {}, {}
    for i = 1, 4 do
      local pk, sk = server.add_key(srv)
      clients[i] = core.client { url = srv.url, public_key = pk, secret_key = sk, timeout = 60000 }
      local r = clients[i]:request("POST", "/sessions", "{}")
      sessions[i] = { status = r.status, doc = json.decode(r.body) }
    end
    local key = cp.tenant_key(srv, "late")
    local st, doc = req(srv, "POST", "/v1/workspaces", { token = key, body = { session_id = "late-ws" } })
    local rst = req(srv, "POST", "/v1/workspaces/resolve", { token = key, body = { session_id = "late-ws" } })
    local _, list = req(srv, "GET", "/v1/workspaces", { token = key })
    local volumes = files_in(srv.data .. "/workspaces")
    -- a session given back makes room: the workspace and its runtime work
    clients[1]:request("DELETE", "/sessions/" .. sessions[1].doc.session_id)
    local st2, lease = req(srv, "POST", "/v1/workspaces", { token = key, body = { session_id = "late-ws" } })
    local sst, sb = req(srv, "POST", "/v1/sandboxes", { token = key,
                        body = { workspace_id = lease and lease.workspace_id }, timeout = 120 })
    local out = sst == 201 and mcp.sh(srv, sb, "echo alive > /workspace/f && cat /workspace/f", 30)
    for _, c in ipairs(clients) do c:close() end
    srv.stop()

    for i = 1, 4 do assert.are.equal(201, sessions[i].status, json.encode(sessions[i].doc)) end
    assert.are.equal(429, st)
    assert.are.equal("storage capacity is exhausted; this is transient, retry later", doc.error)
    assert.are.equal(404, rst)
    assert.are.equal(0, #list.workspaces)
    assert.are.equal(0, volumes)
    assert.are.equal(201, st2)
    assert.are.equal(201, sst, json.encode(sb))
    assert.are.equal("alive\n", out)
  end)
end)
