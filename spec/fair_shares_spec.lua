-- #integration specs of fair shares on one machine, execution API side
-- (docs/internals.md, "Sharing one machine" / "Fair shares"): each plays
-- an attack of one party against a real unsandboxd and shows that the
-- others are still served. A local process holding thousands of idle
-- sockets (every client is 127.0.0.1, so no per-address cap can tell it
-- apart) leaves the probes and an authenticated client answered; one
-- key's sleeping jobs fill that key's share of the job pool, not the
-- pool, so another key still executes and runs session commands; a run
-- that opens terminals until it cannot gets its sandbox's own few, not
-- the host's pool. Sockets go to 127.0.0.1 only; every loop is bounded
-- in count and time, and waits on what the server shows (sockets it
-- holds, its answers), never on a fixed sleep.
local server = require "spec.helpers.unsandboxd"
local raw = require "spec.helpers.rawhttp"
local fs = require "spec.helpers.fs"
local core = require "unsandbox.core"
local json = require "cjson"
local socket = require "socket"
local wait = require "spec.helpers.wait"

local function decode(body)
  local ok, v = pcall(json.decode, body or "")
  return ok and v or nil
end

-- Sockets the server process holds: once it holds n, it has accepted them.
local function server_sockets(pid)
  local n = 0
  local p = io.popen("ls -l /proc/" .. pid .. "/fd 2>/dev/null")
  for line in p:lines() do
    if line:find("socket:", 1, true) then n = n + 1 end
  end
  p:close()
  return n
end

local function wait_sockets(pid, n)
  return wait.eventually(function() return server_sockets(pid) >= n end, 20)
end

-- n connected sockets to port that send nothing.
local function idle(port, n)
  local socks = {}
  for i = 1, n do
    local s = assert(socket.tcp())
    s:settimeout(5)
    assert(s:connect("127.0.0.1", port))
    socks[i] = s
  end
  return socks
end

local function close_all(socks)
  for _, s in ipairs(socks) do s:close() end
end

-- GET path on a fresh connection to port: the status, or nil and why.
local function probe(port, path)
  local s = assert(socket.tcp())
  s:settimeout(10)
  local ok, err = s:connect("127.0.0.1", port)
  if not ok then s:close(); return nil, err end
  s:send(raw.head("GET", path, { Connection = "close" }))
  local status, h = raw.read_response(s)
  s:close()
  return status, h
end

-- How many of socks the server has closed (reads nothing they were sent).
local function closed_count(socks)
  local n = 0
  for _, s in ipairs(socks) do
    if raw.closed(s) then n = n + 1 end
  end
  return n
end

describe("fair shares: the connection budget #integration", function()
  it("1,100 idle sockets on each listener leave every /health and /livez answered (default limits)", function()
    local srv = server.start {}
    local held = server_sockets(srv.pid)
    local exec_idle = idle(srv.port, 1100)
    local cp_idle = idle(srv.cp_port, 1100)
    -- at least 1024 per listener: as many as one address could hold before
    local accepted = wait_sockets(srv.pid, held + 2048)
    local answered, failed = 0, {}
    for i = 1, 64 do
      for _, t in ipairs { { srv.port, "/health" }, { srv.cp_port, "/livez" } } do
        local status, why = probe(t[1], t[2])
        if status == 200 then answered = answered + 1
        else failed[#failed + 1] = t[2] .. ": " .. tostring(status or why) end
      end
      if i == 1 then assert.is_true(accepted, "the idle sockets were never accepted") end
    end
    close_all(exec_idle)
    close_all(cp_idle)
    srv.stop()
    assert.are.equal(128, answered, table.concat(failed, ", "))
  end)

  it("a burst that takes every handler thread leaves /health answered (threads kept for probes)", function()
    local srv = server.start { args = { "--enable-faults" } }
    local c = core.client(srv.client_opts())
    local r = assert(c:request("POST", "/_faults",
      json.encode { mode = "latency", ms = 8000, count = 600, path = "/jobs" }))
    assert.are.equal(200, r.status)
    local socks = {}
    for i = 1, 530 do
      local s = raw.connect(srv, 20)
      s:send(raw.head("GET", "/jobs", raw.signed(srv, "GET", "/jobs", "", { Connection = "close" })))
      socks[i] = s
    end
    -- ready once the pool is full: a signed request of ours waits in line
    -- for a thread and is refused after its second (503)
    local full = wait.eventually(function()
      local s = raw.connect(srv, 5)
      s:send(raw.head("GET", "/jobs", raw.signed(srv, "GET", "/jobs", "", { Connection = "close" })))
      local st = raw.read_response(s)
      s:close()
      return st == 503
    end, 30)
    -- more probes than the threads kept for them, one after the other,
    -- while requests wait in line for a thread: a probe's place is never
    -- handed to the line
    local answered = 0
    for _ = 1, 40 do
      for _ = 1, 2 do                            -- two more join the line
        local s = raw.connect(srv, 20)
        s:send(raw.head("GET", "/jobs", raw.signed(srv, "GET", "/jobs", "", { Connection = "close" })))
        socks[#socks + 1] = s
      end
      if probe(srv.port, "/health") == 200 then answered = answered + 1 end
    end
    for _, s in ipairs(socks) do s:close() end
    c:request("POST", "/_faults", '{"mode":"off"}')
    c:close()
    srv.stop()
    assert.is_true(full, "the handler pool never filled")
    assert.are.equal(40, answered)
  end)

  it("a request that finds every handler thread busy waits in line for one instead of failing", function()
    local srv = server.start { args = { "--enable-faults" } }
    local c = core.client(srv.client_opts())
    local r = assert(c:request("POST", "/_faults",
      json.encode { mode = "latency", ms = 500, count = 512, path = "/jobs" }))
    assert.are.equal(200, r.status)
    local socks = {}
    for i = 1, 532 do                            -- 512 held half a second, 20 more
      local s = raw.connect(srv, 20)
      s:send(raw.head("GET", "/jobs", raw.signed(srv, "GET", "/jobs", "", { Connection = "close" })))
      socks[i] = s
    end
    local statuses = {}
    for _, s in ipairs(socks) do
      local st = raw.read_response(s)
      s:close()
      statuses[tostring(st)] = (statuses[tostring(st)] or 0) + 1
    end
    c:close()
    srv.stop()
    assert.are.same({ ["200"] = 532 }, statuses)
  end)

  describe("past the budget (--max-connections 64)", function()
    local srv
    setup(function() srv = server.start { args = { "--max-connections", "64" } } end)
    teardown(function() if srv then srv.stop() end end)

    it("drops idle unauthenticated sockets first; probes and a kept-alive authenticated client are answered", function()
      -- an authenticated client whose connection then idles, kept alive
      local kept = raw.connect(srv, 10)
      local function jobs_on_kept()
        assert(kept:send(raw.head("GET", "/jobs", raw.signed(srv, "GET", "/jobs", ""))))
        return raw.read_response(kept)
      end
      assert.are.equal(200, (jobs_on_kept()))
      local flood = idle(srv.port, 300)
      -- the server sheds what the budget cannot hold: it never holds 300
      local shed = wait.eventually(function() return closed_count(flood) >= 300 - 64 end, 20)
      local answered = 0
      for _ = 1, 20 do
        if probe(srv.port, "/health") == 200 then answered = answered + 1 end
      end
      local status, _, body = jobs_on_kept()
      local closed = closed_count(flood)
      close_all(flood)
      kept:close()
      assert.is_true(shed, "the flood was not shed: " .. closed .. " of 300 closed")
      assert.are.equal(20, answered)
      assert.are.equal(200, status, body)
      -- the sweeper logs what it closed once per round (250 ms)
      local logged = wait.eventually(function()
        return (fs.read(srv.log) or ""):match("connection budget of 56 reached: %d+ idle connection")
      end)
      assert.is_truthy(logged, "no line of the budget in the log")
    end)

    it("refuses a bad --max-connections with exit 2", function()
      for _, v in ipairs { "0", "15", "x" } do
        local out, rc = server.run("--max-connections " .. v)
        assert.are.equal(2, rc, out)
        assert.matches("--max-connections", out, 1, true)
      end
    end)
  end)
end)

-- One signed request of the execution API: the response and its body.
local function call(c, method, path, body)
  local r, kind, msg = c:request(method, path, body and json.encode(body))
  assert(r, tostring(kind) .. ": " .. tostring(msg))
  return r, decode(r.body)
end

local TERMINAL = { completed = true, failed = true, timeout = true, cancelled = true }

-- The document of a job once terminal (polled, at most 60 s).
local function finished(c, doc)
  wait.eventually(function()
    if TERMINAL[doc.status] then return true end
    local _, d = call(c, "GET", "/jobs/" .. doc.job_id)
    doc = d or doc
  end, 60, 0.1)
  return doc
end

-- Submits `sleep 900` jobs of c until one is refused (at most `max`):
-- the ids and the refusal.
local function fill(c, max)
  local ids = {}
  for _ = 1, max do
    local r, doc = call(c, "POST", "/execute/async", { language = "bash", code = "sleep 900", ttl = 900 })
    if r.status ~= 202 then return ids, { r = r, doc = doc } end
    ids[#ids + 1] = doc.job_id
  end
  return ids
end

local function cancel_all(c, ids)
  for _, id in ipairs(ids) do call(c, "DELETE", "/jobs/" .. id) end
end

describe("fair shares: jobs of one key #integration", function()
  -- the other key's calls: a synchronous execute and a session command
  local function other_key_is_served(b)
    local r, doc = call(b, "POST", "/execute", { language = "bash", code = "echo other" })
    assert.are.equal(200, r.status, r.body)
    doc = finished(b, doc)
    assert.are.equal("completed", doc.status, json.encode(doc))
    assert.are.equal("other\n", doc.stdout)
    local sr, sess = call(b, "POST", "/sessions", {})
    assert.are.equal(201, sr.status, sr.body)
    local cr, cmd = call(b, "POST", "/sessions/" .. sess.session_id .. "/shell", { command = "echo in-session" })
    call(b, "DELETE", "/sessions/" .. sess.session_id)
    assert.are.equal(200, cr.status, cr.body)
    assert.are.equal("in-session\n", cmd.stdout)
  end

  it("one key's sleeping jobs fill its share, not the pool: another key still executes (default limits)", function()
    local srv = server.start {}
    local a = core.client(srv.client_opts())
    local pk, sk = server.add_key(srv)
    local b = core.client(srv.client_opts { public_key = pk, secret_key = sk })
    local _, v = call(a, "POST", "/keys/validate")
    local ids, refused = fill(a, 200)
    local ok, err = pcall(other_key_is_served, b)
    cancel_all(a, ids)
    a:close()
    b:close()
    srv.stop()
    assert(ok, err)
    assert.is_truthy(refused, "the key was never refused")
    assert.are.equal(429, refused.r.status)
    assert.are.equal(1, refused.r.retry_after)
    assert.are.equal("concurrency_limit_reached", refused.doc.error)
    -- the refusal counts this key's executions against this key's limit
    assert.are.equal(#ids, refused.doc.active_executions)
    assert.are.equal(#ids, refused.doc.concurrency_limit)
    assert.are.equal(#ids, v.concurrency)
  end)

  it("--key-jobs and --key-queue set a key's share", function()
    local srv = server.start { args = { "--workers", "2", "--queue", "4", "--key-jobs", "1", "--key-queue", "1" } }
    local a = core.client(srv.client_opts())
    local pk, sk = server.add_key(srv)
    local b = core.client(srv.client_opts { public_key = pk, secret_key = sk })
    local ids, refused = fill(a, 10)
    local ok, err = pcall(other_key_is_served, b)
    cancel_all(a, ids)
    a:close()
    b:close()
    srv.stop()
    assert(ok, err)
    assert.are.equal(2, #ids)
    assert.are.equal(429, refused.r.status)
    assert.are.equal(2, refused.doc.concurrency_limit)
  end)

  it("refuses bad share flags with exit 2", function()
    for _, args in ipairs { "--key-jobs 0", "--key-jobs x", "--key-queue -1" } do
      local out, rc = server.run(args)
      assert.are.equal(2, rc, out)
      assert.matches(args:match("^(%S+)"), out, 1, true)
    end
  end)
end)

describe("fair shares: terminals of one sandbox #integration", function()
  it("a run that opens terminals until it cannot gets its sandbox's own 64, in each of two runs", function()
    local srv = server.start {}
    local c = core.client(srv.client_opts())
    -- six processes (a process may hold 256 descriptors) each open what
    -- they can and hold it until all have counted
    local greedy = table.concat({
      "import os",
      "counts, errs, kids = 0, set(), []",
      "done_r, done_w = os.pipe()",
      "for _ in range(6):",
      "  r, w = os.pipe()",
      "  if os.fork() == 0:",
      "    os.close(done_w)",
      "    held, err = [], ''",
      "    try:",
      "      for _ in range(100): held.append(os.openpty())",
      "    except OSError as e: err = e.strerror",
      "    os.write(w, ('%d %s' % (len(held), err)).encode())",
      "    os.read(done_r, 1)",
      "    os._exit(0)",
      "  kids.append(r)",
      "for r in kids:",
      "  n, _, e = os.read(r, 200).decode().partition(' ')",
      "  counts += int(n)",
      "  if e: errs.add(e)",
      "os.close(done_w)",
      "for _ in kids: os.wait()",
      "print(counts, sorted(errs))",
    }, "\n") .. "\n"
    local jobs = {}
    for i = 1, 2 do
      local r, doc = call(c, "POST", "/execute/async", { language = "python", code = greedy, ttl = 60 })
      assert.are.equal(202, r.status, r.body)
      jobs[i] = doc
    end
    local docs = {}
    for i = 1, 2 do docs[i] = finished(c, jobs[i]) end
    c:close()
    srv.stop()
    for i = 1, 2 do
      assert.are.equal("completed", docs[i].status, json.encode(docs[i]))
      -- the sandbox's devpts has max=64: the 65th open fails (ENOSPC)
      assert.are.equal("64 ['No space left on device']\n", docs[i].stdout)
    end
  end)
end)
