-- Every code block of README.md and of the guide (every .md file of
-- docs/guide/, found by listing the folder) runs as printed: a ```lua
-- block is one script under `unlua --local` (a local unsandboxd with both
-- APIs; no account, nothing from the caller's environment), a ```sh
-- block one `sh -e` script with bin/ on PATH, each in a fresh directory
-- that is also HOME. Nothing is added to a block: it creates the files
-- and keys it needs. A block that needs the real service, or only shows
-- option names, is marked (spec/helpers/docblocks.lua) and listed as
-- pending with its reason. The pages refer only to what the repository
-- holds, and the guide's index lists every page of its folder.
-- One Lua: the guide's blocks run under unlua and un, which embed 5.4.
local docblocks = require "spec.helpers.docblocks"
local fs = require "spec.helpers.fs"
local lua = require "spec.helpers.lua"
local proc = require "spec.helpers.proc"

local ROOT = io.popen("cd " .. fs.quote(os.getenv("UNSANDBOX_ROOT") or ".") .. " && pwd"):read("l")
local UNLUA = ROOT .. "/bin/unlua"

-- README.md and docs/guide/*.md, the index first
local function pages()
  local list = { "README.md" }
  local p = io.popen("cd " .. fs.quote(ROOT) .. " && ls docs/guide/*.md")
  for name in p:lines() do list[#list + 1] = name end
  p:close()
  return list
end

local BARE = { UNSANDBOX_URL = false, UNSANDBOX_PUBLIC_KEY = false, UNSANDBOX_SECRET_KEY = false,
  UNSANDBOX_ACCOUNT = false, SANDBOX_CONTROL_PLANE_URL = false, SANDBOX_TOKEN = false,
  SANDBOX_SESSION_ID = false, LUA_PATH = false, LUA_CPATH = false, LUA_INIT = false, UNSANDBOXD = false }

local function env_for(dir)
  local e = { HOME = dir, PATH = ROOT .. "/bin:" .. os.getenv("PATH") }
  for k, v in pairs(BARE) do e[k] = v end
  return e
end

describe("code blocks of a page #unit", function()
  it("are found with their lines, languages and markers", function()
    local b = docblocks.blocks("x\n```lua\nprint(1)\n```\n<!-- run: skip real service -->\n"
      .. "```sh\nls\n```\n```c\nint x;\n```\n```text\nout\n```\n")
    assert.equal(2, #b)
    assert.same({ line = 2, lang = "lua", code = "print(1)\n" }, b[1])
    assert.equal("real service", b[2].skip)
    assert.equal("sh", b[2].lang)
  end)

  it("refuses an unclosed block, a marker without a reason, a stray or unknown marker", function()
    assert.has_error(function() docblocks.blocks("```lua\nprint(1)\n") end, "line 1: a ```lua block is never closed")
    assert.has_error(function() docblocks.blocks("<!-- run: skip -->\n```lua\n```\n") end)
    assert.has_error(function() docblocks.blocks("<!-- run: prelude x -->\n```lua\n```\n") end)
    assert.has_error(function() docblocks.blocks("<!-- run: skip why -->\n\n```lua\n```\n") end)
    assert.has_error(function() docblocks.blocks("<!-- run: skip why -->\n") end)
    assert.has_error(function() docblocks.blocks("<!-- readme_spec: prelude local x = 1 -->\n```lua\n```\n") end)
  end)
end)

describe("the pages #unit", function()
  it("the guide's index links every page of docs/guide/", function()
    local index = assert(fs.read(ROOT .. "/docs/guide/README.md"))
    for _, page in ipairs(pages()) do
      local name = page:match("^docs/guide/(.+)$")
      if name and name ~= "README.md" then
        assert.is_truthy(index:find("](" .. name .. ")", 1, true), name .. " is not in docs/guide/README.md")
      end
    end
    assert.is_truthy(fs.read(ROOT .. "/README.md"):find("docs/guide/README.md", 1, true))
  end)

  it("refer only to files the repository holds, and to no issue or spec section", function()
    for _, page in ipairs(pages()) do
      local text = assert(fs.read(ROOT .. "/" .. page))
      local dir = page:match("^(.*)/[^/]*$") or "."
      for target in text:gmatch("%]%(([^)#%s]+)[^)]*%)") do
        if not target:match("^%a+://") and not target:match("^mailto:") then
          local path = ROOT .. "/" .. dir .. "/" .. target
          assert.is_true(lua.sh("test -e " .. fs.quote(path)),
            page .. " links to " .. target .. ", which is missing")
        end
      end
      for path in text:gmatch("`((%a+)/[%w_./-]+%.%a+)`") do
        local top = path:match("^(%a+)/")
        if ({ docs = 1, spec = 1, examples = 1, lua = 1, csrc = 1, bench = 1, scripts = 1 })[top] then
          assert.is_true(lua.sh("test -e " .. fs.quote(ROOT .. "/" .. path)),
            page .. " names " .. path .. ", which is missing")
        end
      end
      assert.is_nil(text:find("§", 1, true), page .. " cites a section of a document the repository does not hold")
      assert.is_nil(text:lower():match("issues? %d+"), page .. " cites an issue")
    end
  end)
end)

describe("the code blocks run as printed #integration", function()
  for _, page in ipairs(pages()) do
    local blocks = docblocks.blocks(assert(fs.read(ROOT .. "/" .. page)))
    for _, b in ipairs(blocks) do
      local name = page .. ":" .. b.line .. " (" .. b.lang .. ")"
      if b.skip then
        pending(name .. ": " .. b.skip)
      else
        it(name, function()
          local dir = fs.tmpdir("unsb-doc")
          finally(function() fs.rm_rf(dir) end)
          local cmd
          if b.lang == "lua" then
            fs.write(dir .. "/block.lua", b.code)
            cmd = proc.quote(UNLUA) .. " --local block.lua"
          else
            fs.write(dir .. "/block.sh", b.code)
            cmd = "sh -e block.sh"
          end
          local out, code = proc.run("sh -c " .. proc.quote("cd " .. proc.quote(dir) .. " && timeout 300 " .. cmd),
            env_for(dir))
          -- a block that started the user's lasting server leaves none behind
          proc.run(proc.quote(ROOT .. "/bin/un") .. " local stop", env_for(dir))
          assert.equal(0, code, b.code .. "\n----\n" .. out)
        end)
      end
    end
  end
end)
