-- #integration specs of POST …/objects/import and …/objects/export (spec
-- §4.3, §5.3) against a real runtime: objects larger than the JSON file
-- ops allow, into data/uploads/ and out of artifacts/ (a file, or the gzip
-- tar of exactly artifacts), the owner of the workspace token, and bad
-- input: no runtime, no owner, another owner, paths out of bounds,
-- symlinks out of the workspace, FIFOs, an export over 64 MiB. Files are
-- planted and checked from outside through the server's mount namespace.
-- One Lua: the subject is the server's wire (raw HTTP).
local server = require "spec.helpers.unsandboxd"
local cp = require "spec.helpers.cp"
local fs = require "spec.helpers.fs"
local obj = require "spec.helpers.objects"
local json = require "cjson"

local req = cp.request
local OWNER = "t/alice"

describe("Control Plane object import/export #integration", function()
  local srv, ws, wt

  local function import(body, token)
    return req(srv, "POST", "/v1/workspaces/" .. ws .. "/objects/import", { token = token or wt, body = body,
      timeout = 150 })
  end
  local function export(body, token)
    return req(srv, "POST", "/v1/workspaces/" .. ws .. "/objects/export", { token = token or wt, body = body,
      timeout = 150 })
  end
  local function upload(loc, data)
    local _, t = obj.ticket(srv, srv.token, loc, "upload")
    assert.are.equal(201, (obj.upload(srv, t.access_token, data)))
  end
  local function download(loc)
    local _, t = obj.ticket(srv, srv.token, loc, "download")
    local st, _, _, raw = obj.download(srv, t.access_token)
    assert.are.equal(200, st)
    return raw
  end
  local function ws_sha(rel)
    local out = obj.in_server(srv, "sha256sum " .. fs.quote(obj.ws_path(srv, ws, rel)))
    return out and out:match("^(%x+)")
  end

  local UP = { scope = "upload", upload_id = "data-set", path = "source/table.csv" }
  local big = string.rep("id,value\n", 200000) .. "end\n"   -- 1.8 MB: beyond file_write_binary

  setup(function()
    srv = server.start {}
    ws, wt = obj.workspace(srv, "objects-ws", OWNER)
    obj.runtime(srv, ws)
    upload(obj.with(UP, { owner = OWNER }), big)
  end)
  teardown(function() if srv then srv.stop() end end)
  after_each(function() assert.are.equal(200, (req(srv, "GET", "/livez"))) end)

  it("imports an upload into data/uploads/ and exports it back from artifacts/", function()
    local st, res = import(obj.with(UP, { destination = "data/uploads/table.csv" }))
    assert.are.equal(201, st, json.encode(res))
    local sha = obj.sha256(big)
    assert.same({ workspace_id = ws, destination = "data/uploads/table.csv",
      object = { bucket = "user-uploads", key = "users/t/alice/uploads/data-set/source/table.csv", bytes = #big,
        sha256 = sha },
      file = { path = "data/uploads/table.csv", bytes = #big, sha256 = sha } }, res)
    assert.are.equal(sha, ws_sha("data/uploads/table.csv"))
    -- the program "works": its result lands in artifacts
    obj.in_server(srv, "cp " .. fs.quote(obj.ws_path(srv, ws, "data/uploads/table.csv")) .. " "
      .. fs.quote(obj.ws_path(srv, ws, "artifacts/result.csv")))
    local loc = { scope = "agent", agent_id = "agent-1", run_id = "run-1", path = "outputs/result.csv" }
    st, res = export(obj.with(loc, { workspace_path = "artifacts/result.csv" }))
    assert.are.equal(201, st, json.encode(res))
    assert.same({ workspace_id = ws, workspace_path = "artifacts/result.csv", archive = false,
      object = { scope = "agent", bucket = "agent-data", bytes = #big, sha256 = sha,
                 key = "users/t/alice/agents/agent-1/runs/run-1/outputs/result.csv" } }, res)
    assert.is_true(download(obj.with(loc, { owner = OWNER })) == big)
    -- a body owner equal to the token's is fine
    st = import(obj.with(UP, { destination = "data/uploads/again.csv", owner = OWNER }))
    assert.are.equal(201, st)
  end)

  it("exports the gzip tar of exactly artifacts", function()
    obj.plant(srv, ws, "artifacts/report.txt", "report\n")
    obj.plant(srv, ws, "artifacts/deep/log.txt", "log\n")
    obj.plant(srv, ws, "src/not-exported.py", "print(1)\n")
    local loc = { scope = "agent", agent_id = "agent-1", run_id = "run-1", path = "artifacts/all.tar.gz" }
    local st, res = export(obj.with(loc, { workspace_path = "artifacts", archive = true }))
    assert.are.equal(201, st, json.encode(res))
    assert.is_true(res.archive)
    local tgz = download(obj.with(loc, { owner = OWNER }))
    assert.are.equal(res.object.sha256, obj.sha256(tgz))
    local dir = fs.tmpdir("tgz")
    fs.write(dir .. "/a.tgz", tgz)
    local p = io.popen("tar tzf " .. fs.quote(dir .. "/a.tgz") .. " | sort")
    local names = {}
    for line in p:lines() do names[#names + 1] = line end
    p:close()
    fs.rm_rf(dir)
    for _, n in ipairs(names) do assert.matches("^artifacts/", n) end
    local want = { "artifacts/", "artifacts/deep/", "artifacts/deep/log.txt", "artifacts/report.txt",
                   "artifacts/result.csv" }
    assert.same(want, names)
    local _, stat = obj.get(srv, srv.token, "/stat", obj.with(loc, { owner = OWNER }))
    assert.are.equal("application/gzip", stat.content_type)
  end)

  it("refuses paths out of bounds, symlinks out of the workspace, FIFOs and oversized files", function()
    obj.plant(srv, ws, "artifacts/passwd", nil, { symlink = "/etc/passwd" })
    obj.plant(srv, ws, "artifacts/up", nil, { symlink = "../../../../../../../etc/shadow" })
    obj.plant(srv, ws, ".sandbox/secret", "reserved")
    obj.plant(srv, ws, "artifacts/sb", nil, { symlink = "../.sandbox" })
    obj.plant(srv, ws, "artifacts/pipe", nil, { fifo = true })
    obj.plant(srv, ws, "artifacts/huge.bin", nil, { size = "65M" })
    obj.plant(srv, ws, "data/uploads/dir/keep", "x")
    local loc = { scope = "agent", agent_id = "agent-1", run_id = "run-1", path = "outputs/bad" }
    local cases = {
      { export, obj.with(loc, { workspace_path = "src/not-exported.py" }),
        "workspace_path must name a file under artifacts/" },
      { export, obj.with(loc, { workspace_path = "artifacts" }), "workspace_path must name a file under artifacts/" },
      { export, obj.with(loc, { workspace_path = "artifacts/../src/x" }), "workspace_path must not contain '..'" },
      { export, obj.with(loc, { workspace_path = "/etc/passwd" }), "workspace_path must be relative" },
      { export, obj.with(loc, { workspace_path = "artifacts/x", archive = true }),
        "workspace_path must be 'artifacts' when archive is true" },
      { export, obj.with(loc, { workspace_path = "artifacts/passwd" }), "resolves outside the workspace" },
      { export, obj.with(loc, { workspace_path = "artifacts/up" }), "resolves outside the workspace" },
      { export, obj.with(loc, { workspace_path = "artifacts/sb/secret" }), "resolves into .sandbox" },
      { export, obj.with(loc, { workspace_path = "artifacts/pipe" }), "not a regular file" },
      { export, obj.with(loc, { workspace_path = "artifacts/huge.bin" }), "larger than the limit" },
      { export, obj.with(loc, { workspace_path = "artifacts/none" }), "does not exist" },
      { export, obj.with(UP, { workspace_path = "artifacts/report.txt" }), "export takes scope 'agent'" },
      { export, obj.with(loc, { workspace_path = "artifacts/report.txt", archive = "yes" }),
        "archive must be a boolean" },
      { import, obj.with(UP, { destination = "src/x.csv" }), "destination must name a file under data/uploads/" },
      { import, obj.with(UP, { destination = "data/uploads" }), "destination must name a file under data/uploads/" },
      { import, obj.with(UP, { destination = "data/uploads/../../etc/x" }), "destination must not contain '..'" },
      { import, obj.with(UP, { destination = "data/uploads/dir" }), "is a directory" },
      { import, obj.with(UP, {}), "destination is required" },
      { import, obj.with(UP, { destination = 7 }), "destination must be a string" },
      { import, obj.with(loc, { destination = "data/uploads/x" }), "import takes scope 'upload'" },
      { import, obj.with(UP, { destination = "data/uploads/x", owner = "t/mallory" }),
        "owner does not match the workspace access token" },
      { import, obj.with(UP, { destination = "data/uploads/x", path = "source/../x" }), "path must not contain '..'" },
    }
    for _, case in ipairs(cases) do
      local st, doc = case[1](case[2])
      assert.are.equal(400, st, json.encode(case[2]) .. " -> " .. json.encode(doc))
      assert.is_truthy(doc.error:find(case[3], 1, true), json.encode(case[2]) .. " -> " .. doc.error)
    end
    assert.are.equal(404, (obj.get(srv, srv.token, "/versions", obj.with(loc, { owner = OWNER }))), "nothing stored")
    local st, doc = import(obj.with(UP, { path = "source/none.csv", destination = "data/uploads/n" }))
    assert.are.equal(404, st)
    assert.same({ error = "object not found" }, doc)
    assert.are.equal(nil, ws_sha("data/uploads/n"))
  end)

  it("needs a running runtime, the workspace's own token and an owner in it", function()
    local ws2, wt2 = obj.workspace(srv, "no-runtime", OWNER)
    local st, doc = req(srv, "POST", "/v1/workspaces/" .. ws2 .. "/objects/import", { token = wt2,
      body = obj.with(UP, { destination = "data/uploads/x" }) })
    assert.are.equal(400, st)
    assert.are.equal("import requires a running Runtime for " .. ws2, doc.error)
    st, doc = req(srv, "POST", "/v1/workspaces/" .. ws2 .. "/objects/export", { token = wt2,
      body = { scope = "agent", agent_id = "a", run_id = "r", path = "outputs/x", workspace_path = "artifacts/x" } })
    assert.are.equal(400, st)
    assert.are.equal("export requires a running Runtime for " .. ws2, doc.error)
    -- another workspace's token, an API key
    assert.are.equal(401, (import(obj.with(UP, { destination = "data/uploads/x" }), wt2)))
    assert.are.equal(401, (import(obj.with(UP, { destination = "data/uploads/x" }), srv.token)))
    -- a token without an owner claim
    local _, lease = req(srv, "POST", "/v1/workspaces", { token = srv.token, body = { session_id = "ownerless" } })
    assert.are.equal(json.null, lease.owner)
    st, doc = req(srv, "POST", "/v1/workspaces/" .. lease.workspace_id .. "/objects/import",
      { token = lease.access_token, body = obj.with(UP, { destination = "data/uploads/x" }) })
    assert.are.equal(400, st)
    assert.matches("^workspace access token carries no owner claim; re%-issue it", doc.error)
  end)
end)
