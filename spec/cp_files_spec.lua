-- #integration specs of the Control Plane's workspace file routes,
-- /v1/workspaces/{ws}/files/* (spec §4.2, §5.6): the 409 without a
-- running runtime (reads never create one), credentials per the TSV,
-- every route's good answer, every limit, bad query values, and path
-- escapes (.., absolute, NUL, symlinks planted inside pointing out,
-- .sandbox). All against a real unsandboxd with a real runtime.
local server = require "spec.helpers.unsandboxd"
local cp = require "spec.helpers.cp"
local mcp = require "spec.helpers.mcp"
local json = require "cjson"
local core = require "unsandbox.core"
local lua = require "spec.helpers.lua"

describe("Control Plane file routes #integration", function()
  local srv, ws, sb

  setup(function()
    srv = server.start { args = { "--disk-mb", "64" } }
    local st
    st, ws = cp.request(srv, "POST", "/v1/workspaces", { token = srv.token, body = { session_id = "files-main" } })
    assert(st == 201)
  end)
  teardown(function() if srv then srv.stop() end end)

  local function url(route, query)
    return "/v1/workspaces/" .. ws.workspace_id .. "/files/" .. route .. (query and ("?" .. query) or "")
  end
  local function get(route, query, token)
    return cp.request(srv, "GET", url(route, query), { token = token or ws.access_token })
  end
  local function post(route, body, token)
    return cp.request(srv, "POST", url(route), { token = token or ws.access_token, body = body })
  end
  local function q(s) return (s:gsub("[^%w._~/-]", function(c) return string.format("%%%02X", c:byte()) end)) end

  local READS = { "list", "read", "read-binary", "glob", "grep" }
  local WRITES = { "write", "write-binary", "edit" }

  it("answer 409 with a hint while no runtime runs, and a read never starts one", function()
    for _, r in ipairs(READS) do
      local st, doc = get(r, "path=a.txt&pattern=x")
      assert.are.equal(409, st, r)
      assert.same({ error = r .. " requires a running Runtime for " .. ws.workspace_id,
                    hint = "create a sandbox for this workspace first" }, doc)
    end
    for _, r in ipairs(WRITES) do
      local st, doc = post(r, { path = "a.txt", content = "x", content_base64 = "eA==", old = "x", new = "y" })
      assert.are.equal(409, st, r)
      assert.are.equal("create a sandbox for this workspace first", doc.hint)
    end
    local _, res = cp.request(srv, "POST", "/v1/workspaces/resolve", { token = srv.token,
      body = { session_id = "files-main" } })
    assert.are.equal(json.null, res.sandbox_id)
    local _, list = cp.request(srv, "GET", "/v1/sandboxes", { token = srv.token })
    assert.same({}, list.sandboxes)
    -- now a runtime, for everything below
    ws, sb = mcp.sandbox(srv, "files-main")
  end)

  it("write, read, list, read-binary, glob, grep and edit, each with workspace_id", function()
    local st, doc = post("write", { path = "src/a.txt", content = "hello\nwörld\n" })
    assert.are.equal(200, st)
    assert.same({ path = "src/a.txt", chars = 12, bytes = 13, workspace_id = ws.workspace_id }, doc)
    st, doc = get("read", "path=src/a.txt")
    assert.are.equal(200, st)
    assert.same({ path = "src/a.txt", content = "hello\nwörld\n", start_line = 1, end_line = 2, truncated = false,
                  workspace_id = ws.workspace_id }, doc)
    st, doc = get("list", "path=src")
    assert.are.equal(200, st)
    assert.same({ { name = "a.txt", type = "file" } }, doc.entries)
    assert.are.equal(ws.workspace_id, doc.workspace_id)
    st, doc = get("list")
    assert.are.equal(200, st)
    local names = {}
    for _, e in ipairs(doc.entries) do names[#names + 1] = e.name end
    assert.same({ "artifacts", "data", "src" }, names)     -- .sandbox hidden
    local bin = "\0\1\2\255binary"
    st, doc = post("write-binary", { path = "bin/b.dat", content_base64 = core.base64_encode(bin) })
    assert.are.equal(200, st, json.encode(doc))
    assert.are.equal(#bin, doc.bytes)
    local sha = doc.sha256
    st, doc = get("read-binary", "path=bin/b.dat")
    assert.are.equal(200, st)
    assert.are.equal(bin, core.base64_decode(doc.content_base64))
    assert.are.equal(sha, doc.sha256)
    assert.are.equal(ws.workspace_id, doc.workspace_id)
    st, doc = get("glob", "pattern=" .. q("**/*.txt"))
    assert.are.equal(200, st)
    assert.same({ "src/a.txt" }, doc.matches)
    assert.are.equal(json.null, doc.truncated_reason)
    st, doc = get("grep", "pattern=HELLO&case_insensitive=yes&mode=content")
    assert.are.equal(200, st, json.encode(doc))
    assert.are.equal(1, doc.match_count)
    assert.are.equal("hello", doc.files[1].lines[1].text)
    st, doc = get("grep", "pattern=HELLO")
    assert.are.equal(200, st)
    assert.are.equal(0, doc.match_count)
    st, doc = get("grep", "pattern=" .. q("h.l+o") .. "&regex=1&mode=count")
    assert.are.equal(200, st)
    assert.same({ { path = "src/a.txt", count = 1 } }, doc.files)
    st, doc = post("edit", { path = "src/a.txt", old = "hello", new = "bye" })
    assert.are.equal(200, st)
    assert.same({ path = "src/a.txt", replacements = 1, workspace_id = ws.workspace_id }, doc)
    assert.are.equal("bye\nwörld\n", (select(2, get("read", "path=src/a.txt"))).content)
  end)

  it("take the credentials of the TSV", function()
    local _, other = cp.request(srv, "POST", "/v1/workspaces", { token = srv.token,
      body = { session_id = "files-other" } })
    local query = { list = "path=src", read = "path=src/a.txt", ["read-binary"] = "path=src/a.txt",
                    glob = "pattern=a", grep = "pattern=a" }
    for _, r in ipairs(READS) do
      assert.are.equal(200, (get(r, query[r], srv.token)), r .. " with the control-plane token")
      local st, doc = get(r, query[r], other.access_token)
      assert.are.equal(401, st, r)
      assert.are.equal("invalid or expired scoped access token", doc.error)
      assert.are.equal(401, (cp.request(srv, "GET", url(r, "path=src"), {})))
    end
    for _, r in ipairs(WRITES) do
      local st, doc = post(r, { path = "w.txt", content = "x" }, srv.token)
      assert.are.equal(401, st, r .. " with the control-plane token")
      assert.are.equal("invalid or expired scoped access token", doc.error)
      assert.are.equal(401, (post(r, { path = "w.txt", content = "x" }, other.access_token)))
    end
    -- another tenant's key does not see this workspace
    local key = cp.tenant_key(srv, "files-tenant")
    local st, doc = get("read", "path=src/a.txt", key)
    assert.are.equal(404, st)
    assert.are.equal("workspace not found", doc.error)
  end)

  it("forward only the listed query keys and body fields, and check query values", function()
    local st = get("read", "path=src/a.txt&follow=1&op=file_write&content=x")
    assert.are.equal(200, st)
    st = post("write", { path = "src/extra.txt", content = "x", mode = "0777", op = "exec" })
    assert.are.equal(200, st)
    local bad = { "offset=abc", "offset=1.5", "limit=" .. q(" 3"), "offset=1e3" }
    for _, b in ipairs(bad) do
      local s, doc = get("read", "path=src/a.txt&" .. b)
      assert.are.equal(400, s, b)
      assert.matches("must be an integer", doc.error)
    end
    local s, doc = get("grep", "pattern=a&context=x")
    assert.are.equal(400, s)
    assert.matches("context must be an integer", doc.error)
    s, doc = get("read", "path=src%00/a.txt")
    assert.are.equal(400, s)
    assert.are.equal("query arguments must not contain NUL", doc.error)
    s = get("read", "path=src/a.txt&offset=&limit=")
    assert.are.equal(200, s)
  end)

  it("hold the read limits of §5.6", function()
    mcp.sh(srv, sb, "seq 2500 > num.txt; yes a | head -n 2500 > lines.txt;" ..
      " head -c 9000 /dev/zero | tr '\\0' x > long.txt; echo tail >> long.txt;" ..
      " printf '\\377\\376' > latin.txt; head -c 17M /dev/zero | tr '\\0' y > huge.txt; head -c 5M /dev/zero > big.bin")
    local st, doc = get("read", "path=lines.txt")
    assert.are.equal(200, st)
    assert.are.equal(2000, doc.end_line)
    assert.is_true(doc.truncated)
    assert.are.equal(2001, doc.next_offset)
    st, doc = get("read", "path=lines.txt&offset=2001")
    assert.are.equal(200, st)
    assert.are.equal(2500, doc.end_line)
    assert.is_false(doc.truncated)
    assert.is_nil(doc.next_offset)
    st, doc = get("read", "path=num.txt&offset=10&limit=5")
    assert.are.equal(200, st)
    assert.are.equal("10\n11\n12\n13\n14\n", doc.content)
    st, doc = get("read", "path=num.txt")     -- 8000 characters come first
    assert.are.equal(200, st)
    assert.is_true(doc.truncated)
    assert.is_true(doc.end_line < 2000)
    assert.is_true(lua.utf8_len(doc.content) <= 8000)
    st, doc = get("read", "path=long.txt")
    assert.are.equal(200, st)
    assert.are.equal(1, doc.clipped_line)
    assert.are.equal(9004, doc.clipped_length)
    assert.are.equal(8000, #doc.content)
    st = get("read", "path=lines.txt&offset=2501")
    assert.are.equal(400, st)
    for _, p in ipairs { "latin.txt", "huge.txt" } do
      st, doc = get("read", "path=" .. p)
      assert.are.equal(400, st, p)
      assert.is_string(doc.error)
    end
    st = get("read-binary", "path=big.bin")
    assert.are.equal(400, st)
    st = get("read-binary", "path=latin.txt")
    assert.are.equal(200, st)
  end)

  it("hold the list, glob and grep limits", function()
    mcp.sh(srv, sb, "mkdir -p many && cd many && for i in $(seq 600); do : > f$i.txt; done; cd ..;" ..
      " head -c 1100000 /dev/zero | tr '\\0' z > many/large.txt; printf 'zz\\377\\n' > many/bad.txt")
    local st, doc = get("list", "path=many")
    assert.are.equal(200, st)
    assert.are.equal(500, #doc.entries)
    assert.is_true(doc.truncated)
    st, doc = get("glob", "path=many&pattern=" .. q("*.txt"))
    assert.are.equal(200, st)
    assert.are.equal(200, #doc.matches)
    assert.are.equal(602, doc.total)
    assert.are.equal("limit", doc.truncated_reason)
    st, doc = get("glob", "path=many&pattern=" .. q("*.txt") .. "&limit=3")
    assert.are.equal(200, st)
    assert.are.equal(3, #doc.matches)
    st = get("glob", "pattern=" .. string.rep("a", 201))
    assert.are.equal(400, st)
    st, doc = get("grep", "path=many&pattern=z")
    assert.are.equal(200, st)
    assert.same({}, doc.files)            -- the big file and the non-UTF-8 one are skipped
    st = get("grep", "pattern=a&context=6")
    assert.are.equal(400, st)
    st = get("grep", "pattern=" .. q("(") .. "&regex=true")
    assert.are.equal(400, st)
    st = get("grep", "pattern=")
    assert.are.equal(400, st)
  end)

  it("hold the write limits", function()
    local st, doc = post("write", { path = "max.txt", content = string.rep("m", 1000000) })
    assert.are.equal(1000000, doc.bytes)
    assert.are.equal(200, st)
    st = post("write", { path = "over.txt", content = string.rep("m", 1000001) })
    assert.are.equal(400, st)
    assert.are.equal(400, (get("read", "path=over.txt")))      -- nothing was written
    st = post("write-binary", { path = "sha.bin", content_base64 = "eHl6", sha256 = string.rep("0", 64) })
    assert.are.equal(400, st)
    assert.are.equal(400, (get("read-binary", "path=sha.bin")))     -- nothing was written
    st = post("write-binary", { path = "sha.bin", content_base64 = "!!!" })
    assert.are.equal(400, st)
    st, doc = post("edit", { path = "src/a.txt", old = "nowhere", new = "x" })
    assert.are.equal(400, st)
    assert.matches("old string was not found", doc.error)
    post("write", { path = "twice.txt", content = "ab ab" })
    st, doc = post("edit", { path = "twice.txt", old = "ab", new = "c" })
    assert.are.equal(400, st)
    assert.matches("occurs 2 times", doc.error)
    st = post("edit", { path = "max.txt", old = "m", new = "mm" })
    assert.are.equal(400, st)
    st = post("write", { path = 7, content = "x" })
    assert.are.equal(400, st)
    st = post("write", { content = "x" })
    assert.are.equal(400, st)
    st = cp.request(srv, "POST", url("write"), { token = ws.access_token, body = "[1]" })
    assert.are.equal(400, st)
  end)

  it("move binary content at both limits exactly, with the route's answers and messages", function()
    local max = string.rep("\0\1\2\255\254", 200000)             -- 1 000 000 bytes
    local st, doc = post("write-binary", { path = "lim/w.bin", content_base64 = core.base64_encode(max),
                                           sha256 = core.sha256(max):upper() })
    assert.are.equal(200, st, json.encode(doc))
    assert.same({ path = "lim/w.bin", bytes = 1000000, sha256 = core.sha256(max), workspace_id = ws.workspace_id },
                doc)
    local rst, _, _, raw = get("read-binary", "path=lim/w.bin")
    assert.are.equal(200, rst)
    -- the reply's text, key order included, is what the route always wrote
    assert.are.equal('{"path":"lim/w.bin","bytes":1000000,"sha256":"' .. core.sha256(max) ..
      '","content_base64":"' .. core.base64_encode(max) .. '","workspace_id":"' .. ws.workspace_id .. '"}', raw)
    st, doc = post("write-binary", { path = "lim/w.bin", content_base64 = core.base64_encode(max .. "x") })
    assert.are.equal(400, st)
    assert.matches("1000001 bytes, more than 1000000", doc.error)
    st, doc = post("write-binary", { path = "lim/w.bin", content_base64 = string.rep("A", 1333340) })
    assert.are.equal(400, st)
    assert.matches("the content is more than 1000000 bytes", doc.error)
    st, doc = post("write-binary", { path = "lim/w.bin", content_base64 = core.base64_encode("x"),
                                     sha256 = string.rep("0", 64) })
    assert.are.equal(400, st)
    assert.matches("does not match the content %(its sha256 is " .. core.sha256("x") .. "%)", doc.error)
    -- a NUL never gets as far as the agent; content that is not a string
    -- stays in the frame and is refused by name
    local body = '{"path":"lim/w.bin","content_base64":"eA==\\u0000"}'
    st = cp.request(srv, "POST", url("write-binary"), { token = ws.access_token, body = body })
    assert.are.equal(400, st)
    st, doc = post("write-binary", { path = "lim/w.bin", content_base64 = 7 })
    assert.are.equal(400, st)
    assert.matches("argument 'content_base64' must be a string", doc.error)
    st, doc = post("write-binary", { path = "lim/w.bin" })
    assert.are.equal(400, st)
    assert.matches("missing argument 'content_base64'", doc.error)
    -- checks keep their order: the path before the content
    st, doc = post("write-binary", { path = "../w.bin", content_base64 = "!!!" })
    assert.are.equal(400, st)
    assert.is_nil(doc.error:find("base64", 1, true), doc.error)
    st = get("read-binary", "path=lim/w.bin")
    assert.are.equal(200, st)
    local back = select(2, get("read-binary", "path=lim/w.bin"))
    assert.are.equal(max, core.base64_decode(back.content_base64))   -- every refusal left it as it was
    mcp.sh(srv, sb, "head -c 4194304 /dev/urandom > lim/four.bin && cp lim/four.bin lim/over.bin && " ..
      "printf x >> lim/over.bin")
    st, doc = get("read-binary", "path=lim/four.bin")
    assert.are.equal(200, st)
    local four = core.base64_decode(doc.content_base64)
    assert.are.equal(4194304, #four)
    assert.are.equal(4194304, doc.bytes)
    assert.are.equal(core.sha256(four), doc.sha256)
    st, doc = get("read-binary", "path=lim/over.bin")
    assert.are.equal(400, st)
    assert.matches("4194305 bytes, larger than the limit of 4194304 bytes", doc.error)
  end)

  it("refuse every path escape on every route, and the host is untouched", function()
    mcp.sh(srv, sb,
      "ln -sfn /etc/passwd pw; ln -sfn / root; ln -sfn ../../.. up; ln -sfn .sandbox sbx; mkdir -p .sandbox")
    local paths = { "..", "../x", "/etc/passwd", "src/../../x", "pw", "root/etc/passwd", "up/etc/passwd",
                    ".sandbox", ".sandbox/x", "./.sandbox/x", "sbx/x", "" }
    for _, p in ipairs(paths) do
      for _, r in ipairs { "read", "read-binary" } do
        local st, doc = get(r, "path=" .. q(p))
        assert.are.equal(400, st, r .. " " .. p)
        assert.is_nil(tostring(doc.content or ""):find("root:"), p)
      end
      if p ~= "" then
        for _, r in ipairs { "list", "glob", "grep" } do
          local st = get(r, "path=" .. q(p) .. "&pattern=x")
          assert.is_true(st == 400, r .. " " .. p .. " -> " .. st)
        end
        for _, r in ipairs(WRITES) do
          local st = post(r, { path = p .. "/new.txt", content = "x", content_base64 = "eA==" })
          assert.are.equal(400, st, r .. " " .. p)
          st = post(r, { path = p, content = "x", content_base64 = "eA==", old = "root", new = "toor" })
          assert.are.equal(400, st, r .. " " .. p)
        end
      end
    end
    assert.are.equal("", mcp.sh(srv, sb, "ls -A .sandbox"))
    local st, doc = get("read", "path=pw")
    assert.are.equal(400, st)
    assert.matches("outside the workspace", doc.error)
    -- a symlink inside the tree that stays inside is followed
    mcp.sh(srv, sb, "ln -sfn src/a.txt inside")
    st = get("read", "path=inside")
    assert.are.equal(200, st)
    assert.are.equal(200, (cp.request(srv, "GET", "/livez")))
  end)
end)
