-- #unit specs of the agent tools' pure parts: the incremental SHA-256 and
-- the directory reader of the core, workspace path normalisation, and
-- the helper's command line (its size and quoting), with no server.
local core = require "unsandbox.core"
local files = require "unsandbox.agent.files"
local helper = require "unsandbox.agent.helper"
local fs = require "spec.helpers.fs"

describe("core.sha256_stream #unit", function()
  it("gives the one-shot digest whatever the pieces", function()
    local data = ("abc\0\255"):rep(100000)
    local h = core.sha256_stream()
    for i = 1, #data, 7777 do h:update(data:sub(i, i + 7776)) end
    assert.equal(core.sha256(data), h:hex())
    assert.equal(core.sha256(data), h:hex())                  -- finished: the same again
    assert.equal(core.sha256(""), core.sha256_stream():hex())
    assert.has_error(function() h:update("more") end)
    h:close()
    assert.has_error(function() h:hex() end, "attempt to use a closed Sha256")
    assert.has_error(function() core.sha256_stream():update(42) end)
    local c = core.codec.sha256_stream()
    finally(function() c:close() end)
    assert.matches("unsandbox.Sha256", tostring(c))
  end)
end)

describe("core.read_dir #unit", function()
  local dir
  setup(function()
    dir = fs.tmpdir("unsb-readdir")
    fs.write(dir .. "/a file", "12345")
    os.execute("mkdir " .. fs.quote(dir .. "/sub") .. " && ln -s 'a file' " .. fs.quote(dir .. "/link") ..
      " && chmod 0640 " .. fs.quote(dir .. "/a file"))
  end)
  teardown(function() fs.rm_rf(dir) end)

  it("lists entries with lstat's type, mode, size and mtime", function()
    local list = assert(core.read_dir(dir))
    table.sort(list, function(a, b) return a.name < b.name end)
    assert.same({ "a file", "link", "sub" }, { list[1].name, list[2].name, list[3].name })
    assert.same({ "file", 5, 416 }, { list[1].type, list[1].size, list[1].mode })
    assert.equal("symlink", list[2].type)
    assert.equal("directory", list[3].type)
    assert.is_true(math.abs(list[1].mtime - os.time()) < 3600)
    local none, err = core.read_dir(dir .. "/none")
    assert.is_nil(none)
    assert.matches("No such file", err)
    none, err = core.read_dir(dir .. "/a file")
    assert.is_nil(none)
    assert.matches("Not a directory", err)
    assert.has_error(function() core.read_dir(nil) end)
  end)
end)

describe("workspace paths #unit", function()
  it("normalise to the workspace's relative form and refuse escapes", function()
    assert.equal("a/b", files.path("f", "path", "/workspace/a//./b/"))
    assert.equal("a b/c", files.path("f", "path", "./a b/c"))
    assert.equal(".", files.path("f", "path", "/workspace", true))
    assert.equal(".", files.path("f", "path", ".", true))
    assert.equal("ünï/☃", files.path("f", "path", "ünï/☃"))
    for _, bad in ipairs { "../x", "a/../b", "/etc", "~", "", ".sandbox/x", "./.sandbox", "\255", "a\0b",
                           "\237\160\128", "\192\128" } do
      assert.has_error(function() files.path("f", "path", bad) end, nil, bad)
    end
    assert.has_error(function() files.path("f", "path", ".") end)
    assert.has_error(function() files.path("f", "path", 1) end)
    assert.equal(".", files.parent("top"))
    assert.equal("a/b", files.parent("a/b/c"))
    assert.equal("x", files.join(".", "x"))
    assert.equal("d/x", files.join("d", "x"))
  end)

  it("the helper lives at a path named by its content", function()
    assert.matches("^/tmp/%.unsandbox/h%-%x+%.sh$", helper.HELPER)
    assert.equal(helper.HELPER, helper.path_of("h", helper.SCRIPT, ".sh"))
    assert.are_not.equal(helper.path_of("h", "a", ".sh"), helper.path_of("h", "b", ".sh"))
  end)
end)
