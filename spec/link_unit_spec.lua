-- #unit specs of what each program links: every library named on a link
-- line of the Makefile (-lNAME) defines at least one symbol that the
-- program's own objects use, so no binary carries a library it does not
-- need (the linker's --as-needed would hide it from ldd, not from a build
-- on a system without it). Read from `make -n` and nm; needs `make all`.
-- One Lua: the subject is what the built programs link.
local ROOT = os.getenv("UNSANDBOX_ROOT") or "."

local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function run(cmd)
  local p = assert(io.popen("cd " .. sh_quote(ROOT) .. " && " .. cmd .. " 2>/dev/null"))
  local out = p:read("a")
  p:close()
  return out
end

local TARGETS = { "bin/unsandboxd", "bin/unsandboxd-agent", "bin/unlua", "lua/unsandbox/core.so" }

-- The link line make would run for target (nil when there is none).
local plan
local function link_line(target)
  plan = plan or run("make -n --always-make " .. table.concat(TARGETS, " "))
  for line in plan:gmatch("[^\n]+") do
    if line:find(" -o " .. target .. " ", 1, true) and not line:find(" -c ", 1, true) then return line end
  end
end

-- glibc's parts and the linker scripts that stand for them
local LIBC = { c = true, m = true, dl = true, pthread = true }

-- The libraries of a link line that none of its objects uses.
local function unused(line)
  local objs, wanted = {}, {}
  for w in line:gmatch("%S+") do
    if w:match("%.o$") or w:match("%.a$") then objs[#objs + 1] = sh_quote(w) end
  end
  for sym in run("nm -u " .. table.concat(objs, " ")):gmatch("U ([%w_@.]+)") do
    wanted[sym:gsub("@.*", "")] = true
  end
  local out = {}
  for name in line:gmatch("%-l([%w_.+-]+)") do
    if not LIBC[name] then
      local path = run("gcc -print-file-name=lib" .. name .. ".so"):gsub("%s+$", "")
      local used = false
      for sym in run("nm -D --defined-only " .. sh_quote(path)):gmatch("%x+ [TWDBRVi] ([%w_]+)") do
        if wanted[sym] then used = true break end
      end
      if not used then out[#out + 1] = name end
    end
  end
  return out
end

describe("the programs' link lines #unit", function()
  for _, target in ipairs(TARGETS) do
    it("name only libraries " .. target .. " uses", function()
      local line = link_line(target)
      assert.is_string(line, "no link line for " .. target)
      assert.same({}, unused(line), target .. " links libraries it does not use: " .. line:sub(1, 120))
    end)
  end

  it("find a library that is named but not used", function()
    local line = assert(link_line("bin/unsandboxd-agent"))
    assert.same({ "curl" }, unused(line .. " -lcurl"))
  end)
end)
