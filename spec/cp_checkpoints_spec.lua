-- #integration specs of workspace checkpoints (spec §4.1, §5.2): made and
-- restored by the agent inside the workspace's runtime, stored in the
-- object store; create → change files → restore → files back, with the
-- sha256 checked; the 400 without a runtime; 404s; delete; purge with the
-- workspace; kept across a restart.
local server = require "spec.helpers.unsandboxd"
local cp = require "spec.helpers.cp"
local mcp = require "spec.helpers.mcp"
local fs = require "spec.helpers.fs"
local lua = require "spec.helpers.lua"

describe("Control Plane checkpoints #integration", function()
  local srv, ws, sb

  setup(function()
    srv = server.start {}
    ws, sb = mcp.sandbox(srv, "cp-main")
  end)
  teardown(function() if srv then srv.stop() end end)

  local function path(rest) return "/v1/workspaces/" .. ws.workspace_id .. rest end
  local function write(p, content)
    local st = cp.request(srv, "POST", path("/files/write"), { token = ws.access_token, body = { path = p,
      content = content } })
    assert.are.equal(200, st)
  end
  local function read(p)
    local st, doc = cp.request(srv, "GET", path("/files/read?path=" .. p), { token = ws.access_token })
    return st == 200 and doc.content or nil
  end

  it("checkpoint, change, restore: the files come back, .sandbox stays out", function()
    write("src/main.py", "print('v1')\n")
    write("notes.txt", "keep\n")
    local st, c = cp.request(srv, "POST", path("/checkpoints"), { token = srv.token })
    assert.are.equal(201, st)
    assert.matches("^cp%-%d+%-%x+$", c.checkpoint_id)
    assert.are.equal(ws.workspace_id, c.workspace_id)
    assert.are.equal("sandbox-workspaces", c.bucket)
    assert.are.equal("workspaces/" .. ws.workspace_id .. "/checkpoints/" .. c.checkpoint_id .. ".tar.gz", c.key)
    assert.are.equal("application/gzip", c.content_type)
    assert.matches("^%x+$", c.sha256)
    assert.is_true(c.bytes > 0)
    local _, list = cp.request(srv, "GET", path("/checkpoints"), { token = srv.token })
    assert.are.equal(ws.workspace_id, list.workspace_id)
    assert.are.equal(1, #list.checkpoints)
    assert.are.equal(c.checkpoint_id, list.checkpoints[1].checkpoint_id)
    assert.are.equal(c.bytes, list.checkpoints[1].bytes)

    write("src/main.py", "print('v2')\n")
    write("extra.txt", "new\n")
    local rst, doc = cp.request(srv, "POST", path("/checkpoints/" .. c.checkpoint_id .. "/restore"),
      { token = srv.token, body = { sha256 = c.sha256 } })
    assert.are.equal(200, rst)
    assert.are.equal(c.checkpoint_id, doc.checkpoint_id)
    assert.are.equal(c.sha256, doc.sha256)
    assert.is_number(doc.files)
    assert.are.equal("print('v1')\n", read("src/main.py"))
    assert.are.equal("keep\n", read("notes.txt"))
    assert.is_nil(read("extra.txt"))
  end)

  it("refuses a wrong sha256, an unknown checkpoint and a missing body", function()
    local _, c = cp.request(srv, "POST", path("/checkpoints"), { token = srv.token })
    write("after.txt", "x")
    local st, doc = cp.request(srv, "POST", path("/checkpoints/" .. c.checkpoint_id .. "/restore"),
      { token = srv.token, body = { sha256 = string.rep("0", 64) } })
    assert.are.equal(400, st)
    assert.matches("sha256", doc.error)
    assert.are.equal("x", read("after.txt"))          -- nothing restored
    st, doc = cp.request(srv, "POST", path("/checkpoints/cp-1-00000000/restore"), { token = srv.token, body = {} })
    assert.are.equal(404, st)
    assert.are.equal("object not found", doc.error)
    st, doc = cp.request(srv, "POST", path("/checkpoints/" .. c.checkpoint_id .. "/restore"), { token = srv.token })
    assert.are.equal(400, st)
    assert.are.equal("Content-Length is required", doc.error)
    assert.are.equal(404, (cp.request(srv, "POST", path("/checkpoints/BAD_ID/restore"), { token = srv.token,
      body = {} })))
  end)

  it("refuses a hostile archive in the store and leaves the workspace as it was", function()
    -- a checkpoint big enough to hold a hostile archive in its place
    local ur = assert(io.open("/dev/urandom", "rb"))
    local rnd = ur:read(64 * 1024)
    ur:close()
    local st = cp.request(srv, "POST", path("/files/write-binary"), { token = ws.access_token,
      body = { path = "noise.bin", content_base64 = require("unsandbox.core").base64_encode(rnd) } })
    assert.are.equal(200, st)
    write("guard.txt", "untouched")
    local _, c = cp.request(srv, "POST", path("/checkpoints"), { token = srv.token })
    local p = io.popen("ls -t " .. fs.quote(srv.data .. "/objects/blobs") .. " | head -1")
    local blob = srv.data .. "/objects/blobs/" .. p:read("*l")
    p:close()
    local f = io.open(blob, "rb")
    assert.are.equal(c.bytes, #f:read("*a"))
    f:close()
    -- "../escape" first, then padding to the stored size (the store checks the size)
    local py = string.format([[
import io, tarfile, gzip
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w") as t:
    data = b"owned"
    info = tarfile.TarInfo("../escape"); info.size = len(data)
    t.addfile(info, io.BytesIO(data))
z = gzip.compress(buf.getvalue())
open(%q, "wb").write(z + b"\0" * (%d - len(z)))
]], blob, c.bytes)
    local script = fs.write(os.tmpname(), py)
    assert.is_true(lua.sh("python3 " .. fs.quote(script)))
    os.remove(script)
    write("guard.txt", "changed after the checkpoint")
    local rst, doc = cp.request(srv, "POST", path("/checkpoints/" .. c.checkpoint_id .. "/restore"),
      { token = srv.token, body = {} })
    assert.are.equal(400, rst)
    assert.matches("escape", doc.error)
    assert.are.equal("changed after the checkpoint", read("guard.txt"))
    assert.are.equal(200, (cp.request(srv, "GET", "/livez")))
  end)

  it("restores names with control and non-UTF-8 bytes as they were made", function()
    -- the sandbox's own code may name files with any byte but NUL and '/'
    local make = [[cd /workspace && mkdir -p odd && cd odd &&
      for n in 'tab\tname' 'new\nline' 'bell\001' 'del\177' 'high\377byte' 'esc\033[31m'; do
        printf "%s" "$n" > "$(printf "$n")"; done && ls | od -An -c | tr -s ' ']]
    local before = mcp.sh(srv, sb, make)
    local st, c = cp.request(srv, "POST", path("/checkpoints"), { token = srv.token })
    assert.are.equal(201, st)
    mcp.sh(srv, sb, "rm -rf /workspace/odd")
    local rst, doc = cp.request(srv, "POST", path("/checkpoints/" .. c.checkpoint_id .. "/restore"),
      { token = srv.token, body = {} })
    assert.are.equal(200, rst, require("cjson").encode(doc))
    assert.are.equal(before, mcp.sh(srv, sb, "cd /workspace/odd && ls | od -An -c | tr -s ' '"))
    assert.are.equal("bell\\001", mcp.sh(srv, sb, [[cat "/workspace/odd/$(printf 'bell\001')"]]))
    -- a later checkpoint of the same tree restores too
    local _, c2 = cp.request(srv, "POST", path("/checkpoints"), { token = srv.token })
    assert.are.equal(200, (cp.request(srv, "POST", path("/checkpoints/" .. c2.checkpoint_id .. "/restore"),
      { token = srv.token, body = {} })))
    mcp.sh(srv, sb, "rm -rf /workspace/odd")
  end)

  it("deletes a checkpoint once, with its history (the platform's schema: history_retained false)", function()
    local function blobs()
      local p = io.popen("ls " .. fs.quote(srv.data .. "/objects/blobs") .. " | wc -l")
      local n = p:read("*n")
      p:close()
      return n
    end
    local _, c = cp.request(srv, "POST", path("/checkpoints"), { token = srv.token })
    local kept = blobs()
    local st, doc = cp.request(srv, "DELETE", path("/checkpoints/" .. c.checkpoint_id), { token = srv.token })
    assert.are.equal(200, st)
    assert.same({ workspace_id = ws.workspace_id, checkpoint_id = c.checkpoint_id, deleted = true,
                  history_retained = false }, doc)
    -- its one version's content is gone from the store, not hidden by a marker
    assert.are.equal(kept - 1, blobs())
    assert.are.equal(404, (cp.request(srv, "DELETE", path("/checkpoints/" .. c.checkpoint_id), { token = srv.token })))
    assert.are.equal(404, (cp.request(srv, "POST", path("/checkpoints/" .. c.checkpoint_id .. "/restore"),
      { token = srv.token, body = {} })))
  end)

  it("needs a running runtime, and a workspace purge removes its checkpoints", function()
    local _, before = cp.request(srv, "GET", path("/checkpoints"), { token = srv.token })
    assert.is_true(#before.checkpoints >= 1)
    assert.are.equal(200, (cp.request(srv, "DELETE", "/v1/sandboxes/" .. sb.id, { token = srv.token })))
    local st, doc = cp.request(srv, "POST", path("/checkpoints"), { token = srv.token })
    assert.are.equal(400, st)
    assert.are.equal("checkpoint requires a running Runtime for " .. ws.workspace_id, doc.error)
    st, doc = cp.request(srv, "POST", path("/checkpoints/" .. before.checkpoints[1].checkpoint_id .. "/restore"),
      { token = srv.token, body = {} })
    assert.are.equal(400, st)
    assert.are.equal("restore requires a running Runtime for " .. ws.workspace_id, doc.error)
    st, doc = cp.request(srv, "DELETE", path("?purge=1"), { token = srv.token })
    assert.are.equal(200, st)
    assert.are.equal(#before.checkpoints, doc.checkpoints_purged)
    local _, w2 = cp.request(srv, "POST", "/v1/workspaces", { token = srv.token, body = { session_id = "cp-main" } })
    local _, after = cp.request(srv, "GET", "/v1/workspaces/" .. w2.workspace_id .. "/checkpoints",
      { token = srv.token })
    assert.same({}, after.checkpoints)
  end)
end)

describe("Control Plane checkpoints across a restart #integration", function()
  it("are kept and restorable after the server restarts", function()
    local srv = server.start {}
    local ws = mcp.sandbox(srv, "kept")
    cp.request(srv, "POST", "/v1/workspaces/" .. ws.workspace_id .. "/files/write",
      { token = ws.access_token, body = { path = "a.txt", content = "before restart" } })
    local _, c = cp.request(srv, "POST", "/v1/workspaces/" .. ws.workspace_id .. "/checkpoints", { token = srv.token })
    srv.stop(true)
    local again = server.start { data = srv.data }
    local ok, err = pcall(function()
      local ws2 = mcp.sandbox(again, "kept")
      assert.are.equal(ws.workspace_id, ws2.workspace_id)
      local st = cp.request(again, "POST", "/v1/workspaces/" .. ws.workspace_id .. "/checkpoints/" ..
        c.checkpoint_id .. "/restore", { token = again.token, body = { sha256 = c.sha256 } })
      assert.are.equal(200, st)
      local _, doc = cp.request(again, "GET", "/v1/workspaces/" .. ws.workspace_id .. "/files/read?path=a.txt",
        { token = ws2.access_token })
      assert.are.equal("before restart", doc.content)
    end)
    again.stop()
    fs.rm_rf(srv.data)
    os.remove(srv.log)
    assert(ok, err)
  end)
end)
