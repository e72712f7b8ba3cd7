-- #integration: GET /metrics of the execution API through a real
-- unsandboxd: Prometheus text that parses line by line, no key needed,
-- request counters by route pattern and status (a 401 counted as
-- unauthenticated), runs by language and outcome with a latency
-- histogram whose buckets are cumulative, jobs' waits in the run queue
-- and its slots, job and sandbox gauges, and the pool's gauges when it
-- has one.
local unsandbox = require "unsandbox"
local server = require "spec.helpers.unsandboxd"
local rawhttp = require "spec.helpers.rawhttp"
local wait = require "spec.helpers.wait"

-- Fetches /metrics without any key; returns {["name{labels}"] = value}
-- and the raw text. Every line must be a comment or `name{labels} value`.
local function scrape(srv)
  local s = rawhttp.connect(srv, 10)
  assert(s:send(rawhttp.head("GET", "/metrics", { Host = "127.0.0.1", Connection = "close" })))
  local status, h, body = rawhttp.read_response(s)
  s:close()
  assert.equal(200, status, body)
  assert.matches("^text/plain; version=0.0.4", h["content-type"])
  local m = {}
  for line in body:gmatch("[^\n]+") do
    if not line:match("^# HELP %S+ .+$") and not line:match("^# TYPE %S+ %a+$") then
      local key, value = line:match("^([%a_:][%w_:]*{?[^}]*}?) (%S+)$")
      assert(key and tonumber(value), "not a Prometheus sample line: " .. line)
      m[key] = tonumber(value)
    end
  end
  return m, body
end

describe("unsandboxd /metrics #integration", function()
  local srv, c
  setup(function()
    srv = server.start { args = { "--pool", "1", "--pool-shapes", "bash" } }
    c = unsandbox.client(srv.client_opts())
  end)
  teardown(function()
    if c then c:close() end
    if srv then srv.stop() end
  end)

  it("counts requests, runs by language and outcome, and run times", function()
    local before = scrape(srv)
    local runs = 'unsandboxd_runs_total{language="bash",outcome="completed"}'
    local timeouts = 'unsandboxd_runs_total{language="bash",outcome="timeout"}'
    local ok_exec = 'unsandboxd_requests_total{route="/execute",status="200"}'
    assert(c:execute_code("bash", "echo one"))
    assert(c:execute_code("bash", "exit 3"))      -- completed, with its own exit code
    local r = assert(c:execute_code("bash", "sleep 30", { ttl = 1 }))
    assert.equal("timeout", r.status)
    local after, text = scrape(srv)
    assert.equal((before[runs] or 0) + 2, after[runs])
    assert.equal((before[timeouts] or 0) + 1, after[timeouts])
    assert.equal((before[ok_exec] or 0) + 3, after[ok_exec])
    local count = after["unsandboxd_run_duration_seconds_count"]
    assert.equal((before["unsandboxd_run_duration_seconds_count"] or 0) + 3, count)
    assert.equal(count, after['unsandboxd_run_duration_seconds_bucket{le="+Inf"}'])
    -- the timed-out run took about a second: it is above the 0.5 s bucket
    assert.is_true(after['unsandboxd_run_duration_seconds_bucket{le="0.5"}'] <= count - 1)
    assert.is_true(after["unsandboxd_run_duration_seconds_sum"] >= 0.9)
    -- buckets are cumulative
    local last = -1
    for le, n in text:gmatch('unsandboxd_run_duration_seconds_bucket{le="([^"]+)"} (%d+)') do
      assert.is_true(tonumber(n) >= last, "bucket " .. le .. " below the one before")
      last = tonumber(n)
    end
  end)

  it("counts every job's wait in the run queue, and shows its slots (one per core by default)", function()
    local before = scrape(srv)
    assert(c:execute_code("bash", "true"))
    assert(c:execute_code("bash", "true"))
    local after, text = scrape(srv)
    local count = after["unsandboxd_job_wait_seconds_count"]
    assert.equal((before["unsandboxd_job_wait_seconds_count"] or 0) + 2, count)
    assert.equal(count, after['unsandboxd_job_wait_seconds_bucket{le="+Inf"}'])
    assert.is_true(after["unsandboxd_job_wait_seconds_sum"] >= 0)
    local last = -1
    for le, n in text:gmatch('unsandboxd_job_wait_seconds_bucket{le="([^"]+)"} (%d+)') do
      assert.is_true(tonumber(n) >= last, "bucket " .. le .. " below the one before")
      last = tonumber(n)
    end
    local p = io.popen("nproc")
    local cores = tonumber(p:read("a"))
    p:close()
    assert.equal(cores, after["unsandboxd_start_slots"])
    assert.equal(0, after["unsandboxd_jobs_starting"])   -- both jobs have ended
  end)

  it("counts refusals: no key, an unknown route, a bad id", function()
    local before = scrape(srv)
    local s = rawhttp.connect(srv, 10)
    assert(s:send(rawhttp.head("GET", "/jobs", { Host = "127.0.0.1", Connection = "close" })))
    assert.equal(401, (rawhttp.read_response(s)))
    s:close()
    assert.is_nil(c:call("GET", "/no/such/route"))
    local after = scrape(srv)
    local function moved(key) return (after[key] or 0) - (before[key] or 0) end
    assert.equal(1, moved('unsandboxd_requests_total{route="unauthenticated",status="401"}'))
    assert.equal(1, moved('unsandboxd_requests_total{route="unmatched",status="404"}'))
  end)

  it("reports jobs, live sandboxes and the pool as gauges", function()
    local job_id = assert(c:execute_async("bash", "sleep 3"))
    local m
    -- the job counts as running from when a worker takes it, its sandbox
    -- as live from the program's release
    wait.eventually(function()
      m = scrape(srv)
      return m["unsandboxd_jobs_running"] == 1 and (m["unsandboxd_sandboxes_live"] or 0) >= 1
    end, 20)
    assert.equal(1, m["unsandboxd_jobs_running"])
    assert.is_true(m["unsandboxd_sandboxes_live"] >= 1)
    assert.equal(0, m["unsandboxd_jobs_queued"])
    assert.is_not_nil(m['unsandboxd_pool_ready{language="bash",network_mode="zerotrust"}'])
    assert.is_true(m['unsandboxd_pool_runs_total{found="ready"}'] +
                   m['unsandboxd_pool_runs_total{found="none"}'] >= 3)
    assert(c:cancel_job(job_id))
  end)

  it("answers POST with 405 (no key needed for the path, as for /health)", function()
    local s = rawhttp.connect(srv, 10)
    assert(s:send(rawhttp.head("POST", "/metrics", { Host = "127.0.0.1", Connection = "close",
                                                     ["Content-Length"] = "0" })))
    local status = rawhttp.read_response(s)
    s:close()
    assert.equal(405, status)
    local m = scrape(srv)
    assert.is_not_nil(m["unsandboxd_jobs_queued"])
  end)
end)
