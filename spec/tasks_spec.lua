-- #integration specs of the scheduler against a real
-- unsandboxd: many tasks running jobs at once on one client, step(0)
-- against a server that holds its reply, cancellation mid-transfer,
-- mid-stream and mid-job (the server's own counters prove nothing is left
-- behind), errors isolated to their task, and per-task context (acting
-- subject, trace) checked on the Control Plane's side. Every loop here is
-- bounded in count and in time.
local unsandbox = require "unsandbox"
local server = require "spec.helpers.unsandboxd"
local cp = require "spec.helpers.cp"
local core = require "unsandbox.core"
local fs = require "spec.helpers.fs"
local wait = require "spec.helpers.wait"
local lua = require "spec.helpers.lua"

local SUBJ_A = string.rep("a", 32)
local SUBJ_B = string.rep("b", 32)

describe("tasks #integration", function()
  local srv, c

  local function arm(fault)
    return assert(c:call("POST", "/_faults", fault))
  end

  local function stats()
    return assert(c:call("GET", "/_faults/stats"))
  end

  -- Drives the loop as a host would (step(50)) until pred() holds, at
  -- most 20 s: wait.eventually with a step of the loop between two looks
  -- (with no task left, step() returns at once and the look's pause waits).
  local function step_until(pred)
    return wait.eventually(function()
      if pred() then return true end
      unsandbox.step(50)
      return pred() and true
    end, 20, 0.01) == true
  end

  setup(function()
    srv = server.start { args = { "--enable-faults", "--workers", "8" } }
    c = unsandbox.client(srv.client_opts())
  end)
  teardown(function()
    if c then c:close() end
    if srv then srv.stop() end
  end)
  after_each(function()
    -- no test leaves a task behind for the next
    assert.is_true((unsandbox.run(60)))
    -- nor a timer (a poll's sleep, a retry's backoff) on the loop
    assert.equal(0, core.loop_stats().timers)
    c:call("POST", "/_faults", { mode = "off" })
  end)

  it("runs 50 tasks, each a job, and each gets its own output", function()
    local ts = {}
    for i = 1, 50 do
      ts[i] = unsandbox.spawn(function(n)
        return c:execute_code("bash", "echo task-" .. n)
      end, i)
    end
    assert.is_true((unsandbox.run(240)))
    for i, t in ipairs(ts) do
      assert.equal("done", t:status())
      local r, err = t:result()
      assert.is_nil(err)
      assert.equal("task-" .. i .. "\n", r.stdout)
    end
  end)

  it("step(0) never blocks while the server holds a reply", function()
    arm { mode = "latency", ms = 5000, path = "/jobs" }
    local t = unsandbox.spawn(function() return c:list_jobs() end)
    assert.is_true(step_until(function() return stats().delaying == 1 end))
    -- a frame loop: every step(0) returns while the server still holds the
    -- reply (a step that waited for it would have seen it released)
    for _ = 1, 20 do
      unsandbox.step(0)
      core.sleep(5)          -- the host's own frame work
    end
    assert.is_false(t:done())
    assert.equal(1, stats().delaying)
    assert.is_true(step_until(function() return t:done() end))
    assert.is_table((t:result()))
  end)

  it("cancel() mid-transfer closes the call; the client goes on working", function()
    arm { mode = "latency", ms = 5000, path = "/jobs" }
    local t = unsandbox.spawn(function() return c:list_jobs() end)
    -- the server holds the request: the transfer is in flight
    assert.is_true(step_until(function() return stats().delaying == 1 end))
    assert.is_true(t:cancel())
    assert.is_false(t:cancel())
    assert.equal("cancelled", t:status())
    local r, err = t:result()
    assert.is_nil(r)
    -- the shape of every interruption; no job of its own to name
    assert.same({ "interrupted", 499 }, { err.kind, err.status })
    assert.is_nil(err.job_id)
    -- it did not wait for the reply: the server still holds it
    assert.equal(1, stats().delaying)
    assert.is_table((c:list_jobs()))
  end)

  it("cancel() mid-stream: the server sees the client leave", function()
    local before = stats()
    local pieces = 0
    local t = unsandbox.spawn(function()
      local x = assert(c:_open("POST", "/_faults/stream", '{"chunks":200,"ms":50,"size":16}',
        { mode = "sse" }))
      while true do
        local got, done = x:step(1000)
        pieces = pieces + #(got or {})
        if done then return "ended" end
      end
    end)
    assert.is_true(step_until(function() return pieces >= 2 end))
    assert.is_true(t:cancel())
    assert.is_true(step_until(function() return stats().streams_gone > before.streams_gone end))
    local after = stats()
    assert.equal(before.streams_completed, after.streams_completed)
    assert.equal("cancelled", t:status())
    -- a stream the task opened but is not waiting on is closed too
    local opened
    t = unsandbox.spawn(function()
      opened = assert(c:_open("POST", "/_faults/stream", '{"chunks":200,"ms":50,"size":16}',
        { mode = "sse" }))
      core.sleep(60000)
    end)
    assert.is_true(step_until(function() return stats().streams_started > after.streams_started end))
    assert.is_true(t:cancel())
    assert.is_true(step_until(function() return stats().streams_gone > after.streams_gone end))
    assert.error_matches(function() opened:step(0) end, "closed Transfer")
  end)

  it("cancel() mid-job cancels the remote job too", function()
    local id
    local t = unsandbox.spawn(function()
      local jid = assert(c:execute_async("bash", "sleep 30", { ttl = 60 }))
      id = jid
      return c:wait_for_job(jid, { timeout = 60 })
    end)
    assert.is_true(step_until(function() return id ~= nil end))
    assert.is_true(step_until(function()
      local j = c:get_job(id)
      return j and j.status == "running"
    end))
    t:cancel()
    local _, err = t:result()
    assert.same({ "interrupted", id, false }, { err.kind, err.job_id, err.cancelled })
    -- the cleanup (DELETE /jobs/id) runs as a task of its own; the task's
    -- error says so once it answered
    assert.is_true((unsandbox.run(20)))
    assert.is_true(err.cancelled)
    local j = assert(c:get_job(id))
    assert.equal("cancelled", j.status)
    local active = assert(c:list_jobs())
    for _, a in ipairs(active) do assert.are_not.equal(id, a.job_id) end
  end)

  it("Ctrl-C under unlua cancels every task and their jobs", function()
    local dir = fs.tmpdir("unsb-ctrlc")
    local script, out, status = dir .. "/run.lua", dir .. "/out", dir .. "/status"
    fs.write(script, string.format([[
local u = require "unsandbox"
local c = u.client { url = %q, public_key = %q, secret_key = %q }
for i = 1, 4 do
  u.spawn(function()
    local id = assert(c:execute_async("bash", "sleep 30", { ttl = 60 }))
    io.stdout:write("JOB=", id, "\n"); io.stdout:flush()
    return c:wait_for_job(id, { timeout = 60 })
  end)
end
local ok, err = u.run(90)
print("RUN", ok, err and err.kind)
]], srv.url, srv.public_key, srv.secret_key))
    os.execute(string.format("(bin/unlua %s >%s 2>&1 & echo $! >%s/pid; wait $!; echo $? >%s) >/dev/null 2>&1 &",
      fs.quote(script), fs.quote(out), fs.quote(dir), fs.quote(status)))
    local function jobs()
      local ids = {}
      for id in (fs.read(out) or ""):gmatch("JOB=(%S+)") do ids[#ids + 1] = id end
      return ids
    end
    assert.is_true(step_until(function() return #jobs() == 4 and (fs.read(dir .. "/pid") or ""):match("%d") end))
    local pid = tonumber(fs.read(dir .. "/pid"))
    assert.is_true(step_until(function()
      for _, id in ipairs(jobs()) do
        local j = c:get_job(id)
        if not j or j.status ~= "running" then return false end
      end
      return true
    end))
    os.execute("kill -INT " .. pid)
    assert.is_true(step_until(function() return (fs.read(status) or "") ~= "" end))
    assert.matches("RUN\tnil\tinterrupted", fs.read(out))
    for _, id in ipairs(jobs()) do assert.equal("cancelled", (assert(c:get_job(id))).status) end
    fs.rm_rf(dir)
  end)

  it("an error in one task leaves the others alone", function()
    local ok1 = unsandbox.spawn(function() return c:execute_code("bash", "echo fine") end)
    local boom = unsandbox.spawn(function()
      c:list_jobs()
      error("boom in a task")
    end)
    local bad = unsandbox.spawn(function() return c:execute_code("brainfuck", "+") end)
    local ok2 = unsandbox.spawn(function() return c:execute_code("python", "print('also')") end)
    assert.is_true((unsandbox.run(60)))
    assert.equal("fine\n", (ok1:result()).stdout)
    assert.equal("also\n", (ok2:result()).stdout)
    assert.equal("failed", boom:status())
    local r, err = boom:result()
    assert.is_nil(r)
    assert.matches("boom in a task", tostring(err))
    local r2, err2 = bad:result()
    assert.is_nil(r2)
    assert.equal(400, err2.status)
  end)

  it("wait() from one task for another yields; wait(timeout) leaves it running", function()
    arm { mode = "latency", ms = 1500, path = "/jobs" }
    local slow = unsandbox.spawn(function() return c:list_jobs() end)
    local waiter = unsandbox.spawn(function()
      local r, err = slow:wait(0.2)
      assert(r == nil and err.kind == "timeout")
      return (slow:wait())
    end)
    assert.is_true((unsandbox.run(30)))
    assert.is_table((waiter:result()))
    assert.error_matches(function() unsandbox.spawn(function() end):wait("x") end, "timeout")
  end)

  it("step() and run() refuse to be called from inside a task, and bad timeouts", function()
    local t = unsandbox.spawn(function() return pcall(unsandbox.step, 0) end)
    assert.is_true((unsandbox.run(5)))
    local ok, msg = t:result()
    assert.is_false(ok)
    assert.matches("inside a task", msg)
    assert.error_matches(function() unsandbox.step(-1) end, "timeout_ms")
    assert.error_matches(function() unsandbox.step("soon") end, "timeout_ms")
    assert.error_matches(function() unsandbox.run(0) end, "timeout")
  end)

  it("step(0) resumes ready tasks for about a millisecond and leaves the rest for the next step", function()
    -- each task computes for 3 ms before it ends: one is all a step(0) has time for
    local ran = 0
    local function spin()
      local until_us = core.monotonic_us() + 3000
      while core.monotonic_us() < until_us do end
      ran = ran + 1
    end
    for _ = 1, 5 do unsandbox.spawn(spin) end
    local _, timeout = unsandbox.pollfds()
    assert.equal(0, timeout)
    assert.equal(4, unsandbox.step(0))
    assert.equal(1, ran)
    -- the others are still ready: a host's loop sees it should step again
    _, timeout = unsandbox.pollfds()
    assert.equal(0, timeout)
    -- a longer step has a longer budget (bounded: a loaded machine may
    -- need a second one)
    for _ = 1, 5 do
      if unsandbox.step(200) == 0 then break end
    end
    assert.equal(5, ran)
  end)

  it("a step that stops for its budget loses no ready task (many tasks, many steps)", function()
    -- steps that stop midway leave taken slots at the head of the ready
    -- queue; tasks that yield again go to its tail meanwhile
    for trial = 1, 3 do
      local done, n = 0, 100 + 37 * trial
      for i = 1, n do
        unsandbox.spawn(function()
          local until_us = core.monotonic_us() + 400
          while core.monotonic_us() < until_us do end
          if i % 2 == 0 then unsandbox.spawn(function() end):wait() end
          done = done + 1
        end)
      end
      for _ = 1, 5000 do
        if unsandbox.step(0) == 0 then break end
      end
      assert.equal(n, done, "trial " .. trial)
    end
  end)

  it("pollfds() lists the sockets of a transfer in flight and a bounded timeout", function()
    arm { mode = "latency", ms = 1000, path = "/jobs" }
    local t = unsandbox.spawn(function() return c:list_jobs() end)
    local fds, timeout = unsandbox.pollfds()
    assert.equal(0, timeout)           -- the new task can run now
    unsandbox.step(0)
    assert.is_true(step_until(function()
      fds, timeout = unsandbox.pollfds()
      return #fds > 0
    end, 100))
    assert.equal("integer", lua.math_type(fds[1].fd))
    assert.matches("^r?w?$", fds[1].events)
    assert.is_true(timeout >= -1)
    assert.is_true((unsandbox.run(30)))
    assert.equal("done", t:status())
  end)

  it("execute_each() yields results in the order the programs finish", function()
    local order = {}
    for i, r, err in c:execute_each {
      { "bash", "sleep 4; echo slow" },
      { "bash", "echo quick" },
    } do
      assert.is_nil(err)
      order[#order + 1] = { i, r.stdout }
    end
    assert.same({ { 2, "quick\n" }, { 1, "slow\n" } }, order)
  end)

  it("map() runs fn's code for every input, at most `concurrency` at once", function()
    local out, errors = c:map("bash", { 1, 2, 3, 4, 5 }, function(n) return "echo $((" .. n .. " * 10))" end,
      { concurrency = 2 })
    assert.same({}, errors)
    for i = 1, 5 do assert.equal(tostring(i * 10) .. "\n", out[i].stdout) end
    local _, errs = c:map("bash", { 1, "x" }, function(v)
      if type(v) ~= "number" then error("not a number") end
      return "echo " .. v
    end)
    assert.equal("validation", errs[2].kind)
    assert.matches("not a number", errs[2].message)
    assert.error_matches(function() c:map("bash", {}, function() end, { concurrency = 0 }) end, "concurrency")
    assert.error_matches(function() c:map("bash", "nope", function() end) end, "inputs")
  end)
end)

describe("tasks and the Control Plane #integration", function()
  local srv

  setup(function() srv = server.start() end)
  teardown(function() if srv then srv.stop() end end)

  it("interleaved tasks send their own acting subject and trace", function()
    local key = cp.tenant_key(srv, "tasks-subjects", { act_as_subjects = true })
    local m = unsandbox.manager { url = srv.cp_url, token = key, session = "tasks-spec", env = {} }
    local function worker(subject, trace)
      return unsandbox.spawn(function()
        return unsandbox.trace(trace, function()
          return m:with_subject(subject, function()
            local seen = {}
            for k = 1, 3 do
              local me, rid = assert(m:whoami())
              seen[k] = { me.acting_subject, rid }
            end
            return seen
          end)
        end)
      end)
    end
    local ta, tb = unsandbox.new_trace_id(), unsandbox.new_trace_id()
    local a, b = worker(SUBJ_A, ta), worker(SUBJ_B, tb)
    local plain = unsandbox.spawn(function() return (assert(m:whoami())).acting_subject end)
    assert.is_true((unsandbox.run(30)))
    for k = 1, 3 do
      assert.same({ SUBJ_A, ta }, (a:result())[k])
      assert.same({ SUBJ_B, tb }, (b:result())[k])
    end
    assert.is_nil((plain:result()))
    -- nothing leaked to the main thread either
    assert.is_nil(unsandbox.current_trace())
  end)

  it("Sandbox streams in two tasks progress together while step(0) never waits for them", function()
    local m = unsandbox.manager { url = srv.cp_url, token = srv.token, env = {} }
    local order = {}
    local function box(name)
      return unsandbox.spawn(function()
        return unsandbox.with(assert(unsandbox.Sandbox.create { name = name, manager = m }), function(sb)
          return assert(sb:stream("echo 1; sleep 2; echo 2", function(_, chunk)
            for line in chunk:gmatch("%d") do order[#order + 1] = name .. line end
          end, 30))
        end)
      end)
    end
    local a, b = box("task-a"), box("task-b")
    local longest = 0
    local deadline = core.monotonic_ms() + 120000
    while not (a:done() and b:done()) and core.monotonic_ms() < deadline do
      local t0 = core.monotonic_ms()
      unsandbox.step(0)
      longest = math.max(longest, core.monotonic_ms() - t0)
      core.sleep(5)
    end
    assert.equal("done", a:status(), tostring(select(2, a:result())))
    assert.equal("done", b:status(), tostring(select(2, b:result())))
    assert.equal(0, (a:result()).exit_code)
    assert.equal(0, (b:result()).exit_code)
    assert.equal(4, #order)
    -- interleaved: neither stream waited for the other to end
    local pos = {}
    for i, v in ipairs(order) do pos[v] = i end
    assert.is_true(pos["task-a1"] < pos["task-b2"] and pos["task-b1"] < pos["task-a2"], table.concat(order, " "))
    -- a step that waited for a stream's next chunk would take the 2 s
    -- between its lines; a busy machine stretches a step far less than that
    assert.is_true(longest < 1000, "longest step(0) " .. longest .. " ms")
  end)
end)
