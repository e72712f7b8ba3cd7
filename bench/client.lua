-- make bench, what the client itself costs as the work grows, each figure
-- next to a baseline measured in the same run, in rounds that alternate
-- between the two, with the machine's load average at the start and end
-- of each figure (other people's tests may share its cores):
--
--   * a signed GET /jobs on a kept connection against a raw C loop of
--     libcurl and HMAC (bench/tool.c `signed`): median latency and CPU
--     time per request (goals: <= 1.10x and <= 1.3x);
--   * a 64 MiB object downloaded to a file and uploaded from one, against
--     raw libcurl doing the same between the same server and a file
--     (goal >= 0.9x), and against raw libcurl followed by the SHA-256 check
--     the client makes as it writes;
--   (the fan-out and the longest step(0) of a frame loop are
--   bench/concurrency.lua's figures).
--
-- Where a goal is not reached the line says by how much. Figures only,
-- never pass/fail. Environment: BENCH_ROUNDS (3), BENCH_REQUESTS (1000
-- per round and side), BENCH_OBJECT_MIB (64). Run by bench/run.sh (the
-- agent tools' transfers are bench/agent.lua's).
local unsandbox = require "unsandbox"
local core = require "unsandbox.core"
local server = require "spec.helpers.unsandboxd"
local cp = require "spec.helpers.cp"
local fs = require "spec.helpers.fs"
local util = require "bench.util"

local ROUNDS = tonumber(os.getenv("BENCH_ROUNDS")) or 3
local REQUESTS = tonumber(os.getenv("BENCH_REQUESTS")) or 1000
local OBJECT_MIB = tonumber(os.getenv("BENCH_OBJECT_MIB")) or 64
local MIB = 1048576
local q = server.sh_quote

local function us() return core.loop.monotonic_us() end

-- A figure's heading and its closing line: the load average at both ends.
local function figure(title, fn)
  print(string.format("  %s (load average at the start %s)", title, util.loadavg()))
  fn()
  print(string.format("    load average at the end %s", util.loadavg()))
end

-- "met", or how far from the goal: ratio r against goal g (lower is
-- better unless higher).
local function verdict(r, g, higher)
  if (higher and r >= g) or (not higher and r <= g) then return "met" end
  return string.format("NOT met: %.1f%% %s the goal", math.abs(r / g - 1) * 100,
    higher and "below" or "above")
end

local tool = util.tool

------------------------------------------------------------------------
-- per request
------------------------------------------------------------------------

local function per_request(srv)
  figure(string.format("signed GET /jobs on a kept connection, %d rounds of %d requests a side",
    ROUNDS, REQUESTS), function()
    local c = unsandbox.client(srv.client_opts())
    assert(c:warm_up())
    assert(c:list_jobs())
    local lat, raw_lat, cpu, raw_cpu = {}, {}, 0, 0
    local function client_round()
      local c0 = os.clock()
      for _ = 1, REQUESTS do
        local t0 = us()
        assert(c:list_jobs())
        lat[#lat + 1] = us() - t0
      end
      cpu = cpu + (os.clock() - c0) * 1e6
    end
    local function raw_round()
      local s, named = tool(string.format("signed %d %s /jobs %s %s", REQUESTS, srv.url,
        srv.public_key, srv.secret_key))
      util.append(raw_lat, s)
      raw_cpu = raw_cpu + named.cpu
    end
    for r = 1, ROUNDS do
      if r % 2 == 1 then client_round(); raw_round() else raw_round(); client_round() end
    end
    c:close()
    local m, b = util.stats(lat), util.stats(raw_lat)
    local p10 = function(t) table.sort(t); return t[math.max(1, math.floor(#t / 10))] end
    local n = ROUNDS * REQUESTS
    print(string.format("    latency, median (p10): client %6.0f us (%5.0f)   raw libcurl + HMAC %6.0f us " ..
      "(%5.0f)   %.2fx (goal <= 1.10x: %s)", m.median, p10(lat), b.median, p10(raw_lat),
      m.median / b.median, verdict(m.median / b.median, 1.10)))
    print(string.format("    CPU per request: client %6.1f us   raw %6.1f us   %.2fx (goal <= 1.3x: %s)",
      cpu / n, raw_cpu / n, cpu / raw_cpu, verdict(cpu / raw_cpu, 1.3)))
  end)
end

------------------------------------------------------------------------
-- objects
------------------------------------------------------------------------

local function objects(srv, dir)
  local size = OBJECT_MIB * MIB
  figure(string.format("a %d MiB object between a file and the Control Plane, %d rounds", OBJECT_MIB,
    ROUNDS), function()
    local key = cp.tenant_key(srv, "bench", { act_as_subjects = true })
    local m = unsandbox.manager { url = srv.cp_url, token = key, env = {} }
    local src = dir .. "/object.bin"
    local f = assert(io.open(src, "wb"))
    local piece = string.rep("0123456789abcdef", MIB / 16)
    for _ = 1, OBJECT_MIB do f:write(piece) end
    f:close()
    local sha = assert(core.files.sha256_file(src))
    local times = { up = {}, down = {}, raw_up = {}, raw_down = {}, verify = {} }
    m:with_subject(string.rep("b", 32), function()
      local n = 0
      local function ticket(op, loc)
        return assert(m:issue_object_ticket(loc, op, size, nil, op == "upload" and sha or nil, 300))
      end
      local function client_side()
        n = n + 1
        local loc = { scope = "agent", agent_id = "bench", run_id = "client", path = "outputs/o" .. n }
        local t = ticket("upload", loc)
        local t0 = us()
        assert(m:upload_with_ticket(t, { path = src }))
        times.up[#times.up + 1] = us() - t0
        t = ticket("download", loc)
        os.remove(dir .. "/back.bin")
        t0 = us()
        assert(m:download_with_ticket(t, { to = dir .. "/back.bin" }))
        times.down[#times.down + 1] = us() - t0
      end
      local function raw_side()
        n = n + 1
        local loc = { scope = "agent", agent_id = "bench", run_id = "raw", path = "outputs/o" .. n }
        local t = ticket("upload", loc)
        local s = tool(string.format("put %d %s %s %s", size, q(srv.cp_url .. "/v1/storage/content"),
          q(t.access_token), q(src)))
        times.raw_up[#times.raw_up + 1] = s[1]
        t = ticket("download", loc)
        s = tool(string.format("get %d %s %s %s", size, q(srv.cp_url .. "/v1/storage/content"),
          q(t.access_token), q(dir .. "/raw.bin")))
        times.raw_down[#times.raw_down + 1] = s[1]
        -- what raw libcurl leaves undone: the check the client makes
        local t0 = us()
        assert(core.files.sha256_file(dir .. "/raw.bin"))
        times.verify[#times.verify + 1] = us() - t0
      end
      for r = 1, ROUNDS do
        if r % 2 == 1 then client_side(); raw_side() else raw_side(); client_side() end
      end
    end)
    m:close()
    local function rate(t) return OBJECT_MIB / (util.stats(t).median / 1e6) end
    for _, w in ipairs { { "download to a file", "down" }, { "upload from a file", "up" } } do
      local c, b = rate(times[w[2]]), rate(times["raw_" .. w[2]])
      print(string.format("    %-20s client %7.1f MiB/s   raw libcurl %7.1f MiB/s   %.2fx (goal >= 0.9x: %s)",
        w[1], c, b, c / b, verdict(c / b, 0.9, true)))
    end
    -- the client checks X-Content-SHA256 as it writes, on a thread of its
    -- own; on two cores that thread shares them with the receive and the
    -- server's send, so the check is not free
    local down, raw, verify = util.stats(times.down).median, util.stats(times.raw_down).median,
      util.stats(times.verify).median
    print(string.format("    the download's SHA-256 check alone %.1f ms; raw libcurl then that check %7.1f "
      .. "MiB/s (the client: %.2fx of it)", verify / 1000, OBJECT_MIB / ((raw + verify) / 1e6),
      (raw + verify) / down))
  end)
end

local srv = server.start {}
local dir = fs.tmpdir("unsb-bench-client")
local ok, err = pcall(function()
  print(string.format("the client's own cost (load %s)", util.loadavg()))
  per_request(srv)
  objects(srv, dir)
end)
fs.rm_rf(dir)
srv.stop()
if not ok then error(err, 0) end
