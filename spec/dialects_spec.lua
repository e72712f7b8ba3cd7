-- #unit: the facade is written in the common subset of the Luas the
-- module builds for. Every file but the `un` tool's (cli/, which only
-- unlua, a 5.4 host, runs) compiles under each stock interpreter, and
-- nothing else of the facade requires the tool's modules; the module of
-- each Lua loads in that Lua and reports what it is.
-- One Lua: it runs each Lua itself.
local proc = require "spec.helpers.proc"

local function facade_files(with_cli)
  local out = {}
  local p = io.popen("find lua/unsandbox -name '*.lua' | sort")
  for f in p:lines() do
    if with_cli or not f:find("^lua/unsandbox/cli/") then out[#out + 1] = f end
  end
  p:close()
  return out
end

local LUAS = {
  { "luajit", "build/luajit" }, { "lua5.1", "build/5.1" }, { "lua5.3", "build/5.3" },
  { "lua5.4", "lua" },
}

describe("the facade's dialect #unit", function()
  for _, l in ipairs(LUAS) do
    local interp, cdir = l[1], l[2]
    it("compiles under " .. interp .. ", but for the un tool's cli/", function()
      local files = facade_files(false)
      assert.is_true(#files > 30)
      local code = "local bad = {} for f in os.getenv('FILES'):gmatch('%S+') do local ok, err = loadfile(f) " ..
        "if not ok then bad[#bad + 1] = err end end print(#bad == 0 and 'all compile' or table.concat(bad, '\\n'))"
      local out, rc = proc.run(interp .. " -e " .. proc.quote(code), { FILES = table.concat(files, " ") })
      assert.are.equal(0, rc, out)
      assert.are.equal("all compile\n", out)
    end)

    it("the module built for " .. interp .. " loads there", function()
      local out, rc = proc.run(interp .. " -e " .. proc.quote(
        "local u = require 'unsandbox'; print(u.VERSION, type(u.core.loop.YIELD), type(u.with))"),
        { LUA_PATH = "lua/?.lua;lua/?/init.lua;;", LUA_CPATH = cdir .. "/?.so;;",
          LUA_PATH_5_3 = false, LUA_PATH_5_4 = false, LUA_CPATH_5_3 = false, LUA_CPATH_5_4 = false })
      assert.are.equal(0, rc, out)
      assert.matches("^%d+%.%d+%.%d+\tuserdata\tfunction\n$", out)
    end)
  end

  it("leaves the un tool's modules to unlua: nothing else requires them", function()
    for _, f in ipairs(facade_files(false)) do
      local text = assert(io.open(f)):read("*a")
      assert.is_nil(text:find("require%s*%(?%s*[\"']unsandbox%.cli"), f .. " requires the CLI")
    end
  end)

  it("has no 5.4-only syntax outside cli/: no <close> variable, no // or bitwise operator", function()
    for _, f in ipairs(facade_files(false)) do
      for line in io.lines(f) do
        local code = line:gsub("%-%-.*$", ""):gsub('"[^"]*"', '""'):gsub("'[^']*'", "''")
        assert.is_nil(code:find("<close>", 1, true), f .. ": " .. line)
        assert.is_nil(code:find("//", 1, true), f .. ": " .. line)
        assert.is_nil(code:find("[^<]<<[^<]") or code:find(">>"), f .. ": " .. line)
      end
    end
  end)
end)
