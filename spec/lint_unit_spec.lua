-- #unit specs of the Lua lint: luacheck (Debian lua-check, installed by
-- scripts/deps.sh's test group) with the tree's one .luacheckrc finds no
-- warning in the library, the specs, the examples, the benchmarks and
-- the scripts, each checked against its own standard (the facade: any Lua
-- an engine embeds; specs: busted; scripts: the Lua 5.4 of unlua). No
-- build, no server.
-- One Lua: the subject is luacheck's report on the sources.
local ROOT = os.getenv("UNSANDBOX_ROOT") or "."

local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- luacheck's report of paths (from ROOT, with its config), and whether
-- it found nothing.
local function luacheck(args, input)
  local cmd = "cd " .. sh_quote(ROOT) .. " && luacheck --no-color --codes --formatter plain " .. args
  local tmp
  if input then
    tmp = os.tmpname()
    local f = assert(io.open(tmp, "w"))
    f:write(input)
    f:close()
    cmd = cmd .. " < " .. sh_quote(tmp)
  end
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("a")
  local ok = p:close()
  if tmp then os.remove(tmp) end
  return out, ok == true
end

describe("luacheck #unit", function()
  it("is installed (scripts/deps.sh test)", function()
    local out, ok = luacheck("--version")
    assert.is_true(ok, "luacheck is missing: " .. out)
  end)

  for _, tree in ipairs { "lua", "spec", "examples", "bench", "scripts" } do
    it("finds nothing in " .. tree .. "/", function()
      local out, ok = luacheck(tree)
      assert.is_true(ok and out == "", tree .. "/: luacheck found\n" .. out)
    end)
  end

  -- the configuration is read, and each tree has its own standard
  it("reports an accidental global and a Lua that the tree does not run", function()
    local out = luacheck("--filename spec/accidental_spec.lua -", "x = describe\n")
    assert.matches("W111", out)                  -- a spec's global: reported
    assert.is_nil(out:find("W113", 1, true))     -- busted's describe: known
    out = luacheck("--filename examples/accidental.lua -", "local d = describe\nprint(d)\n")
    assert.matches("W113", out)                  -- no busted in a script
    out = luacheck("--filename lua/unsandbox/accidental.lua -", "local u = unpack\nreturn u\n")
    assert.are.equal("", out)                    -- 5.1's unpack: the facade runs there
    out = luacheck("--filename examples/accidental.lua -", "local u = unpack\nprint(u)\n")
    assert.matches("W113", out)                  -- unlua is Lua 5.4
    out = luacheck("--filename spec/accidental_spec.lua -", "local x = 1\n" .. ("-"):rep(130) .. "\n")
    assert.matches("W211", out)
    assert.matches("W631", out)
  end)
end)
