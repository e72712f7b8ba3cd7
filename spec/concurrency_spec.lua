-- #integration: calls issued at once run at once, up to max_concurrency,
-- on a fresh client too (no connection made yet), against an HTTP/1.1
-- origin (parallel connections) and an HTTP/2 one (multiplexed on one:
-- nghttpx in front of unsandboxd, spec/helpers/h2_proxy.lua); for the
-- execution API and the Control Plane, streams included.
--
-- No wall-clock bound: each test proves the calls overlapped by what the
-- server saw. The execution API's calls are held by a latency fault, and
-- the fault module counts the requests asleep in it right now (`delaying`
-- of /_faults/stats, read meanwhile by another client): three calls that
-- run at once are three held at once. The Control Plane's are MCP shell
-- commands that meet at a rendezvous in the workspace: each adds a file
-- and waits (at most 10 s) until all three are there, so each prints 3
-- only if none waited for another to end.
local unsandbox = require "unsandbox"
local server = require "spec.helpers.unsandboxd"
local tls = require "spec.helpers.tls_server"
local h2 = require "spec.helpers.h2_proxy"
local fs = require "spec.helpers.fs"
local core = require "unsandbox.core"

local HOLD_MS = 2000

describe("calls issued at once #integration", function()
  local srv, admin, dir, pem, key, proxy, cp_proxy

  setup(function()
    srv = server.start { args = { "--enable-faults" } }
    admin = unsandbox.client(srv.client_opts())
    dir = fs.tmpdir("unsb-conc")
    pem, key = tls.make_cert(dir, "loopback", "IP:127.0.0.1")
    proxy = h2.start(pem, key, srv.port, dir .. "/exec-proxy.log")
    cp_proxy = h2.start(pem, key, srv.cp_port, dir .. "/cp-proxy.log")
  end)
  teardown(function()
    h2.stop(proxy)
    h2.stop(cp_proxy)
    if admin then admin:close() end
    if srv then srv.stop() end
    fs.rm_rf(dir)
  end)
  after_each(function()
    assert.is_true((unsandbox.run(60)))
    admin:call("POST", "/_faults", { mode = "off" })
  end)

  -- Runs each of fns as a task and steps until all have ended (bounded:
  -- 60 s), reading how many requests the server holds meanwhile. Returns
  -- the tasks' first results and the most held at once.
  local function fan_out(fns)
    local ts, most = {}, 0
    for i, fn in ipairs(fns) do ts[i] = unsandbox.spawn(fn) end
    local deadline = core.monotonic_ms() + 60000
    while unsandbox.step(20) > 0 and core.monotonic_ms() < deadline do
      most = math.max(most, assert(admin:call("GET", "/_faults/stats")).delaying)
    end
    local out = {}
    for i, t in ipairs(ts) do
      assert.is_true(t:done(), "task " .. i .. " still running")
      out[i] = assert(t:result())
    end
    return out, most
  end

  local function hold(n)
    assert(admin:call("POST", "/_faults", { mode = "latency", ms = HOLD_MS, count = n, path = "/jobs" }))
  end

  local function three(c)
    local fns = {}
    for i = 1, 3 do fns[i] = function() return c:list_jobs() end end
    return fns
  end

  local function connections(results)
    local n = 0
    for _, r in ipairs(results) do n = n + r.timing.new_connections end
    return n
  end

  describe("the execution API", function()
    it("runs three calls of a fresh client at once against HTTP/1.1, a connection each", function()
      local c = unsandbox.client(srv.client_opts())
      finally(function() c:close() end)
      hold(3)
      local results, most = fan_out(three(c))
      assert.equal(3, most)
      assert.equal(3, connections(results))
      for _, r in ipairs(results) do assert.is_true(r.timing.server_ms >= HOLD_MS * 0.9) end
    end)

    it("runs at most max_concurrency at once; the rest wait for a slot", function()
      local c = unsandbox.client(srv.client_opts { max_concurrency = 2 })
      finally(function() c:close() end)
      hold(3)
      local results, most = fan_out(three(c))
      assert.equal(2, most)
      local queued = 0
      for _, r in ipairs(results) do
        if r.timing.queue_ms >= HOLD_MS * 0.9 then queued = queued + 1 end
      end
      assert.equal(1, queued)
    end)

    it("multiplexes three calls of a fresh client on one connection against HTTP/2", function()
      local c = unsandbox.client(srv.client_opts { url = proxy.url, ca_file = pem })
      finally(function() c:close() end)
      hold(3)
      local results, most = fan_out(three(c))
      assert.equal(3, most)
      assert.equal(1, connections(results))
    end)

    it("execute_many on a fresh client submits every program at once", function()
      local c = unsandbox.client(srv.client_opts())
      finally(function() c:close() end)
      assert(admin:call("POST", "/_faults", { mode = "latency", ms = HOLD_MS, count = 3,
        path = "/execute/async" }))
      local results, most = fan_out { function()
        local rs, errs = c:execute_many { { "bash", "echo 1" }, { "bash", "echo 2" }, { "bash", "echo 3" } }
        assert.same({}, errs)
        return rs
      end }
      assert.equal(3, most)
      for i = 1, 3 do assert.equal(i .. "\n", results[1][i].stdout) end
    end)
  end)

  describe("the Control Plane", function()
    local KEY = "conc-" .. core.new_traceparent():sub(4, 11)

    -- Three shell commands that meet: each prints how many had arrived
    -- when it left (3 when all ran at once). round names the meeting.
    local function meeting(m, round, streamed)
      local fns = {}
      for i = 1, 3 do
        local cmd = string.format("mkdir -p rv/%s && touch rv/%s/%d && n=0 && " ..
          "while [ $(ls rv/%s | wc -l) -lt 3 ] && [ $n -lt 200 ]; do sleep 0.05; n=$((n+1)); done; " ..
          "ls rv/%s | wc -l", round, round, i, round, round)
        fns[i] = streamed and function() return assert(m:shell_stream(cmd, 20, function() end, nil, KEY)) end
          or function() return assert(m:shell(cmd, 20, KEY)) end
      end
      local results = fan_out(fns)
      for i, r in ipairs(results) do assert.equal("3", r.stdout:match("%d+"), "command " .. i) end
      return results
    end

    local function manager(url)
      return unsandbox.manager { url = url, token = srv.token, ca_file = url:match("^https") and pem or nil,
        env = {} }
    end

    setup(function()
      -- the runtime exists before the fresh Managers below ask for it
      local m = manager(srv.cp_url)
      assert(m:ensure_runtime(KEY))
      m:close()
    end)

    it("runs three MCP calls of a fresh Manager at once, and three streams after streams", function()
      local m = manager(srv.cp_url)
      finally(function() m:close() end)
      meeting(m, "a", false)
      -- a stream's reply closes its connection (Connection: close): after
      -- three, the Manager holds none, as a fresh one
      meeting(m, "b", true)
      meeting(m, "c", true)
    end)

    it("multiplexes them on one connection against HTTP/2, streams included", function()
      local m = manager(cp_proxy.url)
      finally(function() m:close() end)
      local buffered = meeting(m, "d", false)
      local streamed = meeting(m, "e", true)
      assert.equal(1, connections(buffered) + connections(streamed))
    end)
  end)
end)
