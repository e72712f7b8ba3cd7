-- #integration specs of un's agent-tool commands (un sandbox exec --stdin,
-- cp both ways, ps, kill), run as processes against a real unsandboxd.
-- One Lua: un runs under unlua (5.4); the spec runs it as a program.
local server = require "spec.helpers.unsandboxd"
local proc = require "spec.helpers.proc"
local fs = require "spec.helpers.fs"
local wait = require "spec.helpers.wait"

describe("un sandbox exec, cp, ps, kill #integration", function()
  local srv, env, dir

  local function un(args, stdin)
    local errfile = dir .. "/stderr"
    local cmd = "bin/un " .. args
    if stdin then cmd = "sh -c " .. proc.quote("printf %s " .. proc.quote(stdin) .. " | " .. cmd) end
    local out, code = proc.run(cmd, env, errfile)
    return out, fs.read(errfile) or "", code
  end

  setup(function()
    srv = server.start()
    dir = server.tmpdir("unsb-unagent")
    env = { SANDBOX_CONTROL_PLANE_URL = srv.cp_url, SANDBOX_TOKEN = srv.token, HOME = dir,
            SANDBOX_SESSION_ID = false }
    local _, err, code = un("sandbox create tools")
    assert.equal(0, code, err)
  end)
  teardown(function()
    srv.stop()
    server.rm_rf(dir)
  end)

  it("exec --stdin feeds our stdin to the command; its streams and status come back", function()
    local out, err, code = un("sandbox exec tools --stdin -- sh -c 'tr a-z A-Z; echo oops >&2; exit 3'",
      "hello\nworld\n")
    assert.equal(3, code, err)
    assert.equal("HELLO\nWORLD\n", out)
    assert.equal("oops\n", err)
    out, err, code = un("sandbox exec tools -- 'cat; echo no input'")
    assert.equal(0, code, err)
    assert.equal("no input\n", out)
  end)

  it("cp copies files and directories both ways, without a progress bar when piped", function()
    local big = ("0123456789"):rep(250000)
    fs.write(dir .. "/big.txt", big)
    local _, err, code = un("sandbox cp " .. proc.quote(dir .. "/big.txt") .. " 'tools:in/big copy.txt'")
    assert.equal(0, code, err)
    assert.equal("", err)
    _, err, code = un("sandbox cp 'tools:in/big copy.txt' " .. proc.quote(dir .. "/back.txt"))
    assert.equal(0, code, err)
    assert.equal(big, fs.read(dir .. "/back.txt"))
    os.execute("mkdir -p " .. proc.quote(dir .. "/tree/sub") .. " && echo x > " .. proc.quote(dir .. "/tree/sub/f"))
    _, err, code = un("sandbox cp " .. proc.quote(dir .. "/tree") .. " tools:tree")
    assert.equal(0, code, err)
    _, err, code = un("sandbox cp tools:tree " .. proc.quote(dir .. "/tree2"))
    assert.equal(0, code, err)
    assert.equal("x\n", fs.read(dir .. "/tree2/sub/f"))
    _, err, code = un("sandbox cp tools:missing " .. proc.quote(dir .. "/m"))
    assert.equal(69, code)   -- the service refused (sysexits EX_UNAVAILABLE)
    assert.matches("missing", err, 1, true)
    _, err, code = un("sandbox cp a b")
    assert.equal(64, code)   -- bad arguments (EX_USAGE)
    assert.matches("exactly one of SRC and DEST", err, 1, true)
  end)

  it("ps lists the runtime's processes and kill signals one", function()
    local script = "local u = require 'unsandbox'; local sb = assert(u.Sandbox.get { name = 'tools' }); " ..
      "local p = assert(sb:spawn('sleep 600', { id = 'sleeper' })); p:detach()"
    local out, code = proc.run("bin/unlua -e " .. proc.quote(script), env)
    assert.equal(0, code, out)
    local err, _
    out, err, code = un("sandbox ps tools")
    assert.equal(0, code, err)
    assert.matches("sleeper\t%d+\trunning\tsleep 600\n", out)
    _, err, code = un("sandbox kill tools sleeper --signal TERM")
    assert.equal(0, code, err)
    assert.is_truthy(wait.eventually(function()          -- the supervisor writes the status
      return un("sandbox ps tools"):match("sleeper\t%d+\texit %-15\tsleep 600\n")
    end, 30))
    _, _, code = un("sandbox kill tools nosuch")
    assert.equal(69, code)   -- the service refused (sysexits EX_UNAVAILABLE)
  end)
end)
