-- #integration specs of the file operations on a Sandbox and on the
-- Manager with a name (lua/unsandbox/agent/files.lua): stat, exists,
-- list, remove, rename, mkdir, chmod, with hostile names (spaces,
-- quotes, $(), newlines, a leading '-', unicode, bytes that are not
-- UTF-8) that must reach the workspace as data; paths that escape
-- refused by the client before sending and by the sandbox side again.
local server = require "spec.helpers.unsandboxd"

describe("file operations #integration", function()
  local srv, unsandbox, m, sb

  setup(function()
    srv = server.start {}
    unsandbox = require "unsandbox"
    m = unsandbox.manager { url = srv.cp_url, token = srv.token, env = {} }
    sb = assert(unsandbox.Sandbox.create { name = "files", manager = m })
  end)
  teardown(function()
    if sb then sb:close() end
    if srv then srv.stop() end
  end)

  local HOSTILE = {
    "with space.txt", "it's \"quoted\".txt", "$(touch pwned).txt", "`id`;rm -rf x",
    "new\nline.txt", "-n", "--help", "ünïcødé ☃.txt", "tab\there", "*", "a\\b",
  }

  it("stat, exists and list describe files, directories and symlinks", function()
    assert(sb:write_file("st/a.txt", "hello"))
    assert(sb:run_command("ln", { "-s", "a.txt", "st/link" }))
    local st = assert(sb:stat("st/a.txt"))
    assert.same({ "file", 5, 420 }, { st.type, st.size, st.mode })
    assert.is_true(math.abs(os.time() - st.mtime) < 3600)
    assert.equal("directory", assert(sb:stat("/workspace/st")).type)
    assert.equal("symlink", assert(sb:stat("st/link")).type)
    assert.equal("directory", assert(sb:stat(".")).type)
    local r, err = sb:stat("st/none")
    assert.is_nil(r)
    assert.equal("not_found", err.kind)
    assert.matches("st/none", err.message, 1, true)
    assert.is_true(sb:exists("st/a.txt"))
    assert.is_false(sb:exists("st/none"))
    local names = {}
    for _, e in ipairs(assert(sb:list("st"))) do names[#names + 1] = e.name .. ":" .. e.type end
    assert.same({ "a.txt:file", "link:symlink" }, names)
  end)

  it("list goes down levels with recursive and depth, and hides .sandbox", function()
    assert(sb:mkdir("deep/1/2/3", { parents = true }))
    assert(sb:write_file("deep/1/2/3/f", "x"))
    local function paths(list)
      local t = {}
      for _, e in ipairs(list) do t[#t + 1] = e.path end
      return t
    end
    assert.same({ "deep/1" }, paths(assert(sb:list("deep"))))
    assert.same({ "deep/1", "deep/1/2" }, paths(assert(sb:list("deep", { recursive = true, depth = 2 }))))
    assert.same({ "deep/1", "deep/1/2", "deep/1/2/3", "deep/1/2/3/f" },
      paths(assert(sb:list("deep", { recursive = true }))))
    for _, e in ipairs(assert(sb:list(".", { recursive = true }))) do
      assert.is_nil(e.path:match("^%.sandbox"))
    end
    local r, err = sb:list("deep/1/2/3/f")
    assert.is_nil(r)
    assert.equal("not_directory", err.code)
  end)

  it("every operation takes hostile names as data", function()
    assert(sb:mkdir("hostile"))
    for i, name in ipairs(HOSTILE) do
      local path = "hostile/" .. name
      assert(sb:upload("content " .. i, path))
      assert.equal(#("content " .. i), assert(sb:stat(path)).size, name)
      assert(sb:chmod(path, "0600"))
      assert.equal(384, assert(sb:stat(path)).mode)
      assert(sb:rename(path, path .. ".moved"))
      assert.is_false(sb:exists(path))
      assert.equal("content " .. i, (assert(sb:download(path .. ".moved"))))
    end
    local listed = {}
    for _, e in ipairs(assert(sb:list("hostile"))) do listed[e.name] = true end
    for _, name in ipairs(HOSTILE) do assert.is_true(listed[name .. ".moved"], name) end
    assert.is_false(sb:exists("pwned.txt"))
    assert.is_false(sb:exists("x"))
    for _, name in ipairs(HOSTILE) do assert(sb:remove("hostile/" .. name .. ".moved")) end
    assert.equal(0, #assert(sb:list("hostile")))
    assert(sb:mkdir("-rf dir"))
    assert(sb:remove("-rf dir"))
  end)

  it("remove, rename, mkdir and chmod report what is in the way", function()
    assert(sb:mkdir("ops/full", { parents = true }))
    assert(sb:write_file("ops/full/f", "x"))
    local r, err = sb:remove("ops/full")
    assert.is_nil(r)
    assert.same({ "sandbox", "not_empty" }, { err.kind, err.code })
    assert(sb:remove("ops/full", { recursive = true }))
    r, err = sb:remove("ops/full")
    assert.is_nil(r)
    assert.equal("not_found", err.kind)
    r, err = sb:mkdir("ops")
    assert.is_nil(r)
    assert.same({ "sandbox", "exists" }, { err.kind, err.code })
    assert(sb:mkdir("ops", { parents = true }))
    r, err = sb:mkdir("ops/no/parent")
    assert.is_nil(r)
    assert.equal("not_found", err.kind)
    assert(sb:write_file("ops/file", "x"))
    r, err = sb:mkdir("ops/file", { parents = true })
    assert.is_nil(r)
    assert.equal("sandbox", err.kind)
    r, err = sb:rename("ops/missing", "ops/other")
    assert.is_nil(r)
    assert.equal("not_found", err.kind)
    r, err = sb:rename("ops/file", "ops/nodir/file")
    assert.is_nil(r)
    assert.equal("not_found", err.kind)
    assert(sb:rename("ops/file", "ops/renamed"))
    assert(sb:chmod("ops/renamed", 493))
    assert.equal(493, assert(sb:stat("ops/renamed")).mode)
    assert(sb:chmod("ops/renamed", "go-rx"))
    assert.equal(448, assert(sb:stat("ops/renamed")).mode)
    r, err = sb:chmod("ops/none", "755")
    assert.is_nil(r)
    assert.equal("not_found", err.kind)
    assert.has_error(function() sb:remove(".", { recursive = true }) end)
    assert.has_error(function() sb:remove("/workspace", { recursive = true }) end)
    assert.is_true(sb:exists("ops/renamed"))
  end)

  it("the Manager with a name does the same", function()
    assert(m:mkdir("mgr", nil, "files"))
    assert(m:upload("abc", "mgr/x", nil, "files"))
    assert.equal(3, assert(m:stat("mgr/x", "files")).size)
    assert.is_true(m:exists("mgr/x", "files"))
    assert.equal(1, #assert(m:list("mgr", nil, "files")))
    assert(m:rename("mgr/x", "mgr/y", "files"))
    assert(m:chmod("mgr/y", "u+x", "files"))
    assert(m:remove("mgr", { recursive = true }, "files"))
    assert.is_false(m:exists("mgr", "files"))
  end)

  it("refuses escapes before sending, and the sandbox side refuses them again", function()
    for _, bad in ipairs { "../x", "a/../../x", "/etc/passwd", "~/x", ".sandbox/x", "", "a\0b",
                           "\255\254 not utf8", "/workspace/../etc" } do
      assert.has_error(function() sb:stat(bad) end, nil, bad)
      assert.has_error(function() sb:remove(bad) end, nil, bad)
    end
    assert.has_error(function() sb:rename("a", "../b") end)
    assert.has_error(function() sb:chmod("a", "rwx") end)
    assert.has_error(function() sb:chmod("a", 70000) end)
    assert.has_error(function() sb:list(".", { depth = 2 }) end)
    assert.has_error(function() sb:list(".", { nope = true }) end)
    assert.has_error(function() sb:mkdir("x", { parents = "yes" }) end)
    assert.has_error(function() sb:remove(42) end)
    -- a symlinked parent leading out of the workspace: refused in the sandbox
    assert(sb:run_command("ln", { "-s", "/etc", "out" }))
    local r, err = sb:stat("out/passwd")
    assert.is_nil(r)
    assert.same({ "sandbox", "invalid" }, { err.kind, err.code })
    assert.matches("outside the workspace", err.message, 1, true)
    r, err = sb:remove("out/hostname")
    assert.is_nil(r)
    assert.equal("invalid", err.code)
    assert(sb:remove("out"))              -- the symlink itself may go
    assert.is_true(assert(sb:run_command("test", { "-d", "/etc" })).exit_code == 0)
  end)
end)
