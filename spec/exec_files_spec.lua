-- #integration specs of the execution API's files from and to this
-- machine: input_files from paths, file handles and strings (the
-- service's size rules stated in the error), and save_artifacts to a
-- directory or a function.
local server = require "spec.helpers.unsandboxd"
local fs = require "spec.helpers.fs"

describe("input files and artifacts #integration", function()
  local srv, unsandbox, c, dir

  setup(function()
    srv = server.start {}
    unsandbox = require "unsandbox"
    c = unsandbox.client { url = srv.url, public_key = srv.public_key, secret_key = srv.secret_key }
    dir = fs.tmpdir("unsb-exec-files")
  end)
  teardown(function()
    if srv then srv.stop() end
    if dir then fs.rm_rf(dir) end
  end)

  it("sends input files from a path, a handle (from where it stands) and a string", function()
    fs.write(dir .. "/in.txt", "0123456789 from a path\n")
    local h = assert(io.open(dir .. "/in.txt", "rb"))
    h:seek("set", 11)
    local r = assert(c:execute_code("bash", "cat a.txt sub/b.txt c.txt in.txt", { input_files = {
      { filename = "a.txt", path = dir .. "/in.txt" }, { filename = "sub/b.txt", file = h },
      { filename = "c.txt", content = "inline\n" }, dir .. "/in.txt" } }))
    h:close()
    assert.equal("0123456789 from a path\nfrom a path\ninline\n0123456789 from a path\n", r.stdout)
  end)

  it("states the service's rules when a file is too large, and names a missing one", function()
    local r, err = c:execute_code("bash", "true", { input_files = {
      { filename = "big", content = ("x"):rep(100 * 1000 * 1000 + 1) } } })
    assert.is_nil(r)
    assert.equal("validation", err.kind)
    assert.equal("input file big is 100000001 bytes: the service takes at most 100 MB per file", err.message)
    r, err = c:execute_code("bash", "true", { input_files = { { filename = "x", path = dir .. "/none" } } })
    assert.is_nil(r)
    assert.matches("input file " .. dir .. "/none", err.message, 1, true)
    assert.has_error(function() c:execute_code("bash", "true", { input_files = {
      { filename = "x", content = "a", path = "b" } } }) end)
    assert.has_error(function() c:execute_code("bash", "true", { input_files = {
      { filename = "x", file = "not a handle" } } }) end)
    assert.has_error(function() c:execute_code("bash", "true", { input_files = {
      { filename = "x", content = "a", extra = 1 } } }) end)
  end)

  it("saves artifacts under a directory at their paths, flattened, or to a function", function()
    local r = assert(c:execute_code("bash", "mkdir -p out/deep; printf one > out/deep/1.txt; printf two > top.txt",
      { return_artifacts = true }))
    local written = assert(unsandbox.save_artifacts(r, dir .. "/art"))
    table.sort(written)
    assert.same({ dir .. "/art/out/deep/1.txt", dir .. "/art/top.txt" }, written)
    assert.equal("one", fs.read(dir .. "/art/out/deep/1.txt"))
    assert(unsandbox.save_artifacts(r.artifacts, dir .. "/flat/", { flatten = true }))
    assert.equal("one", fs.read(dir .. "/flat/out_deep_1.txt"))
    local seen = {}
    assert(unsandbox.save_artifacts(r, function(name, content) seen[name] = content end))
    assert.same({ ["out/deep/1.txt"] = "one", ["top.txt"] = "two" }, seen)
    local bad, err = unsandbox.save_artifacts({ { filename = "../escape", content = "x" } }, dir .. "/art")
    assert.is_nil(bad)
    assert.matches("artifact ../escape", err.message, 1, true)
    assert.has_error(function() unsandbox.save_artifacts(r, dir, { nope = true }) end)
  end)
end)
