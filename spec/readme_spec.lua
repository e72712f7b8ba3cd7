-- Every Lua code block of README.md runs, as a new user would run it, so a
-- README sample can never fail again: each block is one script under
-- `unlua --local` (a private unsandboxd with both APIs; no account, no
-- UNSANDBOX_* from the caller), in a fresh directory holding the files the
-- samples name, with `unsandbox` already required. A block that needs the
-- real service, or only illustrates option names, is marked in README.md
-- (spec/helpers/readme.lua) and listed here as pending with its reason.
local readme = require "spec.helpers.readme"
local fs = require "spec.helpers.fs"
local proc = require "spec.helpers.proc"

local ROOT = io.popen("cd " .. fs.quote(os.getenv("UNSANDBOX_ROOT") or ".") .. " && pwd"):read("*l")
local UNLUA = ROOT .. "/bin/unlua"

describe("README extraction #unit", function()
  it("finds blocks, their lines and markers", function()
    local b = readme.blocks("x\n```lua\nprint(1)\n```\n<!-- readme_spec: skip real service -->\n"
      .. "```lua\nlocal a\n```\n<!-- readme_spec: prelude local m = 1 -->\n```lua\nprint(m)\n```\n```sh\nls\n```\n")
    assert.equal(3, #b)
    assert.same({ line = 2, code = "print(1)\n" }, b[1])
    assert.equal("real service", b[2].skip)
    assert.equal("local m = 1", b[3].prelude)
    assert.equal(10, b[3].line)
  end)

  it("refuses an unclosed block, a marker without a reason, a stray marker", function()
    assert.has_error(function() readme.blocks("```lua\nprint(1)\n") end, "line 1: a ```lua block is never closed")
    assert.has_error(function() readme.blocks("<!-- readme_spec: skip -->\n```lua\n```\n") end)
    assert.has_error(function() readme.blocks("<!-- readme_spec: frobnicate x -->\n```lua\n```\n") end)
    assert.has_error(function() readme.blocks("<!-- readme_spec: skip why -->\n\n```lua\n```\n") end)
    assert.has_error(function() readme.blocks("<!-- readme_spec: skip why -->\n") end)
  end)
end)

describe("README.md code blocks #integration", function()
  local blocks = readme.blocks(fs.read(ROOT .. "/README.md"))
  local dir

  setup(function()
    dir = fs.tmpdir("unsb-readme")
    fs.write(dir .. "/data.csv", "name,n\nada,1\n")      -- the "Running code" sample's input
  end)
  teardown(function() fs.rm_rf(dir) end)

  it("has the samples it is meant to run", function()
    local run = 0
    for _, b in ipairs(blocks) do if not b.skip then run = run + 1 end end
    assert.is_true(#blocks >= 10 and run >= 8, #blocks .. " blocks, " .. run .. " run")
  end)

  for _, b in ipairs(blocks) do
    local name = "the block at README.md:" .. b.line
    if b.skip then
      pending(name .. " (" .. b.skip .. ")")
    else
      it(name .. " runs against a local backend", function()
        local script = dir .. "/block" .. b.line .. ".lua"
        fs.write(script, 'local unsandbox = require "unsandbox"\n' .. (b.prelude or "") .. "\n" .. b.code)
        local out, code = proc.run("sh -c " .. proc.quote("cd " .. proc.quote(dir) .. " && timeout 300 "
          .. proc.quote(UNLUA) .. " --local " .. proc.quote(script)), {
            HOME = dir, UNSANDBOX_URL = false, UNSANDBOX_PUBLIC_KEY = false, UNSANDBOX_SECRET_KEY = false,
            UNSANDBOX_ACCOUNT = false, SANDBOX_CONTROL_PLANE_URL = false, SANDBOX_TOKEN = false,
            LUA_PATH = false, LUA_CPATH = false, LUA_INIT = false })
        assert.equal(0, code, b.code .. "\n----\n" .. out)
      end)
    end
  end
end)
