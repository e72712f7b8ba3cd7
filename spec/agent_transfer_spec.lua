-- #integration specs of streamed transfers (lua/unsandbox/agent/transfer.lua):
-- every kind of source and sink, progress, sha256 checked both ways,
-- directories, and failures that leave nothing half-written (remote and
-- local) and name the file and the offset.
local server = require "spec.helpers.unsandboxd"
local fs = require "spec.helpers.fs"

describe("streamed transfers #integration", function()
  local srv, unsandbox, core, m, sb, dir

  setup(function()
    srv = server.start {}
    unsandbox = require "unsandbox"
    core = require "unsandbox.core"
    m = unsandbox.manager { url = srv.cp_url, token = srv.token, env = {} }
    sb = assert(unsandbox.Sandbox.create { name = "transfers", manager = m })
    dir = fs.tmpdir("unsb-transfer")
  end)
  teardown(function()
    if sb then sb:close() end
    if srv then srv.stop() end
    if dir then fs.rm_rf(dir) end
  end)

  local function blob(n)
    local t = {}
    for i = 1, n do t[i] = string.char((i * 7) % 256) end
    return table.concat(t)
  end
  local DATA = blob(2500003)          -- three upload pieces, one download piece

  local function leftovers(path)
    local names = {}
    for _, e in ipairs(assert(sb:list(path or ".", { recursive = true }))) do
      if e.name:find("unsb", 1, true) then names[#names + 1] = e.path end
    end
    return names
  end

  local function write(path, s)
    local f = assert(io.open(path, "wb"))
    f:write(s)
    f:close()
  end
  local function read(path)
    local f = io.open(path, "rb")
    if not f then return nil end
    local s = f:read("a")
    f:close()
    return s
  end

  it("uploads from a string, a path, a file handle and a reader, with progress", function()
    local sha = core.codec.sha256(DATA)
    local seen = {}
    local r = assert(sb:upload(DATA, "up/string.bin", { on_progress = function(done, total)
      seen[#seen + 1] = { done, total }
    end }))
    assert.same({ "up/string.bin", #DATA, sha }, { r.path, r.bytes, r.sha256 })
    assert.same({ 0, #DATA }, seen[1])
    assert.same({ #DATA, #DATA }, seen[#seen])
    for i = 2, #seen do assert.is_true(seen[i][1] > seen[i - 1][1]) end
    write(dir .. "/src.bin", DATA)
    assert.equal(sha, assert(sb:upload({ path = dir .. "/src.bin" }, "up/path.bin")).sha256)
    local f = assert(io.open(dir .. "/src.bin", "rb"))
    f:seek("set", 3)
    assert.equal(core.codec.sha256(DATA:sub(4)), assert(sb:upload(f, "up/handle.bin")).sha256)
    f:close()
    local pos = 1
    r = assert(sb:upload(function()
      if pos > #DATA then return nil end
      local s = DATA:sub(pos, pos + 333332)
      pos = pos + #s
      return s
    end, "up/reader.bin", { size = #DATA, sha256 = sha }))
    assert.equal(#DATA, r.bytes)
    assert.equal(#DATA, assert(sb:stat("up/reader.bin")).size)
    assert.equal(core.codec.sha256(""), assert(sb:upload("", "up/empty")).sha256)
    assert.equal(0, assert(sb:stat("up/empty")).size)
    assert.same({}, leftovers("up"))
  end)

  it("downloads to a string, a path, a file handle and a sink, checked", function()
    assert(sb:upload(DATA, "down/src.bin"))
    local bytes, info = assert(sb:download("down/src.bin"))
    assert.equal(DATA, bytes)
    assert.equal(core.codec.sha256(DATA), info.sha256)
    local seen = {}
    assert.equal(dir .. "/out.bin", assert(sb:download("down/src.bin", dir .. "/out.bin", {
      on_progress = function(done, total) seen[#seen + 1] = done; assert.equal(#DATA, total) end })))
    assert.equal(DATA, read(dir .. "/out.bin"))
    assert.same({ 0, #DATA }, { seen[1], seen[#seen] })
    local f = assert(io.open(dir .. "/handle.bin", "wb"))
    assert.equal(f, (assert(sb:download("down/src.bin", f))))
    f:close()
    assert.equal(DATA, read(dir .. "/handle.bin"))
    local parts = {}
    assert(sb:download("down/src.bin", function(s) parts[#parts + 1] = s end))
    assert.equal(DATA, table.concat(parts))
    assert.same({}, leftovers())
  end)

  it("a sha256 that does not match fails and leaves nothing", function()
    local r, err = sb:upload(DATA, "sha/up.bin", { sha256 = ("0"):rep(64) })
    assert.is_nil(r)
    assert.equal("integrity", err.kind)
    assert.equal("sha/up.bin", err.path)
    assert.is_false(sb:exists("sha/up.bin"))
    assert(sb:upload(DATA, "sha/up.bin"))
    r, err = sb:download("sha/up.bin", dir .. "/sha.bin", { sha256 = ("0"):rep(64) })
    assert.is_nil(r)
    assert.equal("integrity", err.kind)
    assert.is_nil(read(dir .. "/sha.bin"))
    assert.same({}, leftovers())
  end)

  it("stopped mid-transfer (false, an error, a failing reader) leaves no half-written file", function()
    assert(sb:upload("old", "stop/target"))
    local r, err = sb:upload(DATA, "stop/target", { on_progress = function(done)
      if done >= 1000000 then return false end end })
    assert.is_nil(r)
    assert.same({ "cancelled", "stop/target", 1000000 }, { err.kind, err.path, err.offset })
    assert.matches("upload of 'stop/target' failed at byte 1000000", err.message, 1, true)
    assert.equal("old", (assert(sb:download("stop/target"))))
    assert.has_error(function()
      sb:upload(DATA, "stop/target", { on_progress = function(done)
        if done > 0 then error("boom") end end })
    end, "boom")
    local n = 0
    r, err = sb:upload(function() n = n + 1; if n > 2 then error("disk gone") end; return ("z"):rep(600000) end,
      "stop/target")
    assert.is_nil(r)
    assert.same({ "stop/target", 1000000 }, { err.path, err.offset })
    assert.matches("disk gone", err.message, 1, true)
    assert.equal("old", (assert(sb:download("stop/target"))))
    assert.same({}, leftovers("stop"))
    write(dir .. "/keep.bin", "previous")
    r, err = sb:download("stop/target", dir .. "/keep.bin", { on_progress = function(done)
      if done == 0 then return false end end })
    assert.is_nil(r)
    assert.equal("cancelled", err.kind)
    assert.equal("previous", read(dir .. "/keep.bin"))
    local names = {}
    for _, e in ipairs(core.files.read_dir(dir)) do names[#names + 1] = e.name end
    for _, name in ipairs(names) do assert.is_nil(name:find(".part", 1, true), name) end
  end)

  it("a file past read-binary's limit comes in pieces, checked, and leaves no piece behind", function()
    local big = DATA .. blob(4 * 1048576 - #DATA) .. "end"   -- two download pieces
    assert(sb:upload(big, "pieces/big.bin"))
    local seen = {}
    local bytes, info = assert(sb:download("pieces/big.bin", nil, { on_progress = function(done, total)
      seen[#seen + 1] = done
      assert.equal(#big, total)
    end }))
    assert.equal(#big, #bytes)
    assert.is_true(bytes == big)
    assert.same({ #big, core.codec.sha256(big) }, { info.bytes, info.sha256 })
    assert.same({ 0, 4 * 1048576, #big }, seen)
    local r, err = sb:download("pieces/big.bin", nil, { sha256 = ("0"):rep(64) })
    assert.is_nil(r)
    assert.equal("integrity", err.kind)
    assert.same({}, leftovers())
  end)

  it("an upload whose last pieces would not fit the commit call still commits them", function()
    local long = {}
    for i = 1, 6 do long[i] = ("d%d"):format(i) .. ("x"):rep(220) end
    local path = table.concat(long, "/") .. "/up.bin"
    local r = assert(sb:upload(DATA, path))
    assert.same({ #DATA, core.codec.sha256(DATA) }, { r.bytes, r.sha256 })
    assert.equal(DATA, (assert(sb:download(path))))
    assert.same({}, leftovers(long[1]))
  end)

  it("errors name the file: missing sources and destinations, directories", function()
    local r, err = sb:download("no/such/file")
    assert.is_nil(r)
    assert.equal("not_found", err.kind)
    assert.equal("no/such/file", err.path)
    assert.equal(0, err.offset)
    r, err = sb:upload({ path = dir .. "/does-not-exist" }, "x")
    assert.is_nil(r)
    assert.matches("does-not-exist", err.message, 1, true)
    assert(sb:mkdir("isdir/sub", { parents = true }))
    r, err = sb:upload("x", "isdir")
    assert.is_nil(r)
    assert.equal("is_directory", err.code)
    r, err = sb:download("isdir")
    assert.is_nil(r)
    assert.equal("is_directory", err.code)
    assert.has_error(function() sb:upload(42, "x") end)
    assert.has_error(function() sb:upload("x", "../x") end)
    assert.has_error(function() sb:download("x", 42) end)
    assert.has_error(function() sb:upload("x", "y", { sha256 = "abc" }) end)
    assert.has_error(function() sb:upload("x", "y", { nope = 1 }) end)
  end)

  it("upload_dir and download_dir move a tree file by file", function()
    local tree = dir .. "/tree"
    assert(core.files.mkdirs(tree .. "/a/b"))
    write(tree .. "/a/b/deep.bin", DATA)
    write(tree .. "/top file.txt", "top")
    write(tree .. "/a/it's.txt", "quoted")
    os.execute("ln -s deep.bin " .. fs.quote(tree .. "/a/b/link"))
    local seen = 0
    local r = assert(sb:upload_dir(tree, "remote tree", { on_progress = function(done, total, path)
      assert.is_true(done >= seen)
      seen = done
      assert.equal(#DATA + 9, total)
      assert.is_string(path)
    end }))
    assert.same({ 3, #DATA + 9 }, { r.files, r.bytes })
    assert.same({ "a/b/link" }, r.skipped)
    assert.equal(#DATA, assert(sb:stat("remote tree/a/b/deep.bin")).size)
    local back = dir .. "/back"
    r = assert(sb:download_dir("remote tree", back))
    assert.equal(3, r.files)
    assert.equal(DATA, read(back .. "/a/b/deep.bin"))
    assert.equal("top", read(back .. "/top file.txt"))
    assert.equal("quoted", read(back .. "/a/it's.txt"))
    local none = assert(sb:download_dir("remote tree/a/b", dir .. "/sub"))
    assert.equal(1, none.files)
    local nf, err = sb:upload_dir(dir .. "/missing", "x")
    assert.is_nil(nf)
    assert.equal("not_found", err.kind)
  end)
end)
