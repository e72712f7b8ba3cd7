-- The rockspec builds through the Makefile, and really installs into a
-- tree from which stock lua5.4 requires the module and whose unlua and un
-- work.
-- One Lua: LuaRocks builds and installs the rock for 5.4; busted's Lua only reads the rockspec.
local proc = require "spec.helpers.proc"
local lua = require "spec.helpers.lua"

local function rockspec()
  local p = io.popen("ls unsandbox-*.rockspec")
  local name = p:read("*l")
  p:close()
  local env = {}
  assert(lua.loadfile(name, env))()
  return env, name
end

describe("rockspec", function()
  it("builds and installs through the Makefile, and declares what unlua links #unit", function()
    local spec = rockspec()
    assert.are.equal("make", spec.build.type)
    assert.are.equal("rock", spec.build.build_target)
    assert.are.equal("install-rock", spec.build.install_target)
    for _, v in ipairs { "BINDIR", "LUADIR", "LIBDIR" } do
      assert.are.equal("$(" .. v .. ")", spec.build.install_variables[v])
    end
    local makefile = assert(io.open("Makefile")):read("*a")
    assert.matches("\nrock:", makefile)
    assert.matches("\ninstall%-rock:", makefile)
    -- the system's lua-cjson satisfies it; no rock of it is asked for
    assert.are.equal("lua5.4-cjson", spec.external_dependencies.CJSON.library)
    for _, d in ipairs(spec.dependencies) do assert.not_matches("cjson", d) end
    assert.matches("busted", spec.test.command)
  end)

  it("says what it lacks: unsandboxd, and how to get it #unit", function()
    local spec = rockspec()
    assert.matches("has no unsandboxd", spec.description.detailed)
    assert.matches("build it%s+with `make`", spec.description.detailed)
  end)

  it("the files luarocks make leaves behind are ignored #unit", function()
    local ignore = assert(io.open(".gitignore")):read("*a")
    for _, pattern in ipairs { "*.rock", "/lua_modules/", "/.luarocks/" } do
      assert.is_truthy(ignore:find(pattern, 1, true), pattern .. " is not in .gitignore")
    end
  end)

  it("has the version the code reports (core/version.h) #unit", function()
    local spec = rockspec()
    local core = require "unsandbox.core"
    assert.are.equal(core.VERSION .. "-1", spec.version)
    assert.are.equal("v" .. core.VERSION, spec.source.tag)
    assert.are.equal(core.VERSION, require("unsandbox").VERSION)
  end)

  it("installs into a temporary tree that stock lua5.4 requires from, and one for LuaJIT #integration", function()
    local out, code = proc.run("scripts/rock-check.sh")
    assert.are.equal(0, code, out)
    assert.matches("rock ok: unsandbox 0.1.0", out)
    assert.matches("rock unlua ok", out)
    assert.matches("rock un ok", out)
    assert.matches("rock luajit ok: unsandbox 0.1.0 under LuaJIT 2.1", out)
  end)
end)
