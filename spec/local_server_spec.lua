-- The local server that stays up: `un local start|status|env|stop` runs
-- one unsandboxd per user under ~/.unsandbox/local (loopback only, its
-- env file 0600), `un --local` and `unlua --local` use it while it runs
-- (so a session made by one command is there for the next), and
-- `unsandboxd --env-file FILE` is what makes the README's background
-- recipe work.
local fs = require "spec.helpers.fs"
local lua = require "spec.helpers.lua"
local proc = require "spec.helpers.proc"

local ROOT = io.popen("cd " .. fs.quote(os.getenv("UNSANDBOX_ROOT") or ".") .. " && pwd"):read("l")
local UN, UNLUA, UNSANDBOXD = ROOT .. "/bin/un", ROOT .. "/bin/unlua", ROOT .. "/bin/unsandboxd"

-- no credentials or URLs from the caller
local function bare(home)
  return { HOME = home, UNSANDBOX_URL = false, UNSANDBOX_PUBLIC_KEY = false, UNSANDBOX_SECRET_KEY = false,
           SANDBOX_CONTROL_PLANE_URL = false, SANDBOX_TOKEN = false, UNSANDBOX_ACCOUNT = false }
end

local function mode_of(path)
  return io.popen("stat -c %a " .. fs.quote(path)):read("l")
end

-- the process's listening sockets' local addresses (ss), by pid
local function listening(pid)
  local out = io.popen("ss -Hltnp 2>/dev/null"):read("a")
  local addrs = {}
  for line in out:gmatch("[^\n]+") do
    if line:find("pid=" .. pid .. ",", 1, true) then addrs[#addrs + 1] = line:match("^%S+%s+%S+%s+%S+%s+(%S+)") end
  end
  return addrs
end

describe("un local #integration", function()
  local home

  setup(function() home = fs.tmpdir("unsb-localsrv") end)
  teardown(function()
    proc.run(proc.quote(UN) .. " local stop", bare(home))
    fs.rm_rf(home)
  end)

  local function un(args, errfile)
    return proc.run(proc.quote(UN) .. " " .. args, bare(home), errfile)
  end

  it("starts one server, which --local reuses until it is stopped", function()
    local out, code = un("local status")
    assert.equal(0, code, out)
    assert.matches("^no local unsandboxd runs", out)
    out, code = un("local start")
    assert.equal(0, code, out)
    local url, pid = out:match("^started the local unsandboxd at (http://127%.0%.0%.1:%d+) %(pid (%d+)%)")
    assert.is_string(url, out)
    -- state under ~/.unsandbox/local, the keys 0600, the directories 0700
    local dir = home .. "/.unsandbox/local"
    assert.equal("700", mode_of(home .. "/.unsandbox"))
    assert.equal("700", mode_of(dir))
    assert.equal("600", mode_of(dir .. "/env"))
    assert.is_true(lua.sh("test -d " .. fs.quote(dir .. "/data")))
    -- loopback only
    local addrs = listening(pid)
    assert.is_true(#addrs >= 2, "no listening sockets found for " .. pid)
    for _, a in ipairs(addrs) do assert.matches("^127%.0%.0%.1:%d+$", a) end
    -- a second start finds it; status shows it without any key
    out = un("local start")
    assert.matches("^already running: the local unsandboxd at " .. url:gsub("%p", "%%%0"), out)
    out = un("local status --json")
    local st = require("cjson").decode(out)
    assert.is_true(st.running)
    assert.equal(url, st.url)
    assert.is_nil(out:find("unsb-sk-", 1, true))
    -- a session made by one command is there for the next
    local sid
    sid, code = un("--local session create", "/dev/null")
    assert.equal(0, code, sid)
    sid = sid:match("^(%S+)\n$")
    out, code = un("--local session exec " .. sid .. " 'echo kept > f'", "/dev/null")
    assert.equal(0, code, out)
    out, code = un("--local session exec " .. sid .. " 'cat f'")
    assert.equal(0, code, out)
    assert.matches("kept\n", out)
    assert.matches("using the local unsandboxd at " .. url:gsub("%p", "%%%0"), out)
    -- unlua --local uses it too
    out, code = proc.run(proc.quote(UNLUA) .. " --local -e 'io.write(os.getenv(\"UNSANDBOX_URL\"))'",
      bare(home), "/dev/null")
    assert.equal(0, code, out)
    assert.equal(url, out)
    -- eval "$(un local env)" points any program at it
    out, code = proc.run("sh -c " .. proc.quote("eval \"$(" .. proc.quote(UN) .. " local env)\" && "
      .. proc.quote(UNLUA)
      .. " -e 'print(assert(require(\"unsandbox\").execute_code(\"bash\", \"echo via-env\")).stdout)'"),
      bare(home))
    assert.equal(0, code, out)
    assert.matches("via%-env", out)
    -- stop: the process ends, the env file goes, the data stays
    out, code = un("local stop")
    assert.equal(0, code, out)
    assert.equal("stopped the local unsandboxd (its data stays for the next start)\n", out)
    assert.is_nil(io.open("/proc/" .. pid .. "/cmdline") and fs.read("/proc/" .. pid .. "/cmdline"):find("unsandboxd"))
    assert.is_nil(fs.read(dir .. "/env"))
    assert.matches("^no local unsandboxd was running", (un("local stop")))
  end)

  it("ignores an env file whose server is gone, and refuses one others may read", function()
    -- a home of its own: this file must never hide a server another test started
    local home2 = fs.tmpdir("unsb-localsrv2")
    finally(function()
      proc.run(proc.quote(UN) .. " local stop", bare(home2))
      fs.rm_rf(home2)
    end)
    local function un2(args) return proc.run(proc.quote(UN) .. " " .. args, bare(home2)) end
    local dir = home2 .. "/.unsandbox/local"
    assert(require("unsandbox.core").files.mkdirs(dir))
    -- a killed server's file: pid 1 is not an unsandboxd of this file
    fs.write(dir .. "/env", "UNSANDBOX_URL=http://127.0.0.1:9\nUNSANDBOX_PUBLIC_KEY=pk\n"
      .. "UNSANDBOX_SECRET_KEY=sk\nUNSANDBOXD_PID=1\n")
    os.execute("chmod 600 " .. fs.quote(dir .. "/env"))
    local out, code = un2("local status")
    assert.equal(0, code, out)
    assert.matches("^no local unsandboxd runs", out)
    out, code = un2("--local -s bash 'echo private'")
    assert.equal(0, code, out)
    assert.equal("private\n", out)                -- a private server, not the stale URL
    os.execute("chmod 644 " .. fs.quote(dir .. "/env"))
    out, code = un2("local status")
    assert.equal(74, code, out)
    assert.matches("only you can read; remove it", out)
    os.remove(dir .. "/env")
  end)
end)

describe("unsandboxd --env-file #integration", function()
  it("writes the start-up lines 0600 once listening, for a server started in the background", function()
    local dir = fs.tmpdir("unsb-envfile")
    finally(function() fs.rm_rf(dir) end)
    local env = dir .. "/unsb.env"
    -- the README's recipe: start it in the background, wait for the file, source it
    local script = table.concat({
      proc.quote(UNSANDBOXD) .. " --data " .. proc.quote(dir .. "/data") .. " --dev-keys --env-file "
        .. proc.quote(env) .. " >/dev/null 2>" .. proc.quote(dir .. "/log") .. " &",
      "i=0; while [ ! -s " .. proc.quote(env) .. " ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done",
      "set -a; . " .. proc.quote(env) .. "; set +a",
      proc.quote(UNLUA)
        .. " -e 'io.write(assert(require(\"unsandbox\").execute_code(\"bash\", \"echo from-env-file\")).stdout)'",
      "stat -c %a " .. proc.quote(env),
      "kill $UNSANDBOXD_PID; i=0; while [ -e " .. proc.quote(env)
        .. " ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done",
      "test -e " .. proc.quote(env) .. " && echo STILL-THERE; exit 0",
    }, "\n")
    local out, code = proc.run("sh -c " .. proc.quote(script), bare(dir))
    assert.equal(0, code, out)
    assert.matches("from%-env%-file\n600\n", out)
    assert.not_matches("STILL%-THERE", out)
  end)

  it("refuses an env file it cannot write, before serving", function()
    local out, code = proc.run(proc.quote(UNSANDBOXD)
      .. " --data /tmp/unsb-envfile-bad-$$ --env-file /nonexistent/dir/env")
    os.execute("rm -rf /tmp/unsb-envfile-bad-*")
    assert.not_equal(0, code)
    assert.matches("%-%-env%-file: cannot create /nonexistent/dir/env", out)
  end)
end)
