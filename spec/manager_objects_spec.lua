-- #integration specs of the Manager's object storage calls (the client
-- side; spec/cp_objects_spec.lua is the server's) against the local
-- Control Plane: blobs through single-use tickets (put_agent_blob,
-- open_object with a reader and streamed), the object routes (put, get,
-- stat, list, versions, delete), owners per acting subject kept apart,
-- and import/export between the store and a sandbox's workspace.
local server = require "spec.helpers.unsandboxd"
local cp = require "spec.helpers.cp"
local fs = require "spec.helpers.fs"

local SUBJ_A = string.rep("a", 32)
local SUBJ_B = string.rep("b", 32)

describe("unsandbox.manager objects #integration", function()
  local srv, unsandbox, m

  setup(function()
    srv = server.start {}
    unsandbox = require "unsandbox"
    local key = cp.tenant_key(srv, "objects", { act_as_subjects = true })
    m = unsandbox.manager { url = srv.cp_url, token = key, env = {} }
  end)
  teardown(function() if srv then srv.stop() end end)


  local function as(subject, f, ...) return m:with_subject(subject, f, ...) end

  it("put_agent_blob then open_object: the same bytes, read or streamed", function()
    as(SUBJ_A, function()
      local bytes = ("\0\1\2binary\255"):rep(1000)
      local put = assert(m:put_agent_blob("Agent One", "Run #1", "outputs/data.bin", bytes))
      assert.same({ "agent", "agent-one", "run-1", #bytes }, { put.scope, put.agent_id, put.run_id, put.bytes })
      local loc = { scope = "agent", agent_id = "Agent One", run_id = "Run #1", path = "outputs/data.bin" }
      local reader = assert(m:open_object(loc))
      assert.equal(bytes:sub(1, 10), reader:read(10))
      assert.equal(bytes:sub(11), reader:read("a"))
      assert.is_nil(reader:read(1))
      local parts = {}
      local meta = assert(m:open_object(loc, nil, nil, nil, { on_data = function(p) parts[#parts + 1] = p end }))
      assert.equal(bytes, table.concat(parts))
      assert.equal(#bytes, meta.bytes)
      local st = assert(m:stat_object(loc))
      assert.equal(#bytes, st.bytes)
      assert.equal(put.sha256, st.sha256)
    end)
  end)

  describe("files: uploads from and downloads to a path", function()
    local dir
    before_each(function() dir = fs.tmpdir("unsb-objfiles") end)
    after_each(function() fs.rm_rf(dir) end)

    -- the names in dir (temporaries would show up here)
    local function names()
      local out = {}
      for _, e in ipairs(assert(require("unsandbox.core").files.read_dir(dir))) do out[#out + 1] = e.name end
      table.sort(out)
      return out
    end

    it("a file goes up from its path and comes back to a path, checked", function()
      as(SUBJ_A, function()
        local bytes = ("0123456789abcdef\0\255"):rep(70000)      -- 1.2 MB, several pieces
        fs.write(dir .. "/in.bin", bytes)
        local put = assert(m:put_agent_blob("a", "files", "outputs/in.bin", { path = dir .. "/in.bin" }))
        assert.equal(#bytes, put.bytes)
        assert.equal(require("unsandbox.core").codec.sha256(bytes), put.sha256)
        local loc = { scope = "agent", agent_id = "a", run_id = "files", path = "outputs/in.bin" }
        local meta = assert(m:open_object(loc, nil, nil, nil, { to = dir .. "/out.bin" }))
        assert.same({ dir .. "/out.bin", #bytes, put.sha256 }, { meta.path, meta.bytes, meta.sha256 })
        assert.equal(bytes, fs.read(dir .. "/out.bin"))
        assert.same({ "in.bin", "out.bin" }, names())
        -- and again over the file that is there now
        fs.write(dir .. "/out.bin", "old")
        assert(m:open_object(loc, nil, nil, nil, { to = dir .. "/out.bin" }))
        assert.equal(bytes, fs.read(dir .. "/out.bin"))
      end)
    end)

    it("a download that fails leaves the destination as it was and no temporary", function()
      as(SUBJ_A, function()
        fs.write(dir .. "/keep.bin", "the old content")
        local loc = { scope = "agent", agent_id = "a", run_id = "files", path = "outputs/missing.bin" }
        local t = assert(m:issue_object_ticket(loc, "download", 100))
        local r, err = m:download_with_ticket(t, { to = dir .. "/keep.bin" })
        assert.is_nil(r)
        assert.equal(404, err.status)
        assert.equal("the old content", fs.read(dir .. "/keep.bin"))
        assert.same({ "keep.bin" }, names())
        -- a destination whose directory does not exist: kind io, nothing sent
        local t2 = assert(m:issue_object_ticket(loc, "download", 100))
        local r2, err2 = m:download_with_ticket(t2, { to = dir .. "/no/such/dir/x.bin" })
        assert.is_nil(r2)
        assert.equal("io", err2.kind)
        assert.matches("cannot create", err2.message)
      end)
    end)

    it("refuses what is not a readable regular file, and bad arguments", function()
      as(SUBJ_A, function()
        local r, err = m:put_agent_blob("a", "files", "outputs/x", { path = dir .. "/none" })
        assert.is_nil(r)
        assert.equal("io", err.kind)
        assert.matches("none", err.message)
        local r2, err2 = m:put_agent_blob("a", "files", "outputs/x", { path = dir })
        assert.is_nil(r2)
        assert.matches("not a regular file", err2.message)
        assert.has_error(function() m:put_agent_blob("a", "files", "outputs/x", { path = 5 }) end,
          "bad argument 'content' to 'put_agent_blob' (a string or {path = \"local file\"} expected, got table)")
        local loc = { scope = "agent", agent_id = "a", run_id = "files", path = "outputs/x" }
        local t = assert(m:issue_object_ticket(loc, "download", 100))
        assert.has_error(function() m:download_with_ticket(t, { to = dir .. "/y", on_data = print }) end)
        assert.has_error(function() m:download_with_ticket(t, { to = 7 }) end)
        local up = assert(m:issue_object_ticket(loc, "upload", 100))
        local r3, err3 = m:upload_with_ticket(up, { path = dir .. "/none" })
        assert.is_nil(r3)
        assert.equal("io", err3.kind)
      end)
    end)

    it("a file that changed after it was hashed is refused by its ticket", function()
      as(SUBJ_A, function()
        fs.write(dir .. "/a.bin", "first content")
        local loc = { scope = "agent", agent_id = "a", run_id = "files", path = "outputs/changed.bin" }
        local t = assert(m:issue_object_ticket(loc, "upload", 100, nil,
          require("unsandbox.core").codec.sha256("first content")))
        fs.write(dir .. "/a.bin", "other content")
        local r, err = m:upload_with_ticket(t, { path = dir .. "/a.bin" })
        assert.is_nil(r)
        assert.equal("http", err.kind)
        assert.is_nil((m:stat_object(loc)))
      end)
    end)
  end)

  it("tickets are single use", function()
    as(SUBJ_A, function()
      local loc = { scope = "upload", upload_id = "u-single", path = "source/a.txt" }
      assert(m:put_object(loc, "hello"))
      local t = assert(m:issue_object_ticket(loc, "download", 100, "text/plain"))
      assert.equal("hello", assert(m:download_with_ticket(t)):read("*a"))
      local r, err = m:download_with_ticket(t)
      assert.is_nil(r)
      assert.same({ 401, "invalid, expired, or already used object ticket" }, { err.status, err.message })
    end)
  end)

  it("put, get, list, versions and delete; each subject sees only its own", function()
    local loc = { scope = "upload", upload_id = "shared-name", path = "source/x.txt" }
    as(SUBJ_A, function()
      assert(m:put_object(loc, "v1"))
      assert(m:put_object(loc, "v2"))
      assert.equal("v2", assert(m:get_object(loc)).content)
      assert.equal(2, #assert(m:object_versions(loc)).versions)
      assert.equal(1, #assert(m:list_objects { scope = "upload", upload_id = "shared-name" }).objects)
      local keys, versions = {}, {}
      for i, o in assert(m:each("list_objects", { scope = "upload", upload_id = "shared-name" })) do
        keys[i] = o.key
      end
      assert.equal(1, #keys)
      assert.matches("/uploads/shared%-name/source/x%.txt$", keys[1])
      for _, v in assert(m:each("object_versions", loc)) do versions[#versions + 1] = v.version_id end
      assert.equal(2, #versions)
      assert.is_string(versions[1])
    end)
    as(SUBJ_B, function()
      local n = 0
      for _ in assert(m:each("list_objects", { scope = "upload", upload_id = "shared-name" })) do n = n + 1 end
      assert.equal(0, n)
      local r, err = m:get_object(loc)
      assert.is_nil(r)
      assert.equal(404, err.status)
      assert.equal(0, #assert(m:list_objects { scope = "upload", upload_id = "shared-name" }).objects)
    end)
    as(SUBJ_A, function()
      assert.is_true(assert(m:delete_object(loc, true)).deleted)
      local r, err = m:get_object(loc)
      assert.is_nil(r)
      assert.equal(404, err.status)
    end)
  end)

  it("imports an object into a sandbox's workspace and exports an artifact", function()
    as(SUBJ_A, function()
      local up = { scope = "upload", upload_id = "u-import", path = "source/in.txt" }
      assert(m:put_object(up, "imported text\n"))
      local imp = assert(m:import_object_to_workspace(up, "data/uploads/in.txt", "objects-box"))
      assert.equal("data/uploads/in.txt", imp.destination)
      assert.equal("imported text\n", assert(m:read_file("data/uploads/in.txt", nil, nil, "objects-box")).content)
      assert(m:write_file("artifacts/out.txt", "result\n", "objects-box"))
      local out = { scope = "agent", agent_id = "a1", run_id = "r1", path = "artifacts/out.txt" }
      local exp = assert(m:export_workspace_object("artifacts/out.txt", out, "objects-box"))
      assert.equal(#"result\n", exp.object.bytes)
      assert.equal("result\n", assert(m:get_object(out)).content)
      local tar = { scope = "agent", agent_id = "a1", run_id = "r1", path = "artifacts/all.tar.gz" }
      local arch = assert(m:export_workspace_object("artifacts", tar, "objects-box", true))
      assert.is_true(arch.archive)
      assert.equal("\31\139", assert(m:get_object(tar)).content:sub(1, 2), "a gzip stream")
      assert(m:release_runtime("objects-box"))
    end)
  end)
end)
