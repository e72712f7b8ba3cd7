-- #integration: what every call promises, against a real unsandboxd with
-- fault injection. Its deadline covers it whole: a job it may have made
-- is known, cancelled and named when the deadline fires, and the message
-- counts the whole call; an id the service does not know is its 404
-- whatever the timeout; `timing` is on every result and error, lists and
-- low-level calls included, and adds up over retries and polls (its
-- exchanges are the hook's events); connection options given to a module
-- function are honoured, never silently dropped.
local unsandbox = require "unsandbox"
local server = require "spec.helpers.unsandboxd"
local proc = require "spec.helpers.proc"
local lua = require "spec.helpers.lua"

describe("every call #integration", function()
  local srv, c

  local function arm(fault)
    return assert(c:call("POST", "/_faults", fault))
  end

  -- The hook's events during fn(), and what fn returned.
  local function watched(fn)
    local events = {}
    local prev = unsandbox.on_request(function(ev) events[#events + 1] = ev end)
    local r = lua.pack(fn())
    unsandbox.on_request(prev)
    return events, lua.unpack(r, 1, r.n)
  end

  setup(function()
    srv = server.start { args = { "--enable-faults" } }
    c = unsandbox.client(srv.client_opts())
  end)
  teardown(function()
    if c then c:close() end
    if srv then srv.stop() end
  end)
  after_each(function() c:call("POST", "/_faults", { mode = "off" }) end)

  describe("deadline", function()
    it("of execute_code covers the whole call: the job is known, cancelled and named", function()
      local events, r, err = watched(function()
        return c:execute_code("bash", "sleep 30", { timeout = 4 })
      end)
      assert.is_nil(r)
      assert.same({ "timeout", true }, { err.kind, err.cancelled })
      assert.matches("^job_", err.job_id)
      -- the message tells the call's own time, not what was left of it
      assert.matches("still not finished after 4 s", err.message)
      -- a deadline shorter than a synchronous answer may take: a job
      -- submitted, polled, then cancelled
      assert.same({ "POST", "/execute/async" }, { events[1].method, events[1].path })
      assert.same({ "DELETE", "/jobs/" .. err.job_id }, { events[#events].method, events[#events].path })
      assert.equal("cancelled", assert(c:get_job(err.job_id)).status)
      for _, j in ipairs(assert(c:list_jobs())) do assert.are_not.equal(err.job_id, j.job_id) end
      assert.equal(#events, err.timing.exchanges)
    end)

    it("leaves a synchronous answer to a call that has the time for one", function()
      local events, r = watched(function() return c:execute_code("bash", "echo sync") end)
      assert.equal("sync\n", r.stdout)
      assert.same({ "POST", "/execute" }, { events[1].method, events[1].path })
      assert.equal(1, #events)
    end)

    it("unknown ids are 404 whatever the timeout", function()
      for _, timeout in ipairs { 0.05, 3 } do
        local r, err = c:wait_for_job("job_nope", { timeout = timeout })
        assert.is_nil(r)
        assert.same({ "http", 404 }, { err.kind, err.status }, "timeout " .. timeout)
        assert.not_matches("still not finished", err.message)
      end
    end)
  end)

  describe("timing", function()
    it("adds up over retries: exchanges, the waits between them, the whole time", function()
      local retrying = unsandbox.client(srv.client_opts { retry = { max = 3 } })
      finally(function() retrying:close() end)
      arm { mode = "status", status = 429, count = 4, path = "/jobs" }
      local events, r, err = watched(function() return retrying:call("GET", "/jobs") end)
      assert.is_nil(r)
      assert.same({ 429, 4, 4, 4 }, { err.status, err.attempts, #events, err.timing.exchanges })
      -- three Retry-After: 1 waits
      assert.is_true(err.timing.retry_wait_ms >= 2900, "retry_wait_ms " .. err.timing.retry_wait_ms)
      assert.is_true(err.timing.total_ms >= err.timing.retry_wait_ms + err.timing.server_ms)
    end)

    it("adds up over a job's polls", function()
      arm { mode = "defer", path = "/execute" }
      local events, r = watched(function() return c:execute_code("bash", "sleep 1; echo polled") end)
      assert.equal("polled\n", r.stdout)
      assert.equal(#events, r.timing.exchanges)
      assert.equal(#events - 1, r.timing.polls)
    end)

    it("is on lists and low-level documents too", function()
      local id = assert(c:execute_async("bash", "sleep 5", { ttl = 10 }))
      for _, list in ipairs { assert(c:list_jobs()), assert(c:list_sessions()), assert(c:list_snapshots()) } do
        assert.equal(1, list.timing.exchanges)
      end
      assert.equal(1, assert(c:call("GET", "/jobs")).timing.exchanges)
      assert.equal(1, assert(c:cancel_job(id)).timing.exchanges)
    end)

    it("is on the Manager's results and errors, over every exchange of a call", function()
      local m = unsandbox.manager { url = srv.cp_url, token = srv.token, env = {} }
      finally(function() m:close() end)
      local events, rt = watched(function() return m:ensure_runtime("timing") end)
      assert.is_true(#events >= 2)   -- the workspace, then the runtime
      assert.equal(#events, rt.timing.exchanges)
      local list = assert(m:list_workspaces())
      assert.equal(1, list.timing.exchanges)
      local bad = unsandbox.manager { url = srv.cp_url, token = "sk_nope", env = {} }
      finally(function() bad:close() end)
      local _, err = bad:whoami()
      assert.same({ 401, 1 }, { err.status, err.timing.exchanges })
      assert(m:release_runtime("timing"))
    end)
  end)

  describe("connection options of module functions", function()
    it("are honoured by health and list_jobs, not dropped for the default client's", function()
      -- the default client points at a closed port
      local out, code = proc.lua(string.format([[
        local u = require "unsandbox"
        print(u.health { url = %q })
        print(#assert(u.list_jobs { url = %q, public_key = %q, secret_key = %q }))
        local ok, err = u.health()
        print(ok, err.kind)]], srv.url, srv.url, srv.public_key, srv.secret_key),
        { UNSANDBOX_URL = "http://127.0.0.1:9", UNSANDBOX_PUBLIC_KEY = "unsb-pk-x",
          UNSANDBOX_SECRET_KEY = "unsb-sk-x" })
      assert.equal(0, code, out)
      assert.matches("^true\n%d+\nnil\ttransport\n$", out)
    end)
  end)
end)
