-- #integration: every example runs against a real unsandboxd, and
-- `make demo` (the README's first command) works end to end.
-- One Lua: the examples run as programs of their own (unlua, lua5.4).
local server = require "spec.helpers.unsandboxd"
local proc = require "spec.helpers.proc"
local fs = require "spec.helpers.fs"

describe("examples #integration", function()
  local srv, env, home

  setup(function()
    srv = server.start()
    home = fs.tmpdir("unsb-home")
    env = { UNSANDBOX_URL = srv.url, UNSANDBOX_PUBLIC_KEY = srv.public_key,
            UNSANDBOX_SECRET_KEY = srv.secret_key, HOME = home }
  end)
  teardown(function()
    srv.stop()
    fs.rm_rf(home)
  end)

  it("hello.lua prints the sandbox's greeting", function()
    local out, code = proc.run("bin/unlua examples/hello.lua", env)
    assert.are.equal(0, code, out)
    assert.matches("^Hello from a sandbox!\nexit code 0 in %d+ ms %(job job_%x+%)\n$", out)
  end)

  it("async_jobs.lua submits three jobs and reports their polls and results", function()
    local out, code = proc.run("bin/unlua examples/async_jobs.lua", env)
    assert.are.equal(0, code, out)
    assert.matches("python finished: completed %-> 45", out)
    assert.matches("bash finished: completed %-> 42", out)
    assert.matches("lua finished: completed %-> job%-job%-job", out)
    assert.matches("poll 1 of job_", out)
  end)

  it("snapshot.lua restores the session's file", function()
    local out, code = proc.run("bin/unlua examples/snapshot.lua", env)
    assert.are.equal(0, code, out)
    assert.matches("after the change:  broken\n", out, 1, true)
    assert.matches("after the restore: version 1\n", out, 1, true)
    assert.matches("cleaned up", out)
  end)

  it("the examples also run under stock lua5.4 with the library's paths", function()
    local e = {}
    for k, v in pairs(env) do e[k] = v end
    for k, v in pairs(proc.LUA_ENV) do e[k] = v end
    local out, code = proc.run("lua5.4 examples/hello.lua", e)
    assert.are.equal(0, code, out)
    assert.matches("^Hello from a sandbox!", out)
  end)
end)

describe("Control Plane examples #integration", function()
  local srv, env, home

  setup(function()
    srv = server.start()
    home = fs.tmpdir("unsb-home")
    env = { SANDBOX_CONTROL_PLANE_URL = srv.cp_url, SANDBOX_TOKEN = srv.token, HOME = home,
            SANDBOX_SESSION_ID = false }
  end)
  teardown(function()
    srv.stop()
    fs.rm_rf(home)
  end)


  it("agent.lua writes a project, fixes it by its streamed test run, checkpoints and restores", function()
    local out, code = proc.run("bin/unlua examples/agent.lua", env)
    assert.are.equal(0, code, out)
    assert.matches("tests fail: the agent reads the file and fixes it", out, 1, true)
    assert.matches("FAIL: test_small", out, 1, true)
    assert.matches("edited: return a - b -> return a + b", out, 1, true)
    assert.matches("checkpoint cp%-%d+%-%x+", out)
    assert.matches("after breaking it: exit code 1", out, 1, true)
    assert.matches("after the restore: exit code 0", out, 1, true)
  end)

  it("pty.lua drives an interactive program through a PTY session", function()
    local out, code = proc.run("bin/unlua examples/pty.lua", env)
    assert.are.equal(0, code, out)
    assert.matches("terminal: /dev/pts/", out, 1, true)
    assert.matches("state kept: hello from /tmp", out, 1, true)
    assert.matches("answer: hi, Ada", out, 1, true)
    assert.matches("killed: exit code -9, restarted true", out, 1, true)
  end)

  it("agent_tools.lua talks to a process, keeps an interpreter, manages files and moves a big one", function()
    local out, code = proc.run("bin/unlua examples/agent_tools.lua", env)
    assert.are.equal(0, code, out)
    assert.matches("stdout\tupper: HELLO\nstdout\tupper: WORLD\n", out, 1, true)
    assert.matches("stderr\tseen: 6\n", out, 1, true)
    assert.matches("exit code\t0", out, 1, true)
    assert.matches("area\t12.566370614359172", out, 1, true)
    assert.matches("error\tZeroDivisionError\tdivision by zero", out, 1, true)
    assert.matches("still there\t2", out, 1, true)
    assert.matches("file\t600\t11\treports/2024/first quarter.txt", out, 1, true)
    assert.matches("upload 100%", out, 1, true)
    assert.matches("downloaded\t25165824\tbytes, same sha256:\ttrue", out, 1, true)
  end)

  it("objects.lua keeps each user's objects apart", function()
    local out, code = proc.run("bin/unlua examples/objects.lua", env)
    assert.are.equal(0, code, out)
    assert.matches("alice reads: Q2 numbers: up 12%", out, 1, true)
    assert.matches("bob looks for alice's report: 404", out, 1, true)
    assert.matches("alice deleted her report", out, 1, true)
  end)

  it("unlua --local runs them against a private Control Plane", function()
    local e = { HOME = home, SANDBOX_CONTROL_PLANE_URL = false, SANDBOX_TOKEN = false }
    for script, expect in pairs {
      ["examples/agent.lua"] = "after the restore: exit code 0",
      ["examples/pty.lua"] = "answer: hi, Ada",
      ["examples/objects.lua"] = "alice deleted her report",
    } do
      local out, code = proc.run("bin/unlua --local " .. script, e)
      assert.are.equal(0, code, script .. ": " .. out)
      assert.matches(expect, out, 1, true)
    end
  end)
end)

describe("make demo #integration", function()
  it("runs the quickstart on a private local backend and leaves nothing running", function()
    local function private_dirs() return proc.run("ls -d /tmp/unlua-local.* 2>/dev/null | wc -l"):match("%d+") end
    local before = private_dirs()
    local home = fs.tmpdir("unsb-home")
    local out, code = proc.run("make --no-print-directory demo", { HOME = home,
      UNSANDBOX_URL = false, UNSANDBOX_PUBLIC_KEY = false, UNSANDBOX_SECRET_KEY = false })
    fs.rm_rf(home)
    assert.are.equal(0, code, out)
    assert.matches("[python] stdout: Python 3", out, 1, true)
    assert.matches("[lua] stdout: Lua 5.4 says hi", out, 1, true)
    assert.matches("[bash] exit code 3", out, 1, true)
    assert.matches("step 2\n", out, 1, true)
    assert.matches("python, ", out, 1, true)
    assert.matches("Hello from Python 3", out, 1, true)
    assert.matches("un exited 0", out, 1, true)
    -- the Control Plane part: unlua --local exported its URL and token
    assert.matches("== A sandbox of the Control Plane\nsandbox quickstart runs as sb%-%x+\n", out)
    assert.matches("run: Hello from a Control Plane sandbox\n", out, 1, true)
    assert.matches("stream: tick 1\nstream: tick 2\nstream: tick 3\n", out, 1, true)
    assert.matches("checkpoint cp%-%d+%-%x+", out)
    assert.not_matches("the sandbox tour stopped", out, 1, true)
    -- the private server's temporary directory is gone with it
    assert.are.equal(before, private_dirs())
  end)
end)
