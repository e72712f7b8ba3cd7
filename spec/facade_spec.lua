-- #integration specs of what a new user trips over in the facade (issue
-- 13), against a real unsandboxd: one return value on success with the
-- request id in the result, the jobs sample's semantics (active jobs only,
-- a finished job cannot be cancelled), errors that concatenate.
local unsandbox = require "unsandbox"
local server = require "spec.helpers.unsandboxd"
local wait = require "spec.helpers.wait"
local lua = require "spec.helpers.lua"

describe("facade #integration", function()
  local srv, c

  setup(function()
    srv = server.start { args = { "--sync-ms", "200" } }   -- long runs become jobs at once
    c = unsandbox.client(srv.client_opts())
  end)
  teardown(function()
    if c then c:close() end
    if srv then srv.stop() end
  end)

  -- how many values a call returned
  local function count(...) return select("#", ...), ... end

  describe("success returns one value", function()
    it("for runs, jobs, lists, languages, keys, health and call", function()
      local n, id = count(c:execute_async("bash", "echo hi"))
      assert.equal(1, n)
      assert.is_string(id)
      local r
      n, r = count(c:wait_for_job(id, { timeout = 60 }))
      assert.equal(1, n)
      assert.matches("^req_", r.request_id)
      n, r = count(c:get_job(id))
      assert.equal(1, n)
      assert.equal("hi\n", r.stdout)
      n, r = count(c:execute_code("bash", "echo x"))
      assert.equal(1, n)
      assert.matches("^req_", r.request_id)
      n, r = count(c:execute_code("bash", "sleep 0.5; echo later"))   -- a job, polled
      assert.equal(1, n)
      assert.equal("later\n", r.stdout)
      assert.equal(1, (count(c:list_jobs())))
      assert.equal(1, (count(c:get_languages())))
      assert.equal(1, (count(c:list_sessions())))
      assert.equal(1, (count(c:list_snapshots())))
      n, r = count(c:health())
      assert.equal(1, n)
      assert.is_true(r)
      n, r = count(c:validate_keys())
      assert.equal(1, n)
      assert.matches("^req_", r.request_id)
      n, r = count(c:call("GET", "/jobs"))
      assert.equal(1, n)
      assert.matches("^req_", r.request_id)
    end)

    it("for sessions, snapshots and their deletion", function()
      local n, s = count(c:create_session())
      assert.equal(1, n)
      assert.matches("^req_", s.request_id)
      local r
      n, r = count(c:session_execute(s.id, "echo 1"))
      assert.equal(1, n)
      assert.equal("1\n", r.stdout)
      local snap
      n, snap = count(c:session_snapshot(s.id))
      assert.equal(1, n)
      n, r = count(c:get_snapshot(snap.id))
      assert.equal(1, n)
      assert.matches("^req_", r.request_id)
      n = count(c:delete_snapshot(snap.id))
      assert.equal(1, n)
      n, r = count(c:delete_session(s.id))
      assert.equal(1, n)
      assert.truthy(r)
    end)

    it("for a service's logs: the log text alone", function()
      local svc = assert(c:create_service { name = "logs", bootstrap = "echo started; sleep 600" })
      local log
      wait.eventually(function()
        log = assert(c:service_logs(svc.id))
        return log:find("started")
      end)
      assert.equal(1, (count(c:service_logs(svc.id))))
      assert.matches("started", log)
      assert(c:delete_service(svc.id))
    end)

    it("failure is still nil and an Error", function()
      local n, r, err = count(c:get_job("job_unknown"))
      assert.equal(2, n)
      assert.is_nil(r)
      assert.equal(404, err.status)
    end)
  end)

  describe("numbers", function()
    -- cjson decodes every JSON number as a float; the one transport gives
    -- whole numbers back as integers, for every route alike (no field is
    -- patched on its own), so they print as 68, not 68.0
    it("whole numbers are integers in every document", function()
      local k = assert(c:validate_keys())
      assert.equal("integer", lua.math_type(k.tier))
      assert.equal("integer", lua.math_type(k.rate_per_minute))
      local r = assert(c:execute_code("bash", "exit 3"))
      assert.equal("integer", lua.math_type(r.exit_code))
      assert.equal("integer", lua.math_type(r.created_at))
      local s = assert(c:create_session())
      local g = assert(c:get_session(s.id))
      assert.equal("integer", lua.math_type(g.ttl))
      assert.equal("integer", lua.math_type(g.vcpu))
      assert.equal("3600", tostring(g.ttl))
      assert(c:delete_session(s.id))
      local doc = assert(c:call("GET", "/jobs/" .. r.job_id))
      assert.equal("integer", lua.math_type(doc.exit_code))
    end)
  end)

  describe("jobs", function()
    it("list_jobs() lists active jobs only; cancel_job() of a finished job is a 409", function()
      local done = assert(c:execute_async("bash", "echo done"))
      assert(c:wait_for_job(done, { timeout = 60 }))
      local long = assert(c:execute_async("bash", "sleep 30", { ttl = 60 }))
      local ids = {}
      for _, job in ipairs(assert(c:list_jobs())) do ids[job.job_id] = job.status end
      assert.is_nil(ids[done])
      assert.truthy(ids[long] == "pending" or ids[long] == "running")
      assert.equal("cancelled", assert(c:cancel_job(long)).status)
      local r, err = c:cancel_job(done)
      assert.is_nil(r)
      assert.equal("http", err.kind)
      assert.equal(409, err.status)
      assert.equal("job_finished", err.code)
    end)
  end)

  describe("giving up a wait", function()
    it("execute_code()'s own timeout cancels the job it started and names it", function()
      local r, err = c:execute_code("bash", "sleep 120", { ttl = 200, timeout = 1.5 })
      assert.is_nil(r)
      assert.equal("timeout", err.kind)
      assert.is_string(err.job_id)
      assert.is_true(err.cancelled)
      assert.equal("cancelled", assert(c:get_job(err.job_id)).status)
    end)

    it("wait_for_job()'s timeout names the caller's job and leaves it running", function()
      local id = assert(c:execute_async("bash", "sleep 120", { ttl = 200 }))
      local r, err = c:wait_for_job(id, { timeout = 1 })
      assert.is_nil(r)
      assert.equal("timeout", err.kind)
      assert.equal(id, err.job_id)
      assert.is_nil(err.cancelled)
      local job = assert(c:get_job(id))
      assert.truthy(job.status == "running" or job.status == "pending", job.status)
      assert(c:cancel_job(id))
    end)

    it("execute_many()'s deadline cancels the jobs still running", function()
      local out, errors = c:execute_many({ { "bash", "echo quick" }, { "bash", "sleep 120", { ttl = 200 } } },
        { timeout = 3 })
      assert.equal("quick\n", out[1] and out[1].stdout)
      assert.equal("timeout", errors[2].kind)
      assert.is_true(errors[2].cancelled)
      assert.equal("cancelled", assert(c:get_job(errors[2].job_id)).status)
    end)
  end)

  describe("Error", function()
    it("concatenates on either side like tostring", function()
      local _, err = c:get_job("job_unknown")
      assert.equal("failed: " .. tostring(err), "failed: " .. err)
      assert.equal(tostring(err) .. "!", err .. "!")
      assert.matches("^failed: unsandbox: http 404", "failed: " .. err)
    end)
  end)
end)
