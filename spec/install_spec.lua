-- #integration specs of `make install`: a PREFIX install works from
-- anywhere with no LUA_PATH (unlua, un --local, stock lua5.4 with the
-- prefix on its paths, a C host built with pkg-config), and DESTDIR stages
-- the same tree without changing what it records (the .pc file's prefix).
-- One Lua: the installed tree is used by lua5.4 and unlua, run as programs.
local fs = require "spec.helpers.fs"
local proc = require "spec.helpers.proc"

local ROOT = io.popen("cd " .. fs.quote(os.getenv("UNSANDBOX_ROOT") or ".") .. " && pwd"):read("*l")

describe("make install #integration", function()
  local dir

  setup(function() dir = fs.tmpdir("unsb-install") end)
  teardown(function() fs.rm_rf(dir) end)

  local function make(args)
    return proc.run("make -s --no-print-directory -C " .. proc.quote(ROOT) .. " install " .. args)
  end

  -- no paths from the caller, and nothing of the checkout reachable
  local BARE = { LUA_PATH = false, LUA_CPATH = false, LUA_INIT = false, UNSANDBOX_URL = false,
                 UNSANDBOX_PUBLIC_KEY = false, UNSANDBOX_SECRET_KEY = false }
  local function bare(extra)
    local e = {}
    for k, v in pairs(BARE) do e[k] = v end
    for k, v in pairs(extra or {}) do e[k] = v end
    return e
  end

  it("PREFIX: programs, module, man pages and a C host's files, all usable", function()
    local prefix = dir .. "/prefix"
    local out, code = make("PREFIX=" .. proc.quote(prefix))
    assert.equal(0, code, out)
    for _, f in ipairs { "bin/unlua", "bin/un", "bin/unsandboxd", "bin/unsandboxd-agent",
        "share/lua/5.4/unsandbox/init.lua", "share/lua/5.4/unsandbox/cli/init.lua",
        "lib/lua/5.4/unsandbox/core.so", "lib/libunsandbox.a", "lib/pkgconfig/unsandbox.pc",
        "include/unsandbox.h", "share/man/man1/un.1", "share/man/man1/unlua.1",
        "share/man/man1/unsandboxd.1" } do
      assert.is_truthy(fs.read(prefix .. "/" .. f), f .. " not installed")
    end
    out, code = proc.run("sh -c " .. proc.quote("cd / && " .. proc.quote(prefix .. "/bin/unlua")
      .. " -e 'print(package.searchpath(\"unsandbox\", package.path))'"), bare())
    assert.equal(0, code, out)
    assert.equal(prefix .. "/share/lua/5.4/unsandbox/init.lua\n", out)
    out, code = proc.run("sh -c " .. proc.quote("cd / && " .. proc.quote(prefix .. "/bin/un")
      .. " --local -s bash 'echo installed'"),
      bare { HOME = dir })
    assert.equal(0, code, out)
    assert.equal("installed\n", out)
    out, code = proc.run("sh -c "
      .. proc.quote("cd / && lua5.4 -e 'print(require(\"unsandbox\").detect_language(\"a.rs\"))'"),
      bare { LUA_PATH = prefix .. "/share/lua/5.4/?.lua;" .. prefix .. "/share/lua/5.4/?/init.lua;;",
             LUA_CPATH = prefix .. "/lib/lua/5.4/?.so;;" })
    assert.equal(0, code, out)
    assert.equal("rust\n", out)
    -- a C host, compiled and linked with exactly the README's command
    local flags
    flags, code = proc.run("pkg-config --cflags --libs unsandbox", { PKG_CONFIG_PATH = prefix .. "/lib/pkgconfig" })
    assert.equal(0, code, flags)
    assert.matches("%-I" .. prefix:gsub("%p", "%%%0") .. "/include", flags)
    local readme = assert(fs.read(ROOT .. "/README.md"))
    local command = assert(readme:match("`(cc host%.c %$%(pkg%-config [^`]*%))`"), "the README's cc command")
    local exe = dir .. "/host"
    fs.write(dir .. "/host.c", assert(fs.read(ROOT .. "/examples/embed/embed_demo.c")))
    -- under make sanitize (make coverage) the installed library is
    -- instrumented: the host links the sanitizers' (gcov's) runtimes too
    -- (leaks of the Lua library it embeds are not judged, as for the
    -- specs' other processes)
    local extra = os.getenv("UNSB_SANITIZE") and " -fsanitize=address,undefined"
      or os.getenv("UNSB_COVERAGE") and " --coverage" or ""
    out, code = proc.run("sh -c " .. proc.quote("cd " .. proc.quote(dir) .. " && " .. command .. " -o host" .. extra),
      { PKG_CONFIG_PATH = prefix .. "/lib/pkgconfig" })
    assert.equal(0, code, out)
    out, code = proc.run(proc.quote(exe) .. " " .. proc.quote(prefix .. "/share/lua/5.4"),
      bare(os.getenv("UNSB_SANITIZE") and { ASAN_OPTIONS = "detect_leaks=0" } or nil))
    assert.equal(0, code, out)
    assert.matches("^x%.py is python\n", out)
  end)

  it("DESTDIR stages the tree; the .pc file records PREFIX, not the stage", function()
    local stage = dir .. "/stage"
    local out, code = make("PREFIX=/opt/unsb DESTDIR=" .. proc.quote(stage))
    assert.equal(0, code, out)
    local pc = assert(fs.read(stage .. "/opt/unsb/lib/pkgconfig/unsandbox.pc"))
    assert.matches("\nlibdir=/opt/unsb/lib\n", "\n" .. pc)
    assert.not_matches(stage, pc, 1, true)
    assert.is_truthy(fs.read(stage .. "/opt/unsb/bin/unlua"))
    assert.is_truthy(fs.read(stage .. "/opt/unsb/share/lua/5.4/unsandbox/init.lua"))
  end)

  it("installs the facade precompiled, with its line information; PRECOMPILE=0 installs the sources", function()
    local lua_env = function(prefix)
      return bare { LUA_PATH = prefix .. "/share/lua/5.4/?.lua;" .. prefix .. "/share/lua/5.4/?/init.lua;;",
                    LUA_CPATH = prefix .. "/lib/lua/5.4/?.so;;" }
    end
    -- a misuse raised from inside the facade, with a traceback
    local probe = "sh -c " .. proc.quote("cd / && lua5.4 -e " .. proc.quote([[
      local u = require "unsandbox"
      print(select(2, xpcall(u.client, debug.traceback, { timeout = "x" })))]]))
    local sources = {}
    for _, form in ipairs { "bytecode", "source" } do
      local prefix = dir .. "/" .. form
      local out, code = make("PREFIX=" .. proc.quote(prefix) .. (form == "source" and " PRECOMPILE=0" or ""))
      assert.equal(0, code, out)
      for _, m in ipairs { "init", "transport", "tasks", "cli/init" } do
        local head = assert(fs.read(prefix .. "/share/lua/5.4/unsandbox/" .. m .. ".lua")):sub(1, 4)
        assert.equal(form == "bytecode", head == "\27Lua", m .. ".lua installed as " .. form)
      end
      out, code = proc.run(probe, lua_env(prefix))
      assert.equal(0, code, out)
      assert.matches("bad argument 'timeout' to 'client'", out, 1, true)
      -- the traceback names the facade's file and line in both forms
      sources[form] = out:match("unsandbox/init%.lua:(%d+):")
      assert.is_truthy(sources[form], out)
    end
    assert.equal(sources.source, sources.bytecode)
  end)
end)
