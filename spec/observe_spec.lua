-- #integration specs of observability against a real unsandboxd with fault
-- injection: timing on results and errors (a server that holds its reply),
-- the request hook (every exchange of a polled job, in order, one trace),
-- a hook that raises, debug lines on and off with no secret in them (a
-- child process, so its stderr can be read whole), and opt-in retries
-- against the 429 fault (Retry-After waited for, attempts counted, a POST
-- whose answer was lost not repeated unless the caller says it may be).
local unsandbox = require "unsandbox"
local server = require "spec.helpers.unsandboxd"
local fs = require "spec.helpers.fs"
local core = require "unsandbox.core"
local lua = require "spec.helpers.lua"

local PARTS = { "queue_ms", "resolve_ms", "connect_ms", "tls_ms", "server_ms", "transfer_ms" }

describe("seeing what the library does #integration", function()
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
    unsandbox.on_request(nil)
    c:call("POST", "/_faults", { mode = "off" })
  end)

  local function check_timing(t)
    assert.is_table(t)
    local sum = 0
    for _, k in ipairs(PARTS) do
      assert.is_number(t[k], k)
      assert.is_true(t[k] >= 0, k)
      sum = sum + t[k]
    end
    assert.is_true(t.total_ms + 0.5 >= sum + t.poll_wait_ms + t.retry_wait_ms,
      "total " .. t.total_ms .. " < parts " .. sum)
    return sum
  end

  describe("timing", function()
    it("is on a result, with the server's 300 ms delay in server_ms", function()
      local id = assert(c:execute_async("bash", "echo hi"))
      arm { mode = "latency", ms = 300, path = "/jobs/" }
      local j = assert(c:get_job(id))
      check_timing(j.timing)
      assert.is_true(j.timing.server_ms >= 250, "server_ms " .. j.timing.server_ms)
      assert.is_true(j.timing.total_ms >= j.timing.server_ms)
      assert.equal(1, j.timing.exchanges)
    end)

    it("sums a polled job's exchanges, counts its polls and the sleeps between them", function()
      arm { mode = "defer", path = "/execute" }
      local r = assert(c:execute_code("bash", "sleep 1; echo done"))
      assert.equal("done\n", r.stdout)
      check_timing(r.timing)
      assert.is_true(r.timing.polls >= 1)
      assert.equal(r.timing.polls + 1, r.timing.exchanges)
      assert.is_true(r.timing.poll_wait_ms > 0)
    end)

    it("is on an error too", function()
      arm { mode = "status", status = 503, path = "/jobs/" }
      local j, err = c:get_job("job_" .. string.rep("0", 24))
      assert.is_nil(j)
      assert.equal(503, err.status)
      check_timing(err.timing)
      local down = unsandbox.client { url = "http://127.0.0.1:1", public_key = "unsb-pk-x",
                                      secret_key = "unsb-sk-x" }
      local _, e2 = down:get_job("job_" .. string.rep("0", 24))
      assert.equal("transport", e2.kind)
      check_timing(e2.timing)
      down:close()
    end)
  end)

  describe("the request hook", function()
    it("sees every exchange of a polled job in order, with one trace id and no secret", function()
      local events = {}
      arm { mode = "defer", path = "/execute" }
      unsandbox.on_request(function(ev) events[#events + 1] = ev end)
      assert(c:execute_code("bash", "sleep 1; echo x"))
      unsandbox.on_request(nil)
      assert.is_true(#events >= 2)
      assert.same({ "POST", "/execute" }, { events[1].method, events[1].path })
      local trace = events[1].traceparent:match("^00%-(%x+)%-")
      local spans = {}
      for i, ev in ipairs(events) do
        if i > 1 then
          assert.equal("GET", ev.method)
          assert.matches("^/jobs/job_", ev.path)
        end
        assert.equal(200, ev.status)
        assert.equal(1, ev.attempt)
        assert.equal(trace, ev.traceparent:match("^00%-(%x+)%-"))
        spans[ev.traceparent:match("^00%-%x+%-(%x+)")] = true
        assert.matches("^req_", ev.request_id)
        assert.is_true(ev.ms > 0 and ev.bytes_out > 0 and ev.bytes_in > 0)
        for _, v in pairs(ev) do
          assert.is_nil(tostring(v):find(srv.secret_key, 1, true))
          assert.is_nil(tostring(v):find(srv.public_key, 1, true))
        end
      end
      local n = 0
      for _ in pairs(spans) do n = n + 1 end
      assert.equal(#events, n)   -- a span each
    end)

    it("a client's own hook and the global one both see a failure, with error_kind", function()
      local mine, global = {}, {}
      local c2 = unsandbox.client(srv.client_opts { on_request = function(ev) mine[#mine + 1] = ev end })
      arm { mode = "status", status = 503, path = "/jobs" }
      unsandbox.on_request(function(ev) global[#global + 1] = ev end)
      assert.is_nil((c2:list_jobs()))
      assert.equal(1, #mine)
      assert.equal(1, #global)
      assert.same({ 503, "http" }, { mine[1].status, mine[1].error_kind })
      assert.is_function(c2:on_request(nil))   -- the previous one
      assert.is_nil(c2:on_request(nil))
      c2:close()
      assert.error_matches(function() unsandbox.on_request("x") end, "fn")
      assert.error_matches(function() unsandbox.client { on_request = 1 } end, "on_request")
    end)

    it("a hook that raises never breaks the call", function()
      local calls = 0
      unsandbox.on_request(function() calls = calls + 1; error("hook bug") end)
      for _ = 1, 3 do assert.is_table((c:list_jobs())) end
      assert.equal(3, calls)
    end)
  end)

  describe("retries", function()
    local zero = "job_" .. string.rep("0", 24)

    it("are off by default: a 429 is the caller's, with its retry_after", function()
      arm { mode = "status", status = 429, path = "/jobs/" }
      local _, err = c:get_job(zero)
      assert.same({ 429, 1, 1 }, { err.status, err.retry_after, err.attempts })
    end)

    it("wait for Retry-After and count attempts, each freshly signed", function()
      local events = {}
      local c2 = unsandbox.client(srv.client_opts { retry = { max = 3 },
        on_request = function(ev) events[#events + 1] = ev end })
      local id = assert(c:execute_async("bash", "echo r"))
      arm { mode = "status", status = 429, count = 2, path = "/jobs/" }
      local t0 = core.monotonic_ms()
      local j = assert(c2:get_job(id))
      local took = core.monotonic_ms() - t0
      assert.is_string(j.status)
      assert.same({ 1, 2, 3 }, { events[1].attempt, events[2].attempt, events[3].attempt })
      assert.same({ 429, 429, 200 }, { events[1].status, events[2].status, events[3].status })
      -- Retry-After: 1 twice; far less than the backoff cap, far more than none
      assert.is_true(took >= 1900, "took " .. took)
      assert.is_true(took < 15000, "took " .. took)
      assert.is_true(j.timing.retry_wait_ms >= 1900)
      -- max reached: the last answer goes back, with the attempts made
      arm { mode = "status", status = 429, count = 5, path = "/jobs/" }
      local c3 = unsandbox.client(srv.client_opts { retry = { max = 1 } })
      local _, err = c3:get_job(id)
      assert.same({ 429, 2 }, { err.status, err.attempts })
      c2:close()
      c3:close()
    end)

    it("never repeat a POST whose answer was lost, unless the caller says it is idempotent", function()
      local events = {}
      local c2 = unsandbox.client(srv.client_opts { retry = { max = 2, on = { 429, "transport" },
        base = 0.05 }, on_request = function(ev) events[#events + 1] = ev end })
      arm { mode = "drop", path = "/execute/async" }
      local id, err = c2:execute_async("bash", "echo once")
      assert.is_nil(id)
      assert.equal(1, #events)
      assert.equal(1, err.attempts)
      events = {}
      arm { mode = "drop", path = "/execute/async" }
      local doc = assert(c2:call("POST", "/execute/async", { language = "bash", code = "echo twice" },
        { idempotent = true }))
      assert.matches("^job_", doc.job_id)
      assert.same({ 1, 2 }, { events[1].attempt, events[2].attempt })
      c2:close()
    end)

    it("refuse a bad policy", function()
      for _, bad in ipairs { "yes", { max = -1 }, { max = 99 }, { on = { 42 } }, { on = "429" },
                             { bogus = 1 }, { base = 0 } } do
        assert.has_error(function() unsandbox.client(srv.client_opts { retry = bad }) end)
      end
    end)
  end)

  describe("the Manager", function()
    it("shows its exchanges to its hook with the traceparent it sent; errors carry timing", function()
      local events = {}
      local m = unsandbox.manager { url = srv.cp_url, token = srv.token, session = "observe", env = {},
        on_request = function(ev) events[#events + 1] = ev end, retry = { max = 2 } }
      local _, rid = assert(m:whoami())
      assert.equal(1, #events)
      assert.same({ "GET", 200, 1 }, { events[1].method, events[1].status, events[1].attempt })
      -- the Control Plane answers the trace id it received as X-Request-Id
      assert.equal(rid, events[1].traceparent:match("^00%-(%x+)%-"))
      local bad = unsandbox.manager { url = srv.cp_url, token = "sk_nope", env = {} }
      local r, err = bad:whoami()
      assert.is_nil(r)
      assert.equal(401, err.status)
      assert.is_number(err.timing.total_ms)
      assert.equal(1, err.attempts)   -- 401 is not in `on`
      assert.error_matches(function() unsandbox.manager { retry = { max = "x" } } end, "retry")
    end)
  end)

  describe("every kind of exchange", function()
    -- Runs one call of each kind in a child with UNSANDBOX_DEBUG=1 and a
    -- global hook printing each event on stdout; before each kind both
    -- streams get "SEG <kind>". Returns the events and the debug lines of
    -- each kind, and the child's whole output.
    local function child(key, sid)
      local dir = fs.tmpdir("unsb-kinds")
      local script = dir .. "/run.lua"
      fs.write(script, string.format([[
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = "./lua/?.so;" .. package.cpath
local u = require "unsandbox"
local c = u.client { url = %q, public_key = %q, secret_key = %q }
local m = u.manager { url = %q, token = %q, env = {} }
local S = string.rep("a", 32)
local function seg(name) io.stdout:write("SEG ", name, "\n"); io.stderr:write("SEG ", name, "\n") end
local sb = assert(u.Sandbox.create { name = "kinds", manager = m })
u.on_request(function(ev)
  io.stdout:write("EV ", ev.method, " ", ev.path, " ", tostring(ev.status), " ",
    tostring(ev.error_kind), "\n")
end)
seg("rest") assert(c:list_jobs())
seg("cp_rest") assert(m:whoami())
seg("mcp") assert(sb:run_command("echo", { "hi" }))
seg("sse") assert(sb:stream("echo hi", function() end))
local n = 0
seg("sse_cancelled") assert(not m:shell_stream("sleep 5", 10, function() end, function()
  n = n + 1; return n > 3 end, "kinds"))
seg("pty") local sh = sb:shell(); assert(sh:exec("echo pty")); assert(sh:close())
seg("ticket_up") m:with_subject(S, function() assert(m:put_agent_blob("a", "r", "outputs/x.bin", "bytes")) end)
local loc = { scope = "agent", agent_id = "a", run_id = "r", path = "outputs/x.bin" }
seg("ticket_down") m:with_subject(S, function() assert(m:open_object(loc)) end)
seg("ticket_stream") m:with_subject(S, function()
  assert(m:open_object(loc, nil, nil, nil, { on_data = function() end })) end)
seg("websocket") assert(c:session_shell(%q, "exit\n"))
seg("websocket_refused") assert(not c:session_shell("nope", "exit\n"))
seg("end")
]], srv.url, srv.public_key, srv.secret_key, srv.cp_url, key, sid))
      local out, err = dir .. "/out", dir .. "/err"
      assert(lua.sh(string.format("cd %s && UNSANDBOX_DEBUG=1 timeout 120 lua5.4 %s >%s 2>%s",
        fs.quote(os.getenv("UNSANDBOX_ROOT") or "."), fs.quote(script), fs.quote(out), fs.quote(err))),
        (fs.read(out) or "") .. (fs.read(err) or ""))
      local kinds, seen = {}, nil
      local function split(text, field, pattern)
        for line in text:gmatch("[^\n]+") do
          local name = line:match("^SEG (%S+)")
          if name then
            seen = name
            kinds[name] = kinds[name] or { events = {}, lines = {} }
          elseif seen and line:match(pattern) then
            local list = kinds[seen][field]
            list[#list + 1] = line
          end
        end
      end
      local o, e = fs.read(out), fs.read(err)
      split(o, "events", "^EV ")
      split(e, "lines", "^unsandbox: method=")
      fs.rm_rf(dir)
      return kinds, o .. e
    end

    it("is one hook event and one debug line, with the same fields, and no secret", function()
      local key = require("spec.helpers.cp").tenant_key(srv, "kinds", { act_as_subjects = true })
      local sid = assert(c:create_session {}).id
      local kinds, text = child(key, sid)
      -- kind -> the exchanges it makes: method and path (ids cut)
      local want = {
        rest = { "GET /jobs" }, cp_rest = { "GET /v1/whoami" },
        mcp = { "POST /v1/sandboxes/*/mcp" }, sse = { "POST /v1/sandboxes/*/mcp" },
        sse_cancelled = { "POST /v1/sandboxes/*/mcp" }, pty = { "POST /v1/sandboxes/*/mcp",
          "POST /v1/sandboxes/*/mcp" },
        ticket_up = { "POST /v1/storage/tickets", "PUT /v1/storage/content" },
        ticket_down = { "POST /v1/storage/tickets", "GET /v1/storage/content" },
        ticket_stream = { "POST /v1/storage/tickets", "GET /v1/storage/content" },
        websocket = { "GET /sessions/*/shell" }, websocket_refused = { "GET /sessions/*/shell" },
      }
      for kind, exchanges in pairs(want) do
        local k = assert(kinds[kind], kind)
        assert.equal(#exchanges, #k.events, kind .. ": events\n" .. text)
        assert.equal(#exchanges, #k.lines, kind .. ": debug lines\n" .. text)
        for i, x in ipairs(exchanges) do
          local ev, line = k.events[i], k.lines[i]
          local method, path, status, ekind = ev:match("^EV (%S+) (%S+) (%S+) (%S+)")
          local generic = (method .. " " .. path):gsub("/sb%-%x+/", "/*/"):gsub("/sessions/[^/]+/", "/sessions/*/")
          assert.equal(x, generic, kind)
          -- the debug line tells the same exchange
          assert.matches("method=" .. method .. " path=" .. path:gsub("%p", "%%%0") .. " status=" ..
            (status == "nil" and "%-" or status), line)
          if ekind ~= "nil" then assert.matches("error_kind=" .. ekind, line) end
        end
      end
      assert.matches("status=101", kinds.websocket.lines[1])
      assert.matches("status=404 .*error_kind=http", kinds.websocket_refused.lines[1])
      assert.matches("error_kind=cancelled", kinds.sse_cancelled.lines[1])
      for _, secret in ipairs { srv.secret_key, key } do
        assert.is_nil(text:find(secret, 1, true))
      end
    end)
  end)

  describe("debug output", function()
    -- Runs the client suite's error paths in a child with UNSANDBOX_DEBUG
    -- set as given; returns its stderr.
    local function child(debug)
      local dir = fs.tmpdir("unsb-debug")
      local script = dir .. "/run.lua"
      local f = assert(io.open(script, "w"))
      f:write(string.format([[
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = "./lua/?.so;" .. package.cpath
local u = require "unsandbox"
local c = u.client { url = %q, public_key = %q, secret_key = %q }
c:call("POST", "/_faults", { mode = "status", status = 429, path = "/jobs" })
c:list_jobs()
c:get_job("job_" .. string.rep("0", 24))
c:execute_code("brainfuck", "+")
c:execute_code("bash", "echo fine")
u.client { url = %q, public_key = %q, secret_key = "unsb-sk-wrong" }:list_jobs()
u.client { url = "http://127.0.0.1:1", public_key = "p", secret_key = %q }:list_jobs()
u.on_request(function() error("hook bug") end)
c:list_jobs()
c:list_jobs()
]], srv.url, srv.public_key, srv.secret_key, srv.url, srv.public_key, srv.secret_key))
      f:close()
      local err = dir .. "/err"
      local env = debug and "UNSANDBOX_DEBUG=1" or "UNSANDBOX_DEBUG="
      assert(lua.sh(string.format("cd %s && %s timeout 60 lua5.4 %s 2>%s",
        fs.quote(os.getenv("UNSANDBOX_ROOT") or "."),
        env, fs.quote(script), fs.quote(err))))
      local h = assert(io.open(err))
      local text = h:read("*a")
      h:close()
      fs.rm_rf(dir)
      return text
    end

    it("prints one line per exchange when on, nothing when off, and never a secret", function()
      local text = child(true)
      local lines = {}
      for l in text:gmatch("[^\n]+") do lines[#lines + 1] = l end
      local exchanges = 0
      for _, l in ipairs(lines) do
        if l:match("^unsandbox: method=") then
          exchanges = exchanges + 1
          assert.matches("path=/%S* status=%S+ ms=[%d.]+ attempt=%d+ request_id=%S+ traceparent=%S+", l)
        end
      end
      assert.is_true(exchanges >= 8, text)
      assert.matches("status=429", text)
      assert.matches("error_kind=transport", text)
      assert.is_nil(text:find(srv.secret_key, 1, true))
      assert.is_nil(text:find("unsb-sk-wrong", 1, true))
      -- the raising hook: reported once, however many calls
      local _, reports = text:gsub("on_request hook raised", "")
      assert.equal(1, reports)
      local quiet = child(false)
      assert.is_nil(quiet:find("method=", 1, true))
    end)
  end)
end)
