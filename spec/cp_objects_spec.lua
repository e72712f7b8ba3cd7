-- #integration specs of the Control Plane's object storage in unsandboxd
-- (spec §4.3, §5.1, §5.3): round trips with versions and sha256, every
-- ticket rule, owner partitions between subjects and tenants, bad input
-- with the spec's texts, the queue-full fault, and a server that stays
-- up through all of it. Workspace import/export: cp_objects_ws_spec.lua.
local server = require "spec.helpers.unsandboxd"
local cp = require "spec.helpers.cp"
local rawhttp = require "spec.helpers.rawhttp"
local obj = require "spec.helpers.objects"
local json = require "cjson"
local wait = require "spec.helpers.wait"

local req = cp.request
local OWNER = "t/alice"
local SUBJECT_A, SUBJECT_B = string.rep("a", 32), string.rep("b", 32)

local function upload_loc(path, extra)
  return obj.with({ scope = "upload", upload_id = "up-1", path = path, owner = OWNER }, extra)
end
local function agent_loc(path, extra)
  return obj.with({ scope = "agent", agent_id = "agent-7", run_id = "run-1", path = path, owner = OWNER }, extra)
end

describe("Control Plane objects #integration", function()
  local srv

  setup(function() srv = server.start {} end)
  teardown(function() if srv then srv.stop() end end)
  after_each(function()
    assert.are.equal(200, (req(srv, "GET", "/livez")))
    assert.is_true(server.alive(srv.pid))
  end)

  describe("inline objects", function()
    it("store, read, stat and list content with its sha256", function()
      local loc = upload_loc("source/notes.txt")
      local st, put = obj.post(srv, srv.token, loc, "hello")
      assert.are.equal(201, st, json.encode(put))
      assert.same({ scope = "upload", bucket = "user-uploads", key = "users/t/alice/uploads/up-1/source/notes.txt",
                    bytes = 5, sha256 = obj.sha256("hello") }, put)
      local _, got = obj.get(srv, srv.token, "", loc)
      assert.are.equal("aGVsbG8=", got.content_base64)
      assert.are.equal(put.sha256, got.sha256)
      local _, stat = obj.get(srv, srv.token, "/stat", loc)
      assert.are.equal(5, stat.bytes)
      assert.are.equal("5d41402abc4b2a76b9719d911017c592", stat.etag)
      assert.are.equal("application/octet-stream", stat.content_type)
      assert.matches("^%d+$", stat.last_modified)
      assert.matches("^%x+$", stat.version_id)
      local keys = {}
      for k in pairs(stat) do keys[#keys + 1] = k end
      table.sort(keys)
      assert.same({ "bucket", "bytes", "content_type", "etag", "key", "last_modified", "scope", "sha256",
                    "version_id" }, keys)
      local _, list = obj.get(srv, srv.token, "/list", { scope = "upload", upload_id = "up-1", owner = OWNER })
      assert.are.equal(1, #list.objects)
      assert.are.equal(put.key, list.objects[1].key)
      assert.are.equal(5, list.objects[1].bytes)
    end)

    it("keep every version newest first, delete with a marker, and purge", function()
      local loc = agent_loc("logs/run.log")
      for i = 1, 3 do assert.are.equal(201, (obj.post(srv, srv.token, loc, "line " .. i))) end
      local _, v = obj.get(srv, srv.token, "/versions", loc)
      assert.are.equal(3, #v.versions)
      assert.are.same({ 3, 2, 1 }, { v.versions[1].version_ordinal, v.versions[2].version_ordinal,
                                     v.versions[3].version_ordinal })
      assert.is_true(v.versions[1].is_latest)
      assert.is_false(v.versions[2].is_latest)
      local _, got = obj.get(srv, srv.token, "", loc)
      assert.are.equal("line 3", require("unsandbox.core").base64_decode(got.content_base64))
      local st, del = obj.get(srv, srv.token, "", loc, { method = "DELETE" })
      assert.are.equal(200, st)
      assert.is_true(del.deleted)
      assert.is_true(del.history_retained)
      st, got = obj.get(srv, srv.token, "/stat", loc)
      assert.are.equal(404, st)
      assert.same({ error = "object not found" }, got)
      _, v = obj.get(srv, srv.token, "/versions", loc)
      assert.are.equal(4, #v.versions)
      assert.is_true(v.versions[1].delete_marker)
      assert.are.equal(json.null, v.versions[1].etag)
      assert.are.equal(404, (obj.get(srv, srv.token, "", loc, { method = "DELETE" })))
      st, del = obj.get(srv, srv.token, "", obj.with(loc, { purge_versions = "true" }), { method = "DELETE" })
      assert.are.equal(200, st)
      assert.is_false(del.history_retained)
      assert.are.equal(404, (obj.get(srv, srv.token, "/versions", loc)))
    end)
  end)

  describe("tickets", function()
    local function ticket(loc, op, extra)
      local st, t = obj.ticket(srv, srv.token, loc, op, extra)
      assert.are.equal(201, st, json.encode(t))
      return t.access_token, t
    end

    it("move 3 MiB up and down with sha256, ETag, version id and content type", function()
      local data = string.rep("0123456789abcdef", 3 * 65536) .. "tail"
      local loc = agent_loc("outputs/big.bin")
      local up, t = ticket(loc, "upload", { content_type = "application/x-test", sha256 = obj.sha256(data) })
      assert.same({ bucket = "agent-data", key = "users/t/alice/agents/agent-7/runs/run-1/outputs/big.bin" }, t.object)
      assert.are.equal("PUT", t.method)
      assert.are.equal("/v1/storage/content", t.url)
      assert.are.equal(900, t.expires_in)
      assert.are.equal(64 * 1024 * 1024, t.max_bytes)
      local st, res = obj.upload(srv, up, data, { content_type = "application/x-test" })
      assert.are.equal(201, st, json.encode(res))
      assert.same({ bucket = "agent-data", key = t.object.key, bytes = #data, sha256 = obj.sha256(data),
                    content_type = "application/x-test" }, res)
      local down = ticket(loc, "download")
      local gst, _, h, raw = obj.download(srv, down)
      assert.are.equal(200, gst)
      assert.are.equal(#data, #raw)
      assert.is_true(raw == data)
      assert.are.equal(obj.sha256(data), h["x-content-sha256"])
      assert.are.equal("application/x-test", h["content-type"])
      assert.are.equal(tostring(#data), h["content-length"])
      local _, stat = obj.get(srv, srv.token, "/stat", loc)
      assert.are.equal('"' .. stat.etag .. '"', h.etag)
      assert.are.equal(stat.version_id, h["x-object-version-id"])
    end)

    it("are single use, for uploads and downloads", function()
      local loc = agent_loc("outputs/once.txt")
      local up = ticket(loc, "upload")
      assert.are.equal(201, (obj.upload(srv, up, "first")))
      local st, err = obj.upload(srv, up, "second")
      assert.are.equal(401, st)
      assert.same({ error = "invalid, expired, or already used object ticket" }, err)
      local down = ticket(loc, "download")
      assert.are.equal(200, (obj.download(srv, down)))
      assert.are.equal(401, (obj.download(srv, down)))
      local _, v = obj.get(srv, srv.token, "/versions", loc)
      assert.are.equal(1, #v.versions)
    end)

    it("are bound to their operation and their key", function()
      local a, b = agent_loc("outputs/a.txt"), agent_loc("outputs/b.txt")
      local down = ticket(a, "download")
      assert.are.equal(401, (obj.upload(srv, down, "x")))
      local up = ticket(a, "upload")
      assert.are.equal(401, (obj.download(srv, up)))
      -- the claims of another key with this ticket's signature
      local forged = obj.forge(up, { key = "users/t/alice/agents/agent-7/runs/run-1/outputs/b.txt",
                                     sub = "users/t/alice/agents/agent-7/runs/run-1/outputs/b.txt" })
      assert.are.equal(401, (obj.upload(srv, forged, "evil")))
      assert.are.equal(404, (obj.get(srv, srv.token, "/stat", b)))
      -- the wrong-operation attempts did not burn it
      assert.are.equal(201, (obj.upload(srv, up, "mine")))
      local _, stat = obj.get(srv, srv.token, "/stat", a)
      assert.are.equal(4, stat.bytes)
      -- a workspace token or an API key is not a ticket
      assert.are.equal(401, (obj.download(srv, srv.token)))
    end)

    it("expire", function()
      -- a ticket of one second, used once the clock the server reads has
      -- passed its expiry (a wait on that clock, never a fixed sleep)
      local up = ticket(agent_loc("outputs/late.txt"), "upload", { expires_in = 1 })
      local exp = obj.claims(up).exp
      assert.is_true(wait.eventually(function() return os.time() >= exp end, 5))
      local st, err = obj.upload(srv, up, "late")
      assert.are.equal(401, st)
      assert.are.equal("invalid, expired, or already used object ticket", err.error)
    end)

    it("refuse a body over max_bytes, declared or sent chunked, and store nothing", function()
      local loc = agent_loc("outputs/small.txt")
      local up = ticket(loc, "upload", { max_bytes = 10 })
      local st, err = obj.upload(srv, up, "12345678901")
      assert.are.equal(400, st)
      assert.matches("exceeds max_bytes", err.error)
      up = ticket(loc, "upload", { max_bytes = 10 })
      local s = rawhttp.connect({ port = srv.cp_port })
      s:send(rawhttp.head("PUT", "/v1/storage/content", { Authorization = "Bearer " .. up,
        ["Transfer-Encoding"] = "chunked", Connection = "close" }) .. "14\r\n" .. string.rep("x",
          20) .. "\r\n0\r\n\r\n")
      local status = rawhttp.read_head(s)
      s:close()
      assert.are.equal(400, status)
      assert.are.equal(404, (obj.get(srv, srv.token, "/stat", loc)))
      up = ticket(loc, "upload", { max_bytes = 10 })
      assert.are.equal(201, (obj.upload(srv, up, "1234567890")))
    end)

    it("store nothing of an upload cut off mid-body", function()
      local loc = agent_loc("outputs/cut.bin")
      local up = ticket(loc, "upload")
      local function pending()
        local ls = io.popen("ls " .. srv.data .. "/objects/tmp | wc -l")
        local n = tonumber(ls:read("*l"))
        ls:close()
        return n
      end
      local s = rawhttp.connect({ port = srv.cp_port })
      s:send(rawhttp.head("PUT", "/v1/storage/content", { Authorization = "Bearer " .. up,
        ["Content-Length"] = "1000000" }) .. string.rep("c", 100000))
      -- the upload is under way once its temporary file exists
      assert.is_true(wait.eventually(function() return pending() == 1 end))
      s:close()
      -- and the server drops it once it sees the connection gone
      assert.is_true(wait.eventually(function() return pending() == 0 end))
      assert.are.equal(404, (obj.get(srv, srv.token, "/stat", loc)))
      assert.are.equal(404, (obj.get(srv, srv.token, "/versions", loc)))
      assert.are.equal(401, (obj.upload(srv, up, "again")))
    end)

    it("store nothing when the sha256 does not match", function()
      local loc = agent_loc("outputs/sha.txt")
      local up = ticket(loc, "upload", { sha256 = obj.sha256("expected") })
      local st, err = obj.upload(srv, up, "something else")
      assert.are.equal(400, st)
      assert.matches("sha256 does not match", err.error)
      assert.are.equal(404, (obj.get(srv, srv.token, "/versions", loc)))
      st = obj.post(srv, srv.token, loc, "inline", { extra = { sha256 = obj.sha256("other") } })
      assert.are.equal(400, st)
      assert.are.equal(404, (obj.get(srv, srv.token, "/versions", loc)))
    end)

    it("are refused for a suspended owner tenant before they are burned", function()
      cp.tenant_key(srv, "susp")
      local loc = agent_loc("outputs/s.txt", { owner = "susp/bob" })
      local up = ticket(loc, "upload")
      assert.are.equal(200, (req(srv, "DELETE", "/v1/admin/tenants/susp", { token = srv.token })))
      local st, err = obj.upload(srv, up, "x")
      assert.are.equal(403, st)
      assert.are.equal("tenant is suspended: susp", err.error)
      local _, audit = req(srv, "GET", "/v1/admin/audit", { token = srv.token })
      assert.are.equal("object.ticket.suspended", audit.events[1].action)
      assert.are.equal("denied", audit.events[1].outcome)
      assert.are.equal(200, (req(srv, "POST", "/v1/admin/tenants/susp/status", { token = srv.token,
        body = { status = "active" } })))
      assert.are.equal(201, (obj.upload(srv, up, "x")))
    end)
  end)

  describe("owners", function()
    local key_a, key_b

    setup(function()
      key_a = cp.tenant_key(srv, "iso-a", { act_as_subjects = true })
      key_b = cp.tenant_key(srv, "iso-b", { act_as_subjects = true })
    end)

    local function as(subject) return { ["X-Acting-Subject"] = subject } end
    local loc = { scope = "upload", upload_id = "shared", path = "source/secret.txt" }

    it("keep two subjects of one tenant apart", function()
      local st, put = obj.post(srv, key_a, loc, "alice's", { headers = as(SUBJECT_A) })
      assert.are.equal(201, st)
      assert.are.equal("users/iso-a/" .. SUBJECT_A .. "/uploads/shared/source/secret.txt", put.key)
      assert.are.equal(404, (obj.get(srv, key_a, "/stat", loc, { headers = as(SUBJECT_B) })))
      local _, list = obj.get(srv, key_a, "/list", { scope = "upload", upload_id = "shared" },
        { headers = as(SUBJECT_B) })
      assert.same({}, list.objects)
      local tst, t = obj.ticket(srv, key_a, loc, "download", nil, as(SUBJECT_B))
      assert.are.equal(201, tst)
      assert.are.equal(404, (obj.download(srv, t.access_token)))
      assert.are.equal(404, (obj.get(srv, key_a, "", loc, { method = "DELETE", headers = as(SUBJECT_B) })))
      assert.are.equal(200, (obj.get(srv, key_a, "/stat", loc, { headers = as(SUBJECT_A) })))
    end)

    it("keep two tenants apart, for the same subject", function()
      assert.are.equal(404, (obj.get(srv, key_b, "/stat", loc, { headers = as(SUBJECT_A) })))
      local _, list = obj.get(srv, key_b, "/list", { scope = "upload", upload_id = "shared" },
        { headers = as(SUBJECT_A) })
      assert.same({}, list.objects)
      local st, put = obj.post(srv, key_b, loc, "other tenant", { headers = as(SUBJECT_A) })
      assert.are.equal(201, st)
      assert.are.equal("users/iso-b/" .. SUBJECT_A .. "/uploads/shared/source/secret.txt", put.key)
      local _, got = obj.get(srv, key_a, "", loc, { headers = as(SUBJECT_A) })
      assert.are.equal("alice's", require("unsandbox.core").base64_decode(got.content_base64))
    end)

    it("refuse an owner from a tenant credential (403, audited) and a missing subject (400)", function()
      local st, err = obj.get(srv, key_a, "/stat", obj.with(loc, { owner = "iso-a/" .. SUBJECT_A }),
        { headers = as(SUBJECT_A) })
      assert.are.equal(403, st)
      assert.are.equal("this credential is bound to a tenant; owner is derived from the credential and "
        .. "X-Acting-Subject and is not accepted in a request", err.error)
      local _, audit = req(srv, "GET", "/v1/admin/audit", { token = srv.token })
      assert.are.equal("object.owner", audit.events[1].action)
      assert.are.equal("denied", audit.events[1].outcome)
      st = obj.post(srv, key_a, obj.with(loc, { owner = "iso-b/x" }), "x", { headers = as(SUBJECT_A) })
      assert.are.equal(403, st)
      st, err = obj.get(srv, key_a, "/stat", loc)
      assert.are.equal(400, st)
      assert.matches("^object storage requires X%-Acting%-Subject: ", err.error)
      local plain = cp.tenant_key(srv, "iso-a")
      assert.are.equal(403, (obj.get(srv, plain, "/stat", loc, { headers = as(SUBJECT_A) })))
    end)

    it("let admins name owners, within the tenant they act for", function()
      local admin_loc = obj.with(loc, { owner = "iso-a/" .. SUBJECT_A })
      assert.are.equal(200, (obj.get(srv, srv.token, "/stat", admin_loc)))
      local st, err = obj.get(srv, srv.token, "/stat", loc)
      assert.are.equal(400, st)
      assert.matches("owner is required", err.error)
      assert.are.equal(200, (obj.get(srv, srv.token, "/stat", admin_loc,
        { headers = { ["X-Sandbox-Tenant"] = "iso-a" } })))
      assert.are.equal(403, (obj.get(srv, srv.token, "/stat", admin_loc,
        { headers = { ["X-Sandbox-Tenant"] = "iso-b" } })))
    end)
  end)
end)
