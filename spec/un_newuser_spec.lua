-- #integration specs of `un` as a new user meets it, run as a
-- process against a real unsandboxd: the README's commands exactly as
-- written, service logs on stdout alone, artifacts into a directory that
-- does not exist yet, local write failures apart from the program's code.
-- One Lua: un runs under unlua (5.4); the spec runs it as a program.
local server = require "spec.helpers.unsandboxd"
local proc = require "spec.helpers.proc"
local fs = require "spec.helpers.fs"
local core = require "unsandbox.core"
local wait = require "spec.helpers.wait"

-- absolute, since some commands run in another directory
local function checkout()
  local p = assert(io.popen("pwd"))
  local here = p:read("*l")
  p:close()
  return here
end
local UN = (os.getenv("UNSANDBOX_ROOT") or checkout()) .. "/bin/un"

describe("un, a new user's commands #integration", function()
  local srv, env, dir

  -- runs bin/un with args (a shell-quoted string) in cwd (default: the
  -- checkout), stdout and stderr apart
  local function un(args, cwd, input)
    local errfile = dir .. "/stderr"
    local cmd = (cwd and ("cd " .. proc.quote(cwd) .. " && ") or "") ..
      (input and ("printf %s " .. proc.quote(input) .. " | ") or "") ..
      proc.quote(UN) .. " " .. args
    local out, code = proc.run("sh -c " .. proc.quote(cmd), env, errfile)
    local f = io.open(errfile)
    local err = f and f:read("*a") or ""
    if f then f:close() end
    return out, err, code
  end

  setup(function()
    srv = server.start {}
    dir = server.tmpdir("unsb-un-new")
    env = { UNSANDBOX_URL = srv.url, UNSANDBOX_PUBLIC_KEY = srv.public_key,
            UNSANDBOX_SECRET_KEY = srv.secret_key, HOME = dir }
  end)
  teardown(function()
    srv.stop()
    server.rm_rf(dir)
  end)

  it("service logs prints the log and nothing else", function()
    local c = require("unsandbox").client(srv.client_opts())
    local svc = assert(c:create_service { name = "logged", bootstrap = "echo hello-log; sleep 600" })
    local out, err, code
    wait.eventually(function()
      out, err, code = un("service logs " .. svc.id)
      return out:find("hello-log")
    end)
    assert.equal(0, code, err)
    assert.equal("hello-log\n", out)
    assert(c:delete_service(svc.id))
    c:close()
  end)

  describe("the program", function()
    it("is read from standard input for '-'", function()
      local out, err, code = un("-s python -", nil, "import sys\nprint(6 * 7)\nsys.exit(3)\n")
      assert.equal(3, code, err)
      assert.equal("42\n", out)
    end)

    it("'-' needs -s, and cannot share standard input with -k -", function()
      local _, err, code = un("-", nil, "print(1)")
      assert.equal(64, code)
      assert.matches("needs its language: %-s LANG %-", err)
      _, err, code = un("-p pk -k - -s python -", nil, "sk\n")
      assert.equal(64, code)
      assert.matches("both the code %(%-%) and the key", err)
    end)

    it("arguments after it are refused, not dropped", function()
      local prog = dir .. "/args.py"
      fs.write(prog, "print('ran')\n")
      local out, err, code = un(proc.quote(prog) .. " a b")
      assert.equal(64, code)
      assert.equal("", out)
      assert.matches("not passed to it %(the service has no argv%)", err)
      local _
      _, err, code = un("-s bash 'echo x' extra")
      assert.equal(64, code)
      assert.matches("no argv", err)
    end)
  end)

  it("--local runs against a private unsandboxd, with no account and no URL", function()
    local bare = { HOME = dir, UNSANDBOX_URL = false, UNSANDBOX_PUBLIC_KEY = false,
                   UNSANDBOX_SECRET_KEY = false }
    local out, code = proc.run(proc.quote(UN) .. " --local -s bash 'echo local; exit 4'", bare)
    assert.equal(4, code, out)
    assert.equal("local\n", out)
    out, code = proc.run(proc.quote(UN) .. " -s bash --local -- 'echo after'", bare)
    assert.equal(0, code, out)
    assert.equal("after\n", out)
    out, code = proc.run(proc.quote(UN) .. " -s bash 'echo no'", bare)
    assert.equal(77, code, out)                      -- without it: no credentials
    assert.matches("un %-%-local", out)              -- and how to do without
  end)

  describe("output", function()
    local cjson = require "cjson"

    it("--version, --help with the exit codes, and each subcommand's own --help", function()
      local out, _, code = un("--version")
      assert.equal(0, code)
      assert.matches("^un %d+%.%d+%.%d+ %(unsandbox for Lua%)\n$", out)
      out = un("--help")
      assert.matches("exit codes:.*64 +bad arguments.*69 +the service.*74 +a local I/O.*75 +timeout"
        .. ".*77 +authentication", out)
      for _, cmd in ipairs { "session", "service", "snapshot", "image", "sandbox", "object", "admin", "local",
          "jobs", "languages", "key" } do
        out, _, code = un(cmd .. " --help")
        assert.equal(0, code)
        assert.matches("^usage: un " .. cmd, out)
        assert.not_matches("un service", cmd ~= "service" and out or "")
      end
    end)

    it("--json on runs and subcommands; whole numbers print as integers", function()
      local out, err, code = un("--json -s bash 'echo hi; exit 2'")
      assert.equal(2, code, err)
      local r = cjson.decode(out)
      assert.equal("hi\n", r.stdout)
      assert.equal(2, r.exit_code)
      assert.not_matches("%.0[,}]", out)
      assert.equal("table", type(cjson.decode((un("--json languages")))))
      assert.equal("table", type(cjson.decode((un("--json jobs")))))
      assert.equal(true, cjson.decode((un("--json key"))).valid)
      local s = cjson.decode((un("--json session create")))
      assert.is_string(s.id)
      local snap = cjson.decode((un("--json session snapshot " .. s.id)))
      assert.is_string(snap.id)
      out = un("snapshot get " .. snap.id)
      assert.matches("\nsize_bytes%s+%d+\n", out)
      assert.not_matches("%d%.0\n", out)
      assert.matches("size_bytes", (un("--json snapshot list")))
      assert.not_matches("%d%.0[,}%]]", (un("--json snapshot list")))
      assert.equal(s.id, cjson.decode((un("--json session get " .. s.id))).id)
      un("session delete " .. s.id)
    end)

    it("says what a changing command did", function()
      local s = assert(un("session create"):match("^(%S+)\n$"))
      local snap = assert(un("session snapshot " .. s):match("^(%S+)\n$"))
      assert.equal("locked snapshot " .. snap .. "\n", (un("snapshot lock " .. snap)))
      assert.equal("unlocked snapshot " .. snap .. "\n", (un("snapshot unlock " .. snap)))
      assert.equal("restored snapshot " .. snap .. "\n", (un("snapshot restore " .. snap)))
      assert.equal("deleted snapshot " .. snap .. "\n", (un("snapshot delete " .. snap)))
      assert.equal("deleted session " .. s .. "\n", (un("session delete " .. s)))
      local job = assert(require("unsandbox").client(srv.client_opts()):execute_async("bash", "sleep 60"))
      assert.equal("cancelled job " .. job .. "\n", (un("jobs --cancel " .. job)))
    end)

    it("the session, service and snapshot subcommands too: a line saying what was done, or --json", function()
      local s = assert(un("session create --tmux"):match("^(%S+)\n$"))   -- only such a session freezes
      assert.equal("froze session " .. s .. "\n", (un("session freeze " .. s)))
      assert.equal("unfroze session " .. s .. "\n", (un("session unfreeze " .. s)))
      local boosted = cjson.decode((un("--json session boost " .. s .. " 2")))
      assert.equal(2, boosted.result.vcpu)
      assert.is_true(boosted.ok)
      local svc = assert(un("service create web 'sleep 600'"):match("^(%S+)\n$"))
      assert.equal("locked service " .. svc .. "\n", (un("service lock " .. svc)))
      assert.equal("table", type(cjson.decode((un("--json service unlock " .. svc)))))
      assert.equal("table", type(cjson.decode((un("--json image list")))))
      un("service delete " .. svc)
      un("session delete " .. s)
    end)
  end)

  it("Ctrl-C cancels the job un is polling, says so and exits 130", function()
    -- the job is pending at once (--sync-ms 0), so un polls it and holds its id
    local slow = server.start { args = { "--sync-ms", "0" } }
    finally(slow.stop)
    local e = {}
    for k, v in pairs(env) do e[k] = v end
    e.UNSANDBOX_URL, e.UNSANDBOX_PUBLIC_KEY, e.UNSANDBOX_SECRET_KEY = slow.url, slow.public_key, slow.secret_key
    local out, errf, status = dir .. "/bg.out", dir .. "/bg.err", dir .. "/bg.status"
    local pidf = dir .. "/bg.pid"
    os.execute(string.format(
      "(%s%s -s bash 'sleep 600' >%s 2>%s & echo $! >%s; wait $!; echo $? >%s) >/dev/null 2>&1 &",
      proc.env_prefix(e), proc.quote(UN), proc.quote(out), proc.quote(errf), proc.quote(pidf), proc.quote(status)))
    local c = require("unsandbox").client(slow.client_opts())
    local id
    assert.is_truthy(wait.eventually(function()
      for _, job in ipairs(assert(c:list_jobs())) do
        if job.status == "running" then id = job.job_id end
      end
      return id ~= nil
    end, 30), "the job never ran")
    local pid = assert(tonumber(fs.read(pidf)))
    os.execute("kill -INT " .. pid)
    assert.is_truthy(wait.eventually(function() return (fs.read(status) or "") ~= "" end, 30), "un still running")
    assert.equal("130\n", fs.read(status))
    assert.equal("un: interrupted\n", fs.read(errf))
    assert.equal("cancelled", assert(c:get_job(id)).status)
    c:close()
  end)

  describe("-a -o DIR", function()
    it("the README's command: the directory is made, the file saved, exit 0", function()
      local work = dir .. "/readme"
      assert(core.mkdirs(work))
      local _, err, code = un("-a -o out/ -s bash 'echo hi > report.txt'", work)
      assert.equal(0, code, err)
      assert.equal("hi\n", assert(io.open(work .. "/out/report.txt")):read("*a"))
      assert.matches("saved out/report.txt", err, 1, true)
    end)

    it("makes nested directories", function()
      local _, err, code = un("-a -o " .. proc.quote(dir .. "/a/b/c") .. " -s bash 'echo x > f.txt'")
      assert.equal(0, code, err)
      assert.equal("x\n", assert(io.open(dir .. "/a/b/c/f.txt")):read("*a"))
    end)

    it("a failure to save is reported with its reason; the program's exit code is kept", function()
      local blocker = dir .. "/blocker"
      assert(io.open(blocker, "w")):close()
      local out, err,
        code = un("-a -o " .. proc.quote(blocker .. "/sub") .. " -s bash 'echo out; echo x > f.txt; exit 3'")
      assert.equal(3, code, err)
      assert.equal("out\n", out)
      assert.matches("un: cannot save artifacts: .*blocker/sub: cannot create directory: Not a directory", err)
    end)

    it("a failure to save after a successful program exits 74 (a local I/O error)", function()
      local blocker = dir .. "/blocker2"
      assert(io.open(blocker, "w")):close()
      local _, err, code = un("-a -o " .. proc.quote(blocker) .. " -s bash 'echo x > f.txt'")
      assert.equal(74, code, err)
      assert.matches("Not a directory", err)
    end)
  end)
end)
