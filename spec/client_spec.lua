-- #integration specs of the execution API client against a real
-- unsandboxd on an ephemeral loopback port, running real sandboxes.
local unsandbox = require "unsandbox"
local server = require "spec.helpers.unsandboxd"
local proc = require "spec.helpers.proc"
local core = require "unsandbox.core"
local wait = require "spec.helpers.wait"

local function elapsed_since(t0) return (core.monotonic_ms() - t0) / 1000 end

describe("unsandbox client #integration", function()
  local srv, c

  local function arm(fault)
    return assert(c:call("POST", "/_faults", fault))
  end

  setup(function()
    srv = server.start { args = { "--enable-faults" } }
    c = unsandbox.client(srv.client_opts())
  end)
  teardown(function()
    if c then c:close() end
    if srv then srv.stop() end
  end)
  after_each(function()
    if c then c:call("POST", "/_faults", { mode = "off" }) end
  end)

  describe("health()", function()
    it("answers true without credentials", function()
      local anon = unsandbox.client { url = srv.url }
      assert.is_true((anon:health()))
      anon:close()
    end)
  end)

  describe("execute_code()", function()
    it("runs python and returns the documented fields", function()
      local r = assert(c:execute_code("python", "print('hello from python')"))
      assert.are.equal("hello from python\n", r.stdout)
      assert.are.equal("", r.stderr)
      assert.are.equal(0, r.exit_code)
      assert.are.equal("completed", r.status)
      assert.is_string(r.job_id)
      assert.is_number(r.execution_time_ms)
      assert.matches("^req_", r.request_id)
    end)

    it("returns a non-zero exit code as data, with stderr", function()
      local r = assert(c:execute_code("bash", "echo out; echo err >&2; exit 3"))
      assert.are.equal(3, r.exit_code)
      assert.are.equal("out\n", r.stdout)
      assert.are.equal("err\n", r.stderr)
    end)

    it("passes env and input files (path and inline)", function()
      local dir = server.tmpdir("unsb-in")
      local f = assert(io.open(dir .. "/data.txt", "w")); f:write("from disk"); f:close()
      local r = assert(c:execute_code("python",
        "import os\nprint(os.environ['GREETING'], open('data.txt').read(), open('sub/inline.bin','rb').read())",
        { env = { GREETING = "hi" },
          input_files = { dir .. "/data.txt", { filename = "sub/inline.bin", content = "\0\1x" } } }))
      server.rm_rf(dir)
      assert.are.equal(0, r.exit_code, r.stderr)
      assert.are.equal("hi from disk b'\\x00\\x01x'\n", r.stdout)
    end)

    it("returns artifacts when asked", function()
      local r = assert(c:execute_code("bash", "printf 'result' > out.txt",
        { return_artifacts = true }))
      assert.are.equal(1, #r.artifacts)
      assert.are.equal("out.txt", r.artifacts[1].filename)
      assert.are.equal("result", r.artifacts[1].content)
    end)

    it("polls when the service answers with a pending job", function()
      arm { mode = "defer", count = 1 }
      local polls = 0
      local r = assert(c:execute_code("bash", "sleep 0.5; echo done",
        { on_poll = function(_, attempt) polls = attempt end }))
      assert.are.equal("done\n", r.stdout)
      assert.is_true(polls >= 1)
    end)

    it("gives up with a timeout error at about its timeout", function()
      arm { mode = "latency", ms = 3000, count = 1 }
      local t0 = core.monotonic_ms()
      local r, err = c:execute_code("bash", "true", { timeout = 1 })
      local took = elapsed_since(t0)
      assert.is_nil(r)
      assert.are.equal("timeout", err.kind)
      -- the transfer itself was given the 1 s (not the 3 s of the fault)
      assert.matches("timed out after 1000 ms", err.message)
      assert.is_true(took >= 0.9, "took " .. took)
    end)

    it("reports malformed JSON as a protocol error", function()
      arm { mode = "malformed", count = 1, path = "/execute" }
      local r, err = c:execute_code("bash", "true")
      assert.is_nil(r)
      assert.are.equal("protocol", err.kind)
      assert.matches("^req_", err.request_id)
    end)

    it("reports a dropped connection as a transport error", function()
      arm { mode = "drop", count = 1, path = "/execute" }
      local r, err = c:execute_code("bash", "echo hi")
      assert.is_nil(r)
      assert.are.equal("transport", err.kind)
    end)

    it("refuses a response over the size cap", function()
      local small = unsandbox.client(srv.client_opts { max_response = 1000 })
      local r, err = small:execute_code("python", "print('x' * 5000)")
      small:close()
      assert.is_nil(r)
      assert.are.equal("protocol", err.kind)
      assert.matches("1000", err.message)
    end)

    it("passes the server's 400 message for a language it does not have", function()
      local r, err = c:execute_code("brainfuck", "+")
      assert.is_nil(r)
      assert.are.equal(400, err.status)
      assert.are.equal("unsupported_language", err.code)
    end)
  end)

  describe("jobs", function()
    it("execute_async() and wait_for_job() with on_poll", function()
      local id = assert(c:execute_async("bash", "sleep 1; echo async"))
      local seen = {}
      local r = assert(c:wait_for_job(id, { timeout = 30,
        on_poll = function(job) seen[#seen + 1] = job.status end }))
      assert.are.equal("async\n", r.stdout)
      assert.are.equal(id, r.job_id)
      assert.is_true(#seen >= 2)
    end)

    it("wait_for_job() tolerates a 404 just after submission and a 5xx burst", function()
      arm { mode = "poll404", count = 2 }
      local id = assert(c:execute_async("bash", "echo ok"))
      assert.are.equal("ok\n", assert(c:wait_for_job(id, { timeout = 30 })).stdout)
      arm { mode = "status", status = 503, count = 2, path = "/jobs/" }
      id = assert(c:execute_async("bash", "echo again"))
      assert.are.equal("again\n", assert(c:wait_for_job(id, { timeout = 30 })).stdout)
    end)

    it("wait_for_job() gives up after more than five 404s", function()
      local r, err = c:wait_for_job("job_doesnotexist", { timeout = 30 })
      assert.is_nil(r)
      assert.are.equal(404, err.status)
    end)

    it("wait_for_job() honours its timeout", function()
      local id = assert(c:execute_async("bash", "sleep 30", { ttl = 40 }))
      local t0 = core.monotonic_ms()
      local r, err = c:wait_for_job(id, { timeout = 1.2 })
      assert.is_nil(r)
      assert.are.equal("timeout", err.kind)
      assert.matches("still not finished after 1.2 s", err.message)
      assert.is_true(elapsed_since(t0) >= 1.2)
      assert(c:cancel_job(id))
    end)

    it("wait_for_job() stops when on_poll returns false", function()
      local id = assert(c:execute_async("bash", "sleep 20", { ttl = 30 }))
      local r, err = c:wait_for_job(id, { on_poll = function(_, attempt) return attempt < 2 end })
      assert.is_nil(r)
      assert.are.equal("validation", err.kind)
      assert.matches("on_poll", err.message)
      assert(c:cancel_job(id))
    end)

    it("get_job(), list_jobs() and cancel_job()", function()
      local id = assert(c:execute_async("bash", "sleep 20", { ttl = 30 }))
      local listed = wait.eventually(function()
        for _, j in ipairs(assert(c:list_jobs())) do
          if j.job_id == id then return true end
        end
      end)
      assert.is_true(listed)
      local cancelled = assert(c:cancel_job(id))
      assert.are.equal("cancelled", cancelled.status)
      local job = assert(c:wait_for_job(id, { timeout = 10 }))
      assert.are.equal("cancelled", job.status)
      assert.are.equal("cancelled", assert(c:get_job(id)).status)
    end)

    it("get_job() of an unknown job is a 404 error with a request id", function()
      local r, err = c:get_job("job_unknown")
      assert.is_nil(r)
      assert.are.equal("http", err.kind)
      assert.are.equal(404, err.status)
      assert.matches("^req_", err.request_id)
    end)
  end)

  describe("get_languages()", function()
    it("lists installed languages, one return value, caching in the local file", function()
      local home = server.tmpdir("unsb-home")
      local out, code = proc.lua([[
        local u = require "unsandbox"
        local list, extra = assert(u.get_languages())
        local f = assert(io.open(os.getenv("HOME") .. "/.unsandbox/languages-local.json"))
        f:close()
        os.remove(os.getenv("HOME") .. "/.unsandbox/languages-local.json")
        local again = assert(u.get_languages())
        print(table.concat(list, ","), extra, #again == #list)]],
        { HOME = home, UNSANDBOX_URL = srv.url, UNSANDBOX_PUBLIC_KEY = srv.public_key,
          UNSANDBOX_SECRET_KEY = srv.secret_key })
      server.rm_rf(home)
      assert.are.equal(0, code, out)
      assert.matches("python", out)
      assert.matches("bash", out)
      assert.matches("\tnil\ttrue\n$", out)   -- one return value; the cache is languages_spec's
    end)
  end)

  describe("authentication", function()
    it("validate_keys() accepts the server's key", function()
      local v = assert(c:validate_keys())
      assert.is_true(v.valid)
      assert.are.equal(srv.public_key, v.public_key)
    end)

    it("a wrong secret is a 401 error with the server's message and a request id", function()
      local bad = unsandbox.client(srv.client_opts { secret_key = "unsb-sk-wrong-wrong-wrong-wrong" })
      local r, err = bad:execute_code("bash", "true")
      bad:close()
      assert.is_nil(r)
      assert.are.equal(401, err.status)
      assert.is_string(err.message)
      assert.matches("^req_", err.request_id)
      assert.not_matches("unsb%-sk", tostring(err))
    end)

    it("a skewed clock is a 401 whose message mentions the timestamp", function()
      -- libfaketime and the AddressSanitizer runtime, both preloaded into
      -- one lua5.4, deadlock at start-up (make sanitize preloads the latter)
      if os.getenv("UNSB_SANITIZE") then return pending("faketime cannot run with the ASan runtime") end
      local out, code = proc.run("faketime -f '-1h' lua5.4 -e " .. proc.quote([[
        local u = require "unsandbox"
        local r, err = u.execute_code("bash", "true")
        print(err.status, err.message)]]),
        { LUA_PATH = proc.LUA_ENV.LUA_PATH, LUA_CPATH = proc.LUA_ENV.LUA_CPATH,
          UNSANDBOX_URL = srv.url, UNSANDBOX_PUBLIC_KEY = srv.public_key,
          UNSANDBOX_SECRET_KEY = srv.secret_key })
      assert.are.equal(0, code, out)
      assert.matches("401", out)
      assert.matches("timestamp", out)
    end)

    it("no credentials anywhere is a credentials error naming each place", function()
      local home = server.tmpdir("unsb-home")
      local out = proc.lua([[
        local u = require "unsandbox"
        local r, err = u.execute_code("bash", "true")
        print(err.kind, err.message)]],
        { HOME = home, UNSANDBOX_URL = srv.url, UNSANDBOX_PUBLIC_KEY = false,
          UNSANDBOX_SECRET_KEY = false, UNSANDBOX_ACCOUNT = false })
      server.rm_rf(home)
      assert.matches("^credentials", out)
      assert.matches("UNSANDBOX_PUBLIC_KEY", out)
      assert.matches(home .. "/.unsandbox/accounts.csv", out, 1, true)
      assert.matches("accounts.csv", out)
    end)

    it("environment keys win over accounts.csv; UNSANDBOX_ACCOUNT picks the row", function()
      local home = server.tmpdir("unsb-home")
      os.execute("mkdir -p " .. home .. "/.unsandbox")
      local f = assert(io.open(home .. "/.unsandbox/accounts.csv", "w"))
      f:write("# first row is stale\r\nunsb-pk-old,unsb-sk-old,comment\r\n",
              srv.public_key, ",", srv.secret_key, ",laptop\r\n")
      f:close()
      local script = [[
        local u = require "unsandbox"
        local r, err = u.execute_code("bash", "echo ok")
        print(r and r.stdout or err.status, u.credentials().source)]]
      local out = proc.lua(script, { HOME = home, UNSANDBOX_URL = srv.url, UNSANDBOX_ACCOUNT = "1",
        UNSANDBOX_PUBLIC_KEY = false, UNSANDBOX_SECRET_KEY = false })
      assert.matches("^ok", out)
      assert.matches("accounts.csv", out)
      out = proc.lua(script, { HOME = home, UNSANDBOX_URL = srv.url, UNSANDBOX_ACCOUNT = "0",
        UNSANDBOX_PUBLIC_KEY = srv.public_key, UNSANDBOX_SECRET_KEY = srv.secret_key })
      assert.matches("^ok", out)
      assert.matches("environment", out)
      out = proc.lua(script, { HOME = home, UNSANDBOX_URL = srv.url, UNSANDBOX_ACCOUNT = "0",
        UNSANDBOX_PUBLIC_KEY = false, UNSANDBOX_SECRET_KEY = false })
      assert.matches("^401", out)
      out = proc.lua([[print(select(2, require("unsandbox").credentials()).message)]],
        { HOME = home, UNSANDBOX_ACCOUNT = "7", UNSANDBOX_PUBLIC_KEY = false, UNSANDBOX_SECRET_KEY = false })
      assert.matches("7", out)
      assert.matches("accounts.csv", out)
      server.rm_rf(home)
    end)
  end)

  describe("transport", function()
    it("a server that is not listening is a transport error", function()
      local port = srv.port + 1 == 65536 and 1 or srv.port + 1
      local dead = unsandbox.client { url = "http://127.0.0.1:" .. port,
        public_key = "p", secret_key = "s", connect_timeout = 2 }
      local r, err = dead:execute_code("bash", "true")
      dead:close()
      assert.is_nil(r)
      assert.are.equal("transport", err.kind)
      assert.matches("127.0.0.1", err.message)
    end)
  end)

  describe("sessions and snapshots", function()
    it("runs commands in a persistent session, snapshots and restores it", function()
      local s = assert(c:create_session())
      assert.matches("^unsb%-session%-", s.id)
      local r = assert(c:session_execute(s.id, "echo one > state.txt"))
      assert.are.equal(0, r.exit_code)
      assert.are.equal("one\n", assert(c:session_execute(s.id, "cat state.txt")).stdout)

      local listed = false
      for _, x in ipairs(assert(c:list_sessions())) do listed = listed or x.id == s.id end
      assert.is_true(listed)
      assert.are.equal(s.id, assert(c:get_session(s.id)).id)

      local snap = assert(c:session_snapshot(s.id, { name = "before" }))
      assert.are.equal("before", assert(c:get_snapshot(snap.id)).name)
      assert(c:session_execute(s.id, "echo two > state.txt; touch extra"))
      assert(c:restore_snapshot(snap.id))
      assert.are.equal("one\n", assert(c:session_execute(s.id, "cat state.txt")).stdout)
      assert.are.equal(1, assert(c:session_execute(s.id, "test -e extra")).exit_code)

      local found = false
      for _, x in ipairs(assert(c:list_snapshots())) do found = found or x.id == snap.id end
      assert.is_true(found)
      assert(c:lock_snapshot(snap.id))
      local ok, err = c:delete_snapshot(snap.id)
      assert.is_nil(ok)
      assert.are.equal(409, err.status)
      assert(c:unlock_snapshot(snap.id))
      assert(c:delete_snapshot(snap.id))
      assert.are.equal(404, select(2, c:get_snapshot(snap.id)).status)

      assert(c:delete_session(s.id))
      assert.are.equal(404, select(2, c:get_session(s.id)).status)
    end)
  end)

  describe("sudo challenges", function()
    it("a deletion answers 428 with a challenge, then goes through with the one-time password", function()
      local s = assert(c:create_session())
      local snap = assert(c:session_snapshot(s.id))
      arm { mode = "sudo", otp = "424242", count = 1, path = "/snapshots/" }

      local ok, err = c:delete_snapshot(snap.id)
      assert.is_nil(ok)
      assert.are.equal(428, err.status)
      assert.matches("^chal_%x+$", err.challenge_id)

      ok, err = c:delete_snapshot(snap.id, { challenge_id = err.challenge_id, otp = "000000" })
      assert.is_nil(ok)
      assert.are.equal(403, err.status)
      assert.are.equal("invalid_otp", err.code)

      local asked
      ok, err = c:delete_snapshot(snap.id, { on_sudo = function(e) asked = e.challenge_id; return "" end })
      assert.is_nil(ok)
      assert.are.equal(428, err.status)
      assert.are.equal(asked, err.challenge_id)
      assert.is_not_nil(assert(c:get_snapshot(snap.id)).id)

      assert(c:delete_snapshot(snap.id, { on_sudo = function() return "424242" end }))
      assert.are.equal(404, select(2, c:get_snapshot(snap.id)).status)
      -- the armed challenge is used up: the next deletion needs none
      assert(c:delete_session(s.id))
    end)
  end)

  describe("services", function()
    it("keeps a bootstrap running, executes commands in it and snapshots it", function()
      local svc = assert(c:create_service { name = "web",
        bootstrap = "echo data > served.txt; echo started; sleep 600" })
      assert.matches("^unsb%-service%-", svc.id)
      local got = assert(c:get_service(svc.id))
      assert.are.equal("running", got.status)
      -- the bootstrap says when its file is there: "started" in its log
      local log = ""
      wait.eventually(function()
        log = assert(c:service_logs(svc.id))
        return log:find("started", 1, true)
      end)
      assert.matches("started", log)
      local r = assert(c:service_execute(svc.id, "cat served.txt"))
      assert.are.equal("data\n", r.stdout)
      local listed = false
      for _, x in ipairs(assert(c:list_services())) do listed = listed or x.id == svc.id end
      assert.is_true(listed)
      local snap = assert(c:service_snapshot(svc.id))
      assert.are.equal("service", assert(c:get_snapshot(snap.id)).source_type)
      assert(c:delete_snapshot(snap.id))
      assert(c:delete_service(svc.id))
      assert.are.equal(404, select(2, c:get_service(svc.id)).status)
    end)
  end)

  describe("module functions", function()
    it("use the default client configured from the environment", function()
      local out, code = proc.lua([[
        local u = require "unsandbox"
        local r = assert(u.execute_code("lua", "print(6 * 7)"))
        io.write(r.stdout)
        print(u.credentials().source)]],
        { UNSANDBOX_URL = srv.url, UNSANDBOX_PUBLIC_KEY = srv.public_key,
          UNSANDBOX_SECRET_KEY = srv.secret_key })
      assert.are.equal(0, code, out)
      assert.are.equal("42\nenvironment\n", out)
    end)

    it("accept per-call url and keys", function()
      local r = assert(unsandbox.execute_code("bash", "echo per-call", srv.client_opts()))
      assert.are.equal("per-call\n", r.stdout)
    end)
  end)
end)

describe("concurrency limit #integration", function()
  it("a full queue is a 429 error with retry_after", function()
    local srv = server.start { args = { "--workers", "1", "--queue", "1" } }
    local c = unsandbox.client(srv.client_opts())
    local ids, err = {}, nil
    for _ = 1, 4 do
      local id, e = c:execute_async("bash", "sleep 5", { ttl = 10 })
      if id then ids[#ids + 1] = id else err = e; break end
    end
    for _, id in ipairs(ids) do c:cancel_job(id) end
    c:close()
    srv.stop()
    assert.is_not_nil(err)
    assert.are.equal(429, err.status)
    assert.are.equal("concurrency_limit_reached", err.code)
    assert.are.equal(1, err.retry_after)
  end)
end)

describe("execute_many() #integration", function()
  local srv, c
  setup(function()
    srv = server.start { args = { "--workers", "4" } }
    c = unsandbox.client(srv.client_opts())
  end)
  teardown(function()
    c:close()
    srv.stop()
  end)

  it("runs programs at once and returns their results in order", function()
    local polled = {}
    local results, errors = c:execute_many({
      { "bash", "sleep 1; echo one" },
      { "python", "import time; time.sleep(1); print('two')" },
      { "lua", "print('three')", { env = { X = "1" } } },
    }, { timeout = 30, on_poll = function(_, attempt, i) polled[i] = attempt end })
    assert.same({}, errors)
    assert.are.equal("one\n", results[1].stdout)
    assert.are.equal("two\n", results[2].stdout)
    assert.are.equal("three\n", results[3].stdout)
    assert.is_number(polled[1])
    -- that all are submitted before any is polled is proven by the order
    -- of requests a recording server sees (hostile_spec.lua)
  end)

  it("reports per program what could not run, and still runs the rest", function()
    local results, errors = c:execute_many {
      { "bash", "echo fine" },
      { "brainfuck", "+" },
      { "python", "x", { input_files = { "/nonexistent/in.txt" } } },
    }
    assert.are.equal("fine\n", results[1].stdout)
    assert.are.equal(400, errors[2].status)
    assert.are.equal("validation", errors[3].kind)
    assert.is_nil(results[2])
    assert.is_nil(errors[1])
  end)

  it("times out the programs still running at its deadline", function()
    local results, errors = c:execute_many({ { "bash", "echo quick" }, { "bash", "sleep 20", { ttl = 30 } } },
      { timeout = 2 })
    assert.are.equal("quick\n", results[1].stdout)
    assert.are.equal("timeout", errors[2].kind)
  end)

  it("raises for misuse", function()
    assert.has_error(function() c:execute_many("bash") end)
    assert.has_error(function() c:execute_many { { "bash" } } end)
    assert.has_error(function() c:execute_many { "bash" } end)
    assert.has_error(function() c:execute_many({ { "bash", "true", { timeout = 1 } } }) end)
    assert.has_error(function() c:execute_many({}, { bogus = true }) end)
  end)
end)
