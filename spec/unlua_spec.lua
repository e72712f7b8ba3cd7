-- bin/unlua as a process: the stock-lua conventions (options, arg, exit
-- statuses, messages), the built-in modules, `--local` (a private
-- unsandboxd that must never outlive unlua), and the embedding example.
-- One Lua: unlua embeds its own Lua 5.4; the spec runs it as a program.
local helper = require "spec.helpers.unsandboxd"
local fs = require "spec.helpers.fs"
local wait = require "spec.helpers.wait"
local lua = require "spec.helpers.lua"
local read, write = fs.read, fs.write

local q = helper.sh_quote
-- absolute, so that tests may run commands from other directories
local ROOT = io.popen("cd " .. q(os.getenv("UNSANDBOX_ROOT") or ".") .. " && pwd"):read("*l")
local UNLUA = ROOT .. "/bin/unlua"
local EMBED = ROOT .. "/examples/embed/embed_demo"

local tmp  -- a fresh directory per test



-- Runs a shell command line; returns its stdout+stderr and exit status.
local function sh(cmdline)
  local p = assert(io.popen("(" .. cmdline .. ") 2>&1; echo EXIT=$?"))
  local out = p:read("*a")
  p:close()
  local body, code = out:match("^(.*)EXIT=(%d+)\n?$")
  return body, tonumber(code)
end

-- unlua with arguments (already quoted where needed), no LUA_PATH/LUA_INIT
-- from the caller's environment.
local function unlua(args, env)
  return sh("env -u LUA_PATH -u LUA_PATH_5_4 -u LUA_INIT -u LUA_INIT_5_4 "
    .. (env or "") .. " " .. q(UNLUA) .. " " .. args)
end

local function script(text, name)
  return write(tmp .. "/" .. (name or "script.lua"), text)
end

-- A process is running if /proc has it and it is not a zombie.
local function running(pid)
  local status = read("/proc/" .. pid .. "/status")
  return status ~= nil and not status:match("\nState:%s*Z")
end

local function exists(path)
  return lua.sh("test -e " .. q(path))
end

-- The readiness signal of the SIGINT specs: the process is blocked in C
-- in one of the system calls named (its /proc/PID/syscall), so a SIGINT
-- sent now meets the core's interrupt path, not Lua code. Numbers of
-- x86_64 and aarch64.
local ARCH = io.popen("uname -m"):read("*l")
local SYSCALLS = {
  x86_64 = { sleep = { [35] = true, [230] = true }, poll = { [7] = true, [271] = true } },
  aarch64 = { sleep = { [101] = true, [115] = true }, poll = { [73] = true } },
}
local function blocked_in(pid, kind)
  local nr = tonumber((read("/proc/" .. pid .. "/syscall") or ""):match("^(%d+)"))
  local set = (SYSCALLS[ARCH] or {})[kind]
  return nr ~= nil and set ~= nil and set[nr] == true
end

-- Starts `path` under unlua (extra: options before it) in the background;
-- returns its pid and the files of its output and exit status.
local function background(path, extra)
  local out, status = tmp .. "/out", tmp .. "/status"
  os.execute(string.format("(%s %s %s >%s 2>&1 & echo $! >%s/pid; wait $!; echo $? >%s) "
    .. ">/dev/null 2>&1 &", q(UNLUA), extra or "", q(path), q(out), q(tmp), q(status)))
  assert.is_truthy(wait.eventually(function() return (read(tmp .. "/pid") or ""):match("%d") end, 10))
  return assert(tonumber(read(tmp .. "/pid"))), out, status
end

-- SIGINT once pid is blocked in `kind`, then the exit status. The wait
-- for the exit is bounded far below what the blocked call would take on
-- its own (minutes), so only the interrupt path can end it in time.
local function interrupt_when_blocked(pid, status, kind)
  assert.is_truthy(wait.eventually(function() return blocked_in(pid, kind) end, 30),
    "never blocked in " .. kind .. " (" .. tostring(read("/proc/" .. pid .. "/syscall")) .. ")")
  os.execute("kill -INT " .. pid)
  assert.is_truthy(wait.eventually(function() return (read(status) or "") ~= "" end, 60), "still running")
  return read(status)
end

-- The script reports the server's pid and data directory, which unlua
-- exports to it / passes on the server's command line.
local REPORT = [[
  local pid = os.getenv("UNSANDBOXD_PID")
  local cmd = io.open("/proc/" .. pid .. "/cmdline"):read("*a")
  print("PID=" .. pid)
  print("DATA=" .. cmd:match("%-%-data%z([^%z]+)"))
  print("URL=" .. os.getenv("UNSANDBOX_URL"), "LOCAL=" .. tostring(os.getenv("UNSANDBOX_LOCAL")))
  io.stdout:flush()
]]

local function check_gone(out)
  local pid = assert(out:match("PID=(%d+)"), out)
  local data = assert(out:match("DATA=(%S+)"), out)
  assert.is_false(running(pid), "unsandboxd " .. pid .. " is still running")
  assert.is_false(exists(data), data .. " was not removed")
  assert.is_false(exists(data:match("^(.*)/[^/]+$")), "temp dir was not removed")
end

before_each(function() tmp = helper.tmpdir("unlua-spec") end)
after_each(function() helper.rm_rf(tmp) end)

describe("unlua #unit", function()
  describe("options", function()
    it("-v prints the unlua and Lua versions", function()
      local out, code = unlua("-v")
      assert.equal(0, code)
      assert.matches("^unlua %S+ %(unsandbox for Lua%)%s+Lua 5%.4", out)
    end)

    it("-e runs statements in order", function()
      local out, code = unlua("-e 'x = 20' -e 'print(x + 22)'")
      assert.equal(0, code)
      assert.equal("42\n", out)
    end)

    it("-l mod sets the global mod, -l g=mod the global g", function()
      local out, code = unlua("-l cjson -l J=cjson -e 'print(cjson == J, J.encode({1}))'")
      assert.equal(0, code)
      assert.equal("true\t[1]\n", out)
    end)

    it("-l of an unknown module fails with require's message", function()
      local out, code = unlua("-l no_such_module_x")
      assert.equal(1, code)
      assert.matches("^unlua: module 'no_such_module_x' not found", out)
    end)

    it("rejects unknown options and missing arguments with the usage", function()
      local out, code = unlua("-x")
      assert.equal(1, code)
      assert.matches("unlua: unrecognized option '%-x'", out)
      assert.matches("usage: unlua %[options%] %[script %[args%]%]", out)
      assert.matches("%-%-local", out)
      out, code = unlua("-e")
      assert.equal(1, code)
      assert.matches("unlua: '%-e' needs argument", out)
    end)

    it("-W turns warnings on", function()
      local out = unlua("-W -e 'warn(\"careful\")'")
      assert.matches("Lua warning: careful", out)
      out = unlua("-e 'warn(\"careful\")'")
      assert.equal("", out)
    end)
  end)

  describe("arg and ...", function()
    it("puts the script at 0, its arguments above, the interpreter below", function()
      local s = script([[
        print(arg[-2] == ]] .. string.format("%q", UNLUA) .. [[, arg[-1], arg[0], arg[1], arg[2], #arg)
        print(...)
      ]])
      local out, code = unlua("-W " .. q(s) .. " a 'b c'")
      assert.equal(0, code)
      assert.equal("true\t-W\t" .. s .. "\ta\tb c\t2\na\tb c\n", out)
    end)

    it("'-' runs stdin with the arguments after it", function()
      local out, code = sh("echo 'print(arg[0], ...)' | env -u LUA_INIT "
        .. q(UNLUA) .. " - x y")
      assert.equal(0, code)
      assert.equal("-\tx\ty\n", out)
    end)

    it("runs stdin when it is not a terminal and there is no script", function()
      local out, code = sh("echo 'print(6 * 7)' | " .. q(UNLUA))
      assert.equal(0, code)
      assert.equal("42\n", out)
    end)

    it("'--' stops option handling", function()
      script("print(arg[0], ...)", "-e")  -- a script named like an option
      local out, code = sh("cd " .. q(tmp) .. " && " .. q(UNLUA) .. " -- -e -v")
      assert.equal(0, code)
      assert.equal("-e\t-v\n", out)
    end)
  end)

  describe("errors", function()
    it("reports 'unlua: message' with a traceback and exits 1", function()
      local s = script("local function f() error('boom') end\nf()\n")
      local out, code = unlua(q(s))
      assert.equal(1, code)
      assert.matches("^unlua: " .. s:gsub("%p", "%%%0") .. ":1: boom\nstack traceback:\n", out)
      assert.matches("in main chunk", out)
    end)

    it("describes error objects that are not strings", function()
      local out, code = unlua("-e 'error({})'")
      assert.equal(1, code)
      assert.matches("^unlua: %(error object is a table value%)", out)
      out = unlua("-e 'error(setmetatable({}, {__tostring = function() return \"custom\" end}))'")
      -- unlike lua.c, with the position and a traceback (assert(call()) must
      -- say which call failed)
      assert.matches("^unlua: %(command line%):1: custom\nstack traceback:\n", out)
    end)

    it("reports syntax errors with the file name", function()
      local s = script("x = = 1\n")
      local out, code = unlua(q(s))
      assert.equal(1, code)
      assert.matches("^unlua: " .. s:gsub("%p", "%%%0") .. ":1: unexpected symbol near '='", out)
    end)

    it("reports a missing script", function()
      local out, code = unlua(q(tmp .. "/nope.lua"))
      assert.equal(1, code)
      assert.matches("^unlua: cannot open " .. tmp:gsub("%p", "%%%0") .. "/nope%.lua", out)
    end)
  end)

  describe("os.exit", function()
    for _, case in ipairs {
      { "os.exit(3)", 3 }, { "os.exit(true)", 0 }, { "os.exit(false)", 1 },
      { "os.exit(5, true)", 5 }, { "return 9", 0 },
    } do
      it(case[1] .. " exits with " .. case[2], function()
        local _, code = unlua("-e " .. q(case[1]))
        assert.equal(case[2], code)
      end)
    end
  end)

  describe("environment", function()
    it("preloads unsandbox.core and cjson without any C path", function()
      local out, code = unlua("-e " .. q([[
        print(type(package.preload["unsandbox.core"]), type(package.preload.cjson))
        print(type(require("unsandbox.core").sign), require("cjson").encode({a = 1}))
        print(require("cjson.safe").decode("x"))
      ]]), "LUA_CPATH_5_4=/nonexistent/?.so")
      assert.equal(0, code)
      assert.equal("function\tfunction\nfunction\t{\"a\":1}\nnil\t"
        .. "Expected value but found invalid token at character 1\n", out)
    end)

    it("finds the Lua facade next to the executable, without LUA_PATH", function()
      local out, code = sh("cd / && env -u LUA_PATH -u LUA_PATH_5_4 " .. q(UNLUA)
        .. " -e 'print(package.searchpath(\"unsandbox\", package.path))'")
      assert.equal(0, code)
      assert.matches("/lua/unsandbox/init%.lua\n$", out)
      local real = io.popen("realpath " .. q(ROOT .. "/lua/unsandbox/init.lua")):read("*l")
      assert.equal(real .. "\n", out)
    end)

    it("keeps LUA_PATH semantics after its own directories, and -E ignores it", function()
      local out = unlua("-e 'print(package.path)'", "LUA_PATH_5_4='/x/?.lua;;'")
      assert.matches("^[^;]*/lua/%?%.lua;[^;]*/lua/%?/init%.lua;/x/%?%.lua;", out)
      assert.matches("/usr/share/lua/5%.4/%?%.lua", out)  -- ";;" = the default
      out = unlua("-E -e 'print(package.path)'", "LUA_PATH_5_4='/x/?.lua;;'")
      assert.not_matches("/x/", out)
    end)

    it("runs LUA_INIT first, unless -E", function()
      local out = unlua("-e 'print(greeting)'", "LUA_INIT='greeting=\"hi\"'")
      assert.equal("hi\n", out)
      out = unlua("-E -e 'print(greeting)'", "LUA_INIT='greeting=\"hi\"'")
      assert.equal("nil\n", out)
    end)

    -- which of the network libraries this process has mapped, as "curl crypto"
    local MAPS = [[
      local function has(lib)
        local f = assert(io.open("/proc/self/maps"))
        local m = f:read("*a"); f:close()
        return m:find(lib, 1, true) and lib or "-"
      end
      local function libs() return has("libcurl") .. " " .. has("libcrypto") end
    ]]

    it("runs with no network library loaded until a client is made", function()
      local out, code = unlua("-e " .. q(MAPS .. [[
        print(1, libs())
        local u = require "unsandbox"
        print("required", libs())
        print(#u.sign("k", "1", "GET", "/", ""), libs())
        local c = u.client { url = "http://127.0.0.1:1", public_key = "p", secret_key = "s" }
        print("client", libs())
        c:close()
      ]]))
      assert.equal(0, code, out)
      assert.equal("1\t- -\nrequired\t- -\n64\t- libcrypto\nclient\tlibcurl libcrypto\n", out)
    end)

    it("keeps stock lua5.4's require of the module free of libcurl too", function()
      local out, code = sh("env LUA_PATH=" .. q(ROOT .. "/lua/?.lua;" .. ROOT .. "/lua/?/init.lua;;")
        .. " LUA_CPATH=" .. q(ROOT .. "/lua/?.so;;") .. " lua5.4 -e "
        .. q(MAPS .. "require 'unsandbox'; print(libs())"))
      assert.equal(0, code, out)
      assert.equal("- -\n", out)
    end)

    it("loads the Control Plane half on first use of one of its names", function()
      local out, code = unlua("-e " .. q([[
        local u = require "unsandbox"
        print(package.loaded["unsandbox.cp"] ~= nil, package.loaded["unsandbox.cp.sandbox"] ~= nil)
        print(type(u.manager), type(u.Sandbox), #u.new_trace_id(), u.no_such_name)
        print(package.loaded["unsandbox.cp"] ~= nil, rawget(u, "manager") ~= nil)
      ]]))
      assert.equal(0, code, out)
      assert.equal("false\tfalse\nfunction\ttable\t32\tnil\ntrue\ttrue\n", out)
    end)

    it("loads the tasks, batch and the rest of the routes on first use of one of their names", function()
      local out, code = unlua("-e " .. q([[
        local u = require "unsandbox"
        local function loaded()
          return tostring(package.loaded["unsandbox.tasks"] ~= nil) .. " "
            .. tostring(package.loaded["unsandbox.exec.batch"] ~= nil) .. " "
            .. tostring(package.loaded["unsandbox.exec.sessions"] ~= nil)
        end
        print(loaded())
        local c = u.client { public_key = "unsb-pk-a", secret_key = "s", url = "http://127.0.0.1:9" }
        print(type(c.freeze_session), loaded())
        print(type(u.map), type(c.map), loaded())
        print(type(u.spawn), loaded(), c.no_such_method, u.no_such_name)
        -- a lazily loaded method refuses bad input like any other
        print(pcall(c.freeze_session, c, 42))
      ]]))
      assert.equal(0, code, out)
      local lines = {}
      for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
      assert.equal("false false false", lines[1])
      assert.equal("function\tfalse false true", lines[2])
      assert.equal("function\tfunction\ttrue true true", lines[3])
      assert.equal("function\ttrue true true\tnil\tnil", lines[4])
      assert.matches("^false\t.*freeze_session", lines[5])
    end)

    it("copied anywhere, still has the core and the facade built in", function()
      local copy = tmp .. "/bin"
      assert(lua.sh("mkdir -p " .. q(copy) .. " && cp " .. q(UNLUA) .. " " .. q(copy)))
      local out, code = sh("cd / && env -u LUA_PATH -u LUA_PATH_5_4 LUA_CPATH_5_4=/nonexistent/?.so "
        .. q(copy .. "/unlua") .. " -e " .. q([[
          local u = require "unsandbox"
          print(u.detect_language("a.py"), debug.getinfo(u.client, "S").source)
          print(pcall(function() local c = u.client { url = "ftp://x" }; return c end))]]))
      assert.equal(0, code, out)
      assert.matches("^python\t=%[unlua%]/unsandbox/init%.lua\n", out)
      -- misuse still points at the caller's line, not into the built-in files
      assert.matches("\nfalse\t%(command line%):3: bad argument 'opts' to 'client'", out)
    end)

    it("prefers the facade on disk to the built-in one", function()
      local out, code = unlua("-e " .. q('print(debug.getinfo(require("unsandbox").client, "S").source)'))
      assert.equal(0, code, out)
      assert.matches("^@.*/lua/unsandbox/init%.lua\n$", out)
    end)
  end)

  describe("-i (REPL)", function()
    it("prints expression values, '=expr' and multi-line statements", function()
      local out, code = sh("printf 'x = 5\\nx * 2\\n=x + 1\\nfor i = 1, 2 do\\nprint(i)\\nend\\n"
        .. "error(\"oops\")\\nprint(\"after\")\\n' | " .. q(UNLUA) .. " -i")
      assert.equal(0, code)
      assert.matches("> 10\n", out)
      assert.matches("> 6\n", out)
      assert.matches(">> >> 1\n2\n", out)
      assert.matches("stdin:1: oops", out)
      assert.matches("after\n", out)
    end)

    it("edits lines and recalls history on a terminal", function()
      -- script(1) gives unlua a pseudo-terminal; "print(2)", Left, "1"
      -- makes print(21) only with line editing, and Up recalls it
      local out = sh("(printf 'print(2)\\033[D1\\n\\033[A\\n'; sleep 1) | timeout 20 script -qec "
        .. q(q(UNLUA) .. " -i") .. " /dev/null")
      local _, n = out:gsub("%D21\r?\n", "")
      assert.equal(2, n, out)
      assert.not_matches("syntax error", out)
    end)
  end)

  describe("SIGINT", function()
    it("stops a script blocked in core.sleep with 'interrupted!'", function()
      local s = script([[
        require("unsandbox.core").sleep(600000)
        print("NOT INTERRUPTED")
      ]])
      local pid, out, status = background(s)
      assert.equal("1\n", interrupt_when_blocked(pid, status, "sleep"))
      assert.matches("unlua: .*interrupted!", read(out))
      assert.not_matches("NOT INTERRUPTED", read(out))
    end)
  end)

  describe("--local with a stand-in server", function()
    it("says what is missing when UNSANDBOXD is not executable", function()
      local out, code = unlua("--local -e 'print(1)'", "UNSANDBOXD=/nonexistent/unsandboxd")
      assert.equal(1, code)
      assert.matches("unlua: UNSANDBOXD=/nonexistent/unsandboxd is not an executable file", out)
    end)

    it("names how to get unsandboxd when there is none (a LuaRocks install has none)", function()
      -- an unlua with no unsandboxd next to it, nor on PATH
      local copy = tmp .. "/unlua"
      os.execute("cp " .. q(UNLUA) .. " " .. q(copy))
      local out, code = sh("env -u UNSANDBOXD HOME=" .. q(tmp) .. " PATH=/usr/bin:/bin " .. q(copy)
        .. " --local -e 'print(1)'")
      assert.equal(1, code, out)
      assert.matches("unlua: %-%-local needs unsandboxd, which was not found", out)
      assert.matches("the LuaRocks package has no unsandboxd", out)
      assert.matches("build it with `make`", out)
    end)

    it("shows the server's log and cleans up when it exits at start", function()
      local fake = write(tmp .. "/fake", "#!/bin/sh\necho \"cannot bind: $*\" >&2\nexit 3\n")
      os.execute("chmod +x " .. q(fake))
      local out, code = unlua("--local -e 'print(\"ran\")'",
        "UNSANDBOXD=" .. q(fake) .. " TMPDIR=" .. q(tmp))
      assert.equal(1, code)
      assert.matches("did not start: it exited before announcing its URL", out)
      assert.matches("| cannot bind: %-%-listen 127%.0%.0%.1:0 %-%-data ", out)
      assert.not_matches("ran", out)
      assert.equal("", io.popen("ls " .. q(tmp) .. " | grep unlua-local"):read("*a"))
    end)

    it("exports the announced settings and stops the server on os.exit", function()
      local fake = write(tmp .. "/fake", [[#!/bin/sh
echo "UNSANDBOX_URL=http://127.0.0.1:9"
echo "UNSANDBOX_PUBLIC_KEY=pk-fake"
echo "UNSANDBOX_SECRET_KEY=sk-fake"
while :; do sleep 1; done
]])
      os.execute("chmod +x " .. q(fake))
      local s = script(REPORT .. "print(os.getenv('UNSANDBOX_PUBLIC_KEY')); os.exit(4)\n")
      local out, code = unlua("--local " .. q(s), "UNSANDBOXD=" .. q(fake))
      assert.equal(4, code, out)
      assert.matches("URL=http://127%.0%.0%.1:9\tLOCAL=1\npk%-fake\n", out)
      check_gone(out)
    end)
  end)
end)

describe("unlua --local #integration", function()
  it("runs the script against a private server and stops it", function()
    local s = script(REPORT .. [[
      local unsandbox = require "unsandbox"
      local r = assert(unsandbox.execute_code("python", "print(6*7)"))
      io.write("STDOUT=", r.stdout)
    ]])
    local out, code = unlua("--local " .. q(s))
    assert.equal(0, code, out)
    assert.matches("URL=http://127%.0%.0%.1:%d+\tLOCAL=1", out)
    assert.matches("STDOUT=42\n", out)
    check_gone(out)
  end)

  it("stops the server after a script error", function()
    local s = script(REPORT .. "error('script failed')\n")
    local out, code = unlua("--local " .. q(s))
    assert.equal(1, code)
    assert.matches("unlua: .*script failed\nstack traceback:", out)
    check_gone(out)
  end)

  it("passes os.exit codes through and still stops the server", function()
    local s = script(REPORT .. "os.exit(tonumber(arg[1]))\n")
    local out, code = unlua("--local " .. q(s) .. " 7")
    assert.equal(7, code)
    check_gone(out)
    out, code = unlua("--local -e " .. q(REPORT .. "os.exit(true, true)"))
    assert.equal(0, code)
    check_gone(out)
  end)

  it("stops the server when unlua is interrupted with SIGINT", function()
    local s = script(REPORT .. [[
      print("READY"); io.stdout:flush()
      require("unsandbox.core").sleep(600000)
      print("NOT INTERRUPTED")
    ]])
    local pid, out, status = background(s, "--local")
    assert.is_truthy(wait.eventually(function() return (read(out) or ""):match("READY") end, 30), read(out))
    local server = assert(read(out):match("PID=(%d+)"))
    assert.is_true(running(server))
    assert.not_equal("0\n", interrupt_when_blocked(pid, status, "sleep"))
    assert.matches("interrupted!", read(out))
    assert.not_matches("NOT INTERRUPTED", read(out))
    check_gone(read(out))
  end)
end)

describe("unlua with a running unsandboxd #integration", function()
  local srv
  before_each(function() srv = helper.start() end)
  after_each(function() if srv then srv.stop() end end)

  local function server_env()
    return "UNSANDBOX_URL=" .. q(srv.url) .. " UNSANDBOX_PUBLIC_KEY=" .. q(srv.public_key)
      .. " UNSANDBOX_SECRET_KEY=" .. q(srv.secret_key)
  end

  it("uses the ordinary configuration from the environment", function()
    local out, code = unlua("-e " .. q([[
      local r = assert(require("unsandbox").execute_code("python", "print(6*7)"))
      io.write(r.stdout)
    ]]), server_env())
    assert.equal(0, code, out)
    assert.equal("42\n", out)
  end)

  it("examples/embed/embed_demo builds and runs code through the library", function()
    local out, code = sh("cd " .. q(ROOT) .. " && make --no-print-directory -s examples/embed/embed_demo")
    assert.equal(0, code, out)
    out, code = sh("cd " .. q(ROOT) .. " && env " .. server_env() .. " " .. q(EMBED) .. " lua")
    assert.equal(0, code, out)
    assert.equal("x.py is python\npython printed: 42\n", out)
  end)
end)

describe("unlua interrupted while waiting on the network #integration", function()
  local srv
  setup(function() srv = helper.start { args = { "--enable-faults" } } end)
  teardown(function() if srv then srv.stop() end end)

  -- Starts `body` under unlua with a client `c`, waits until it prints
  -- READY and then blocks in `kind`, sends SIGINT; returns output, status.
  local function interrupt(body, kind)
    local s = script(string.format([[
      local u = require "unsandbox"
      local c = u.client { url = %q, public_key = %q, secret_key = %q, timeout = 900 }
      %s]], srv.url, srv.public_key, srv.secret_key, body))
    local pid, out, status = background(s)
    assert.is_truthy(wait.eventually(function() return (read(out) or ""):match("READY") end, 30), read(out))
    local st = interrupt_when_blocked(pid, status, kind)
    return read(out), st
  end

  it("stops a script blocked in a slow HTTP reply", function()
    -- the reply would take ten minutes
    local out, status = interrupt([[
      assert(c:call("POST", "/_faults", { mode = "latency", ms = 600000, count = 1, path = "/execute" }))
      print("READY"); io.stdout:flush()
      print(c:execute_code("bash", "echo NOT INTERRUPTED"))]], "poll")
    assert.equal("1\n", status)
    assert.matches("interrupted", out)
    assert.not_matches("NOT INTERRUPTED", out)
  end)

  it("stops a script waiting for a job", function()
    local out, status = interrupt([[
      local id = assert(c:execute_async("bash", "sleep 600; echo NOT INTERRUPTED", { ttl = 900 }))
      print("READY"); io.stdout:flush()
      print(c:wait_for_job(id, { timeout = 900 }))]], "sleep")
    assert.equal("1\n", status)
    assert.matches("interrupted", out)
    assert.not_matches("NOT INTERRUPTED", out)
  end)

  it("cancels the job execute_code started, and names no file of the library", function()
    local out, status = interrupt([[
      local said
      print(c:execute_code("bash", "sleep 600; echo NOT INTERRUPTED", { ttl = 900, on_poll = function(job)
        if not said then print("JOB=" .. job.job_id); print("READY"); io.stdout:flush(); said = true end
      end }))]], "sleep")
    assert.equal("1\n", status)
    local id = assert(out:match("JOB=(%S+)"), out)
    -- the Error every interruption is, raised at the script's line, naming
    -- the job it cancelled
    assert.matches("unlua: [^\n]*script%.lua:%d+: unsandbox: interrupted: [^\n]*" .. id, out)
    assert.not_matches("unsandbox/[%w_]+%.lua", out:match("^(.-)stack traceback") or out)
    local c = require("unsandbox").client(srv.client_opts())
    local job = assert(c:get_job(id))
    c:close()
    assert.equal("cancelled", job.status)
  end)

  -- Ctrl-C caught by the script itself: what it gets is an unsandbox.Error
  -- whichever call was running.
  local function caught(call, kind)
    local out, status = interrupt(string.format([[
      local m = u.manager { url = %q, token = %q, env = {} }
      local ok, err = pcall(function() %s end)
      print("ERROR", ok, u.Error.is(err), err.kind, err.job_id, err.cancelled)]],
      srv.cp_url, srv.token, call), kind)
    assert.equal("0\n", status)
    return out
  end

  it("gives execute_code's caller an Error naming the job it cancelled", function()
    local out = caught([[
      local said
      return c:execute_code("bash", "sleep 600", { ttl = 900, on_poll = function(job)
        if not said then print("JOB=" .. job.job_id); print("READY"); io.stdout:flush(); said = true end
      end })]], "sleep")
    local id = assert(out:match("JOB=(%S+)"), out)
    assert.matches("ERROR\tfalse\ttrue\tinterrupted\t" .. id .. "\ttrue\n", out)
  end)

  it("gives a Manager call's caller an Error of kind interrupted", function()
    local out = caught([[
      assert(m:ensure_runtime("ctrl-c"))
      print("READY"); io.stdout:flush()
      return m:shell("sleep 600", 30, "ctrl-c")]], "poll")
    assert.matches("ERROR\tfalse\ttrue\tinterrupted\tnil\tnil\n", out)
  end)
end)

describe("examples/embed/embed_demo #unit", function()
  it("detects a language without a server", function()
    local out, code = sh("cd " .. q(ROOT) .. " && make --no-print-directory -s examples/embed/embed_demo"
      .. " && env -u UNSANDBOX_URL " .. q(EMBED) .. " " .. q(ROOT .. "/lua"))
    assert.equal(0, code, out)
    assert.matches("^x%.py is python\n", out)
  end)
end)
