-- make bench, fair shares: the latency of the probes (GET /health of the
-- execution API, GET /livez of the Control Plane, each on a fresh
-- connection as a load balancer's probe) while one party saturates its
-- own limits, next to the same server's idle latency in the same run.
-- The party: one key and one tenant driven from one local process,
-- holding thousands of idle sockets on both listeners, its share of the
-- job pool in `sleep` jobs, its share of the object transfer gate in
-- trickled uploads, and waves of file requests on a runtime whose agent
-- its own code stopped (SIGSTOP), each wave at its share of agent calls.
-- The probes run in a child process (this file with `probe`), so the
-- attacker's loop keeps feeding its uploads meanwhile; rounds alternate
-- idle and busy, so the machine's own drift falls on both. Figures only,
-- never pass/fail (the goal: the saturated p99 within 2x of idle).
--
-- Environment: BENCH_PROBES (probes per listener and phase, 1000).
local server = require "spec.helpers.unsandboxd"
local cp = require "spec.helpers.cp"
local mcp = require "spec.helpers.mcp"
local obj = require "spec.helpers.objects"
local raw = require "spec.helpers.rawhttp"
local fs = require "spec.helpers.fs"
local util = require "bench.util"
local core = require "unsandbox.core"
local json = require "cjson"
local socket = require "socket"

local PROBES = tonumber(os.getenv("BENCH_PROBES")) or 1000

-- One probe: GET path on a fresh connection; milliseconds, or nil and why.
local function probe_once(port, path)
  local t0 = socket.gettime()
  local s = socket.tcp()
  s:settimeout(10)
  local ok, err = s:connect("127.0.0.1", port)
  if not ok then s:close(); return nil, "connect: " .. tostring(err) end
  s:send(raw.head("GET", path, { Connection = "close" }))
  local status, why = raw.read_response(s)
  s:close()
  if status ~= 200 then return nil, tostring(status or why) end
  return (socket.gettime() - t0) * 1000
end

-- The child: `probe EXEC_PORT CP_PORT N OUT` writes one line per probe
-- ("health <ms>" / "livez <ms>" / "<path> failed") to OUT, then "done".
if arg and arg[1] == "probe" then
  local exec_port, cp_port, n, out = tonumber(arg[2]), tonumber(arg[3]), tonumber(arg[4]), arg[5]
  local f = assert(io.open(out .. ".part", "w"))
  for _ = 1, n do
    for _, t in ipairs { { exec_port, "/health", "health" }, { cp_port, "/livez", "livez" } } do
      local ms, why = probe_once(t[1], t[2])
      f:write(ms and string.format("%s %.3f\n", t[3], ms) or (t[3] .. " failed " .. why .. "\n"))
    end
  end
  f:close()
  os.rename(out .. ".part", out)
  os.exit(0)
end

local function p99(samples)
  local s = {}
  for i, v in ipairs(samples) do s[i] = v end
  table.sort(s)
  return s[math.max(1, math.ceil(#s * 0.99))] or 0, util.stats(s).median or 0
end

-- Starts the prober; returns a function that, called repeatedly, gives
-- nil while it runs, then its figures.
local function start_probes(srv)
  local out = os.tmpname()
  os.remove(out)
  os.execute(string.format("lua5.4 bench/fairness.lua probe %d %d %d %s &", srv.port, srv.cp_port,
    PROBES, server.sh_quote(out)))
  return function()
    local text = fs.read(out)
    if not text then return nil end
    os.remove(out)
    local r = { health = {}, livez = {}, failed = 0 }
    r.why = {}
    for kind, v, why in text:gmatch("(%a+) (%S+)([^\n]*)\n") do
      if v == "failed" then
        r.failed = r.failed + 1
        r.why[#r.why + 1] = kind .. why
      else
        table.insert(r[kind], tonumber(v))
      end
    end
    return r
  end
end

local function wait_probes(poll, tick)
  for _ = 1, 12000 do                          -- at most 20 minutes
    local r = poll()
    if r then return r end
    if tick then tick() end
    socket.sleep(0.05)
  end
  error("the prober did not finish")
end

local function idle_sockets(port, n)
  local t = {}
  for i = 1, n do
    local s = socket.tcp()
    s:settimeout(5)
    assert(s:connect("127.0.0.1", port))
    t[i] = s
  end
  return t
end

-- The key's share of the job pool in sleep jobs: their ids.
local function fill_jobs(c)
  local ids = {}
  for _ = 1, 1000 do
    local r = c:request("POST", "/execute/async", json.encode { language = "bash", code = "sleep 900", ttl = 900 })
    if not r or r.status ~= 202 then break end
    ids[#ids + 1] = json.decode(r.body).job_id
  end
  return ids
end

-- 64 uploads of the tenant, the ones admitted kept fed above the body
-- rate; returns the feeder and how many were refused.
local function hold_uploads(srv, key, round)
  local size, piece = 64 * 1024 * 1024, ("u"):rep(16 * 1024)
  local ups = {}
  for i = 1, 64 do
    local _, t = obj.ticket(srv, key, { scope = "upload", upload_id = "bench-" .. round .. "-" .. i,
      path = "source/f" },
      "upload", nil, { ["X-Acting-Subject"] = ("b"):rep(32) })
    local s = socket.tcp()
    s:settimeout(5)
    assert(s:connect("127.0.0.1", srv.cp_port))
    s:send(raw.head("PUT", "/v1/storage/content", { Authorization = "Bearer " .. t.access_token,
      ["Content-Length"] = tostring(size), ["Content-Type"] = "application/octet-stream" }))
    ups[i] = s
  end
  -- a piece every half second each: 32 KiB/s, twice the minimum rate
  -- (a party holding its share, not one moving bulk data)
  local next_at = 0
  local function feed()
    if socket.gettime() < next_at then return end
    next_at = socket.gettime() + 0.5
    for _, s in ipairs(ups) do
      s:settimeout(0)
      s:send(piece)
    end
  end
  for _ = 1, 4 do feed(); socket.sleep(0.25) end
  local refused = 0
  for _, s in ipairs(ups) do
    s:settimeout(0)
    local line = s:receive("*l")
    if line and line:find(" 429 ", 1, true) then refused = refused + 1 end
  end
  return feed, refused, ups
end

-- A wave of 600 file requests on a sandbox whose agent is stopped; the
-- next wave starts once the runtime is declared dead; called with true,
-- it ends the last one.
local function agent_waves(srv, key, round)
  local wave, socks, sb = 0, {}, nil
  return function(stop)
    if stop then
      for _, s in ipairs(socks) do s:close() end
      if sb then cp.request(srv, "DELETE", "/v1/sandboxes/" .. sb.id, { token = key }) end
      return wave
    end
    local ended = not sb
    if sb then
      local _, v = cp.request(srv, "GET", "/v1/sandboxes/" .. sb.id, { token = key })
      ended = v.status == "failed" or v.status == "released"
    end
    if not ended then return wave end
    for _, s in ipairs(socks) do s:close() end
    socks = {}
    wave = wave + 1
    local ws
    ws, sb = mcp.sandbox(srv, "bench-stopper-" .. round .. "-" .. wave, key)
    mcp.sh(srv, sb, "kill -STOP $(cut -d' ' -f4 /proc/$PPID/stat)")
    local path = "/v1/workspaces/" .. ws.workspace_id .. "/files/list"
    for i = 1, 600 do
      local s = socket.tcp()
      s:settimeout(5)
      assert(s:connect("127.0.0.1", srv.cp_port))
      s:send(raw.head("GET", path, { Authorization = "Bearer " .. ws.access_token, Connection = "close" }))
      socks[i] = s
    end
    return wave
  end
end

-- The party's load, started: returns what it holds, a function that
-- keeps it up (called between probes; with waves, a new wave of requests
-- on a stopped agent whenever the last one's runtime was declared dead)
-- and one that ends it.
local function start_party(srv, c, key, round)
  local held = { idle_sockets(srv.port, 1100), idle_sockets(srv.cp_port, 1100) }
  local jobs = fill_jobs(c)
  local feed, refused, ups = hold_uploads(srv, key, round)
  local waves = agent_waves(srv, key, round)
  local party = { jobs = #jobs, refused = refused, waves = 0 }
  local function tick(with_waves)
    feed()
    if with_waves then party.waves = waves() end
  end
  local function stop()
    for _, s in ipairs(ups) do s:close() end
    for _, list in ipairs(held) do for _, s in ipairs(list) do s:close() end end
    for _, id in ipairs(jobs) do c:request("DELETE", "/jobs/" .. id) end
    waves(true)
  end
  return party, tick, stop
end

local function phase() return { health = {}, livez = {}, failed = 0, why = {} } end

local function add(into, r)
  util.append(into.health, r.health)
  util.append(into.livez, r.livez)
  into.failed = into.failed + r.failed
  util.append(into.why, r.why)
end

local function report(name, ph, idle)
  local h, hm = p99(ph.health)
  local l, lm = p99(ph.livez)
  local ih, il = p99(idle.health), p99(idle.livez)
  local function ratio(v, base) return idle == ph and "" or string.format("   p99 %.2fx idle", v / base) end
  print(string.format("  %-26s /health median %5.2f p99 %6.2f ms%s", name, hm, h, ratio(h, ih)))
  print(string.format("  %-26s /livez  median %5.2f p99 %6.2f ms%s", "", lm, l, ratio(l, il)))
  if ph.failed > 0 then print("    probes failed: " .. ph.failed .. " (" .. table.concat(ph.why, ", ") .. ")") end
end

local ROUNDS = 3
local srv = server.start {}
local ok, err = pcall(function()
  local c = core.client(srv.client_opts())
  local key = cp.tenant_key(srv, "greedy", { act_as_subjects = true })
  for _ = 1, 20 do probe_once(srv.port, "/health"); probe_once(srv.cp_port, "/livez") end
  local idle, holding, waving = phase(), phase(), phase()
  local party
  for round = 1, ROUNDS do
    add(idle, wait_probes(start_probes(srv)))
    local tick, stop
    party, tick, stop = start_party(srv, c, key, round)
    add(holding, wait_probes(start_probes(srv), function() tick(false) end))
    tick(true)
    add(waving, wait_probes(start_probes(srv), function() tick(true) end))
    stop()
  end
  print(string.format("unsandboxd fair shares: %d rounds, each %d probes per listener and phase on fresh "
    .. "connections; median and p99 in ms", ROUNDS, PROBES))
  print(string.format("  the party: 2 x 1100 idle sockets, %d sleep jobs (then 429), %d of 64 uploads held "
    .. "(%d got 429); with waves: 600 file requests on a stopped agent, again once it is declared dead "
    .. "(%d in the last round)", party.jobs, 64 - party.refused, party.refused, party.waves))
  report("idle", idle, idle)
  report("party holding its shares", holding, idle)
  report("the same, with waves", waving, idle)
  c:close()
end)
srv.stop()
if not ok then error(err, 0) end
