-- #integration specs of the `un` command line, run as a process against a
-- real unsandboxd.
-- One Lua: un runs under unlua (5.4); the spec runs it as a program.
local server = require "spec.helpers.unsandboxd"
local proc = require "spec.helpers.proc"

describe("un #integration", function()
  local srv, env, dir

  -- runs bin/un with args (a shell-quoted string), stdout and stderr apart
  local function un(args, extra_env)
    local e = {}
    for k, v in pairs(env) do e[k] = v end
    for k, v in pairs(extra_env or {}) do e[k] = v end
    local errfile = dir .. "/stderr"
    local out, code = proc.run("bin/un " .. args, e, errfile)
    local f = io.open(errfile)
    local err = f and f:read("*a") or ""
    if f then f:close() end
    return out, err, code
  end

  local function write(name, text)
    local f = assert(io.open(dir .. "/" .. name, "w"))
    f:write(text)
    f:close()
    return dir .. "/" .. name
  end

  setup(function()
    srv = server.start { args = { "--enable-faults" } }
    dir = server.tmpdir("unsb-un")
    env = { UNSANDBOX_URL = srv.url, UNSANDBOX_PUBLIC_KEY = srv.public_key,
            UNSANDBOX_SECRET_KEY = srv.secret_key, HOME = dir }
  end)
  teardown(function()
    srv.stop()
    server.rm_rf(dir)
  end)

  it("runs files in several languages with stdout, stderr and the exit code", function()
    local cases = {
      { "prog.py", "import sys\nprint('py out')\nprint('py err', file=sys.stderr)\nsys.exit(4)", "py out\n",
        "py err\n", 4 },
      { "prog.lua", "print('lua out') io.stderr:write('lua err\\n') os.exit(0)", "lua out\n", "lua err\n", 0 },
      { "prog.sh", "echo sh out; echo sh err >&2; exit 7", "sh out\n", "sh err\n", 7 },
      { "prog.js", "console.log('js out'); console.error('js err'); process.exit(2)", "js out\n", "js err\n", 2 },
      { "prog.c", "#include <stdio.h>\nint main(void){puts(\"c out\");fputs(\"c err\\n\",stderr);return 5;}",
        "c out\n", "c err\n", 5 },
    }
    for _, c in ipairs(cases) do
      local out, err, code = un(proc.quote(write(c[1], c[2])))
      assert.are.equal(c[3], out, c[1])
      assert.are.equal(c[4], err, c[1])
      assert.are.equal(c[5], code, c[1])
    end
  end)

  it("-v prints one line per exchange on stderr, without the keys; none without it", function()
    local out, err, code = un("-v -s bash 'echo v'")
    assert.are.equal(0, code)
    assert.are.equal("v\n", out)
    -- a quick run is answered synchronously: one exchange, no poll
    assert.matches("^unsandbox: method=POST path=/execute status=200 [^\n]*\n$", err)
    for line in err:gmatch("[^\n]+") do
      assert.matches("^unsandbox: method=%u+ path=/%S* status=%d+ ", line)
    end
    assert.is_nil(err:find(srv.secret_key, 1, true))
    assert.is_nil(err:find(srv.public_key, 1, true))
    out, err = un("-s bash 'echo q'")
    assert.are.equal("q\n", out)
    assert.is_nil(err:find("method=", 1, true))
  end)

  it("polls only when the service answers that the job is pending", function()
    -- the server answers POST /execute with a pending job after --sync-ms
    local slow = server.start { args = { "--sync-ms", "100" } }
    local out, err, code = un("-v -s bash 'sleep 1; echo late'", { UNSANDBOX_URL = slow.url,
      UNSANDBOX_PUBLIC_KEY = slow.public_key, UNSANDBOX_SECRET_KEY = slow.secret_key })
    slow.stop()
    assert.are.equal(0, code, err)
    assert.are.equal("late\n", out)
    assert.matches("method=POST path=/execute status=200 ", err)
    assert.matches("method=GET path=/jobs/job_%S+ status=200 ", err)
  end)

  it("detects the language from a shebang line", function()
    local out, _, code = un(proc.quote(write("noext", "#!/usr/bin/env python3\nprint('shebang')\n")))
    assert.are.equal(0, code)
    assert.are.equal("shebang\n", out)
  end)

  it("runs inline code with env, input files and the network mode", function()
    local data = write("data.txt", "payload")
    local out, err, code = un("-s bash -e NAME=Ada -f " .. proc.quote(data) ..
      " -n zerotrust --ttl 20 " .. proc.quote('echo "$NAME $(cat data.txt)"'))
    assert.are.equal(0, code, err)
    assert.are.equal("Ada payload\n", out)
  end)

  it("saves artifacts at their relative paths, making the directories", function()
    local outdir = dir .. "/tree"
    local _, err, code = un("-o " .. proc.quote(outdir) .. " -s bash 'mkdir -p sub/deep; echo z > sub/deep/z.txt'")
    assert.are.equal(0, code, err)
    local f = assert(io.open(outdir .. "/sub/deep/z.txt"))
    assert.are.equal("z\n", f:read("a"))
    f:close()
    assert.matches("saved " .. outdir:gsub("%p", "%%%0") .. "/sub/deep/z.txt", err)
  end)

  it("refuses an artifact name that is absolute or climbs out", function()
    local run = require "unsandbox.cli.run"
    local outdir = dir .. "/guarded"
    for _, name in ipairs { "../escape.txt", "/etc/evil", "a/../../b" } do
      local msg = run.save_artifacts({ { filename = name, content = "x" } }, outdir)
      assert.matches("not saved", msg, 1, true)
    end
    assert.is_nil(io.open(dir .. "/escape.txt"))
  end)

  it("saves artifacts with -a -o", function()
    local outdir = dir .. "/art"
    os.execute("mkdir -p " .. outdir)
    local _, err, code = un("-a -o " .. proc.quote(outdir) .. " -s bash 'echo made > report.txt'")
    assert.are.equal(0, code, err)
    local f = assert(io.open(outdir .. "/report.txt"))
    assert.are.equal("made\n", f:read("*a"))
    f:close()
  end)

  it("exits 75 when the program hits its time limit", function()
    local _, err, code = un("--ttl 1 -s bash 'sleep 10'")
    assert.are.equal(75, code)
    assert.matches("time limit", err)
  end)

  it("names a program's own exit code that is also one of un's", function()
    local _, err, code = un("-s bash 'exit 69'")
    assert.are.equal(69, code)
    assert.are.equal("[un] exit code 69 is the program's own\n", err)
    local out
    out, _, code = un("--json -s bash 'exit 69'")
    assert.are.equal(69, code)
    assert.are.equal(69, require("cjson").decode(out).exit_code)
  end)

  it("exits 64 with one line for bad arguments", function()
    local bad = {
      "--bogus x.py", "-s", "-s python", "--ttl 0 -s bash true", "--ttl abc -s bash true",
      "-n open -s bash true", "-e NOEQUALS -s bash true", "/nonexistent/file.py",
      proc.quote(write("unknown.xyz", "data")), "snapshot get '../x'", "session frobnicate",
    }
    for _, args in ipairs(bad) do
      local _, err, code = un(args)
      assert.are.equal(64, code, args .. ": " .. err)
      assert.matches("^un[ :][^\n]+\n$", err, nil, args)
    end
  end)

  it("exits 77 for an authentication failure", function()
    local _, err, code = un("-s bash true", { UNSANDBOX_SECRET_KEY = "unsb-sk-wrong" })
    assert.are.equal(77, code)
    assert.matches("401", err)
    assert.not_matches("unsb%-sk", err)
    _, err, code = un("-s bash true -p only-public", {})
    assert.are.equal(64, code, err)
  end)

  it("takes keys from --account N and the service from --url", function()
    os.execute("mkdir -p " .. dir .. "/.unsandbox")
    write(".unsandbox/accounts.csv", "unsb-pk-other,unsb-sk-other\n" .. srv.public_key .. "," .. srv.secret_key .. "\n")
    local bare = { UNSANDBOX_URL = false, UNSANDBOX_PUBLIC_KEY = false, UNSANDBOX_SECRET_KEY = false }
    local out, err, code = un("--account 1 --url " .. srv.url .. " -s bash 'echo from-account'", bare)
    assert.are.equal(0, code, err)
    assert.are.equal("from-account\n", out)
    local _
    _, err, code = un("--account 0 --url " .. srv.url .. " -s bash true", bare)
    assert.are.equal(77, code, err)
    _, err, code = un("--account 5 --url " .. srv.url .. " -s bash true", bare)
    assert.are.equal(77, code)
    assert.matches("5", err)
    os.remove(dir .. "/.unsandbox/accounts.csv")
  end)

  it("takes the secret key from a file or standard input, and warns when it is in argv", function()
    local bare = { UNSANDBOX_PUBLIC_KEY = false, UNSANDBOX_SECRET_KEY = false }
    local keyfile = write("secret.key", srv.secret_key .. "\n")
    local pk = proc.quote(srv.public_key)
    local out, err, code = un("-p " .. pk .. " --secret-key-file " .. proc.quote(keyfile) ..
      " -s bash 'echo from-file'", bare)
    assert.are.equal(0, code, err)
    assert.are.equal("from-file\n", out)
    assert.are.equal("", err)

    -- -k -: one line of standard input (proc.run gives /dev/null: use a pipe)
    local e = {}
    for k, v in pairs(env) do e[k] = v end
    for k, v in pairs(bare) do e[k] = v end
    local errfile = dir .. "/stderr-stdin"
    out, code = proc.run("sh -c " .. proc.quote("printf '%s\\n' " .. proc.quote(srv.secret_key) ..
      " | bin/un -p " .. pk .. " -k - -s bash 'echo from-stdin' 2>" .. proc.quote(errfile)), e)
    assert.are.equal(0, code, out)
    assert.are.equal("from-stdin\n", out)
    local f = assert(io.open(errfile))
    assert.are.equal("", f:read("*a"))
    f:close()

    -- in argv: it works, with a warning that never shows the key itself
    out, err, code = un("-p " .. pk .. " -k " .. proc.quote(srv.secret_key) .. " -s bash 'echo from-argv'", bare)
    assert.are.equal(0, code, err)
    assert.are.equal("from-argv\n", out)
    assert.matches("^un: warning: a secret key on the command line is visible", err)
    assert.matches("secret%-key%-file", err)
    assert.is_nil(err:find(srv.secret_key, 1, true))

    -- a wrong key from the file is an authentication failure, not shown
    local wrong = write("wrong.key", "unsb-sk-wrong-key\n")
    local _
    _, err, code = un("-p " .. pk .. " --secret-key-file " .. proc.quote(wrong) .. " -s bash true", bare)
    assert.are.equal(77, code)
    assert.is_nil(err:find("unsb-sk-wrong-key", 1, true))
  end)

  it("refuses a missing, empty or conflicting secret key source", function()
    local bare = { UNSANDBOX_PUBLIC_KEY = false, UNSANDBOX_SECRET_KEY = false }
    local pk = proc.quote(srv.public_key)
    local empty = write("empty.key", "\n\n")
    local keyfile = write("secret2.key", srv.secret_key)
    local cases = {
      { "-p " .. pk .. " --secret-key-file /nonexistent/key -s bash true", "cannot read the secret key file" },
      { "-p " .. pk .. " --secret-key-file " .. proc.quote(empty) .. " -s bash true", "is empty" },
      { "-p " .. pk .. " --secret-key-file " .. proc.quote(dir) .. " -s bash true", "secret key" },
      { "-p " .. pk .. " -k - -s bash true", "no secret key on standard input" },  -- stdin is /dev/null
      { "-p " .. pk .. " -k x --secret-key-file " .. proc.quote(keyfile) .. " -s bash true", "exclude each other" },
      { "--secret-key-file " .. proc.quote(keyfile) .. " -s bash true", "must be given together" },
      { "-p " .. pk .. " --secret-key-file", "needs a value" },
    }
    for _, c in ipairs(cases) do
      local _, err, code = un(c[1], bare)
      assert.are.equal(64, code, c[1] .. ": " .. err)
      assert.matches("^un: [^\n]*" .. c[2]:gsub("%-", "%%-") .. "[^\n]*\n$", err, nil, c[1])
    end
  end)

  it("exits 69 for an API error", function()
    local _, err, code = un("jobs --get job_missing")
    assert.are.equal(69, code)
    assert.matches("404", err)
  end)

  it("lists languages, as lines and as JSON", function()
    local out, _, code = un("languages")
    assert.are.equal(0, code)
    assert.matches("\npython\n", "\n" .. out)
    out, _, code = un("languages --json")
    assert.are.equal(0, code)
    local list = require("cjson").decode(out)
    assert.is_true(#list >= 4)
  end)

  it("manages sessions and snapshots", function()
    local id = un("session create"):match("^(%S+)\n$")
    assert.is_not_nil(id)
    local out, _, code = un("session exec " .. id .. " 'echo hi > f; cat f'")
    assert.are.equal(0, code)
    assert.are.equal("hi\n", out)
    local snap = un("session snapshot " .. id .. " first"):match("^(%S+)\n$")
    assert.is_not_nil(snap)
    assert.matches(snap, (un("snapshot list")), 1, true)
    assert.are.equal(0, select(3, un("snapshot restore " .. snap)))
    assert.are.equal(0, select(3, un("snapshot delete " .. snap)))
    assert.are.equal(0, select(3, un("session delete " .. id)))
  end)

  it("answers a sudo challenge with the one-time password from standard input", function()
    local c = require("unsandbox").client(srv.client_opts())
    local s = assert(c:create_session())
    local snap = assert(c:session_snapshot(s.id)).id
    assert(c:call("POST", "/_faults", { mode = "sudo", otp = "424242", count = 1, path = "/snapshots/" }))
    local _, err, code = un("snapshot delete " .. snap)  -- stdin is empty: cancelled
    assert.are.equal(69, code)
    assert.matches("428", err)
    local out
    out, code = proc.run("sh -c " .. proc.quote("echo 424242 | bin/un snapshot delete " .. snap), env)
    assert.are.equal(0, code, out)
    assert.are.equal(404, select(2, c:get_snapshot(snap)).status)
    assert(c:delete_session(s.id))
    c:close()
  end)

  it("validates the key", function()
    local out, _, code = un("key")
    assert.are.equal(0, code)
    assert.matches("valid%s+true", out)
  end)

  it("shows progress only on a terminal", function()
    local _, err = un("-s bash 'sleep 1; echo done'")
    assert.are.equal("", err)
    -- script(1) gives the command a pseudo-terminal; progress is shown
    -- while the job is polled, so the server answers "pending" at once
    local slow = server.start { args = { "--sync-ms", "0" } }
    local e = {}
    for k, v in pairs(env) do e[k] = v end
    e.UNSANDBOX_URL, e.UNSANDBOX_PUBLIC_KEY, e.UNSANDBOX_SECRET_KEY = slow.url, slow.public_key, slow.secret_key
    finally(slow.stop)
    local out = proc.run("script -qec " .. proc.quote("bin/un -s bash 'sleep 1.5; echo done'") .. " /dev/null", e)
    assert.matches("%[un%] %d+%.%ds", out)
    assert.matches("done", out)
  end)
end)
