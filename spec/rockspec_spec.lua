-- The rockspec lists every source, and really installs into a tree from
-- which stock lua5.4 requires the module.
local proc = require "spec.helpers.proc"

local function rockspec()
  local p = io.popen("ls unsandbox-*.rockspec")
  local name = p:read("l")
  p:close()
  local env = {}
  assert(loadfile(name, "t", env))()
  return env, name
end

local function files(pattern)
  local out = {}
  local p = io.popen("ls " .. pattern)
  for line in p:lines() do out[#out + 1] = line end
  p:close()
  return out
end

describe("rockspec", function()
  it("lists every Lua module and C source #unit", function()
    local spec = rockspec()
    local listed = {}
    for _, v in pairs(spec.build.modules) do
      if type(v) == "string" then listed[v] = true
      else for _, s in ipairs(v.sources) do listed[s] = true end end
    end
    for _, f in ipairs(files("lua/unsandbox/*.lua csrc/core/*.c csrc/lua/*.c")) do
      assert.is_true(listed[f] == true, f .. " is missing from the rockspec")
    end
  end)

  it("has the version the code reports (core/version.h) #unit", function()
    local spec = rockspec()
    local core = require "unsandbox.core"
    assert.are.equal(core.VERSION .. "-1", spec.version)
    assert.are.equal("v" .. core.VERSION, spec.source.tag)
    assert.are.equal(core.VERSION, require("unsandbox").VERSION)
  end)

  it("installs into a temporary tree that stock lua5.4 requires from #integration", function()
    local out, code = proc.run("scripts/rock-check.sh")
    assert.are.equal(0, code, out)
    assert.matches("rock ok: unsandbox 0.1.0", out)
  end)
end)
