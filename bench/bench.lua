-- make bench: every figure next to its baseline, both measured in the
-- same run, in rounds that alternate between them (the machine's load
-- changes under a benchmark that runs for a minute, and other people's
-- tests may share its cores); medians and p95 of all rounds. It never
-- passes or fails: it prints what it measured, what its targets say
-- about it, and how busy the machine was meanwhile.
--
-- Environment: BENCH_ROUNDS (default 5), BENCH_PER (samples per figure per
-- round, 12), BENCH_JOBS (jobs per client in the throughput runs, 25),
-- BENCH_POOL (sandboxes per shape, 16: as deep as a figure's burst, so
-- that a burst is served from the pool; it refills in the pauses),
-- BENCH_BASELINE_SERVER (another unsandboxd binary, e.g. one built from
-- an older commit: bench/run.sh builds the one from before
-- sandboxes were started ahead, whose throughput is measured in the same rounds as "baseline
-- server").
local unsandbox = require "unsandbox"
local server = require "spec.helpers.unsandboxd"
local socket = require "socket"      -- gettime(): a microsecond wall clock
local util = require "bench.util"

local ROUNDS = tonumber(os.getenv("BENCH_ROUNDS")) or 5
local PER = tonumber(os.getenv("BENCH_PER")) or 12
local JOBS = tonumber(os.getenv("BENCH_JOBS")) or 25
local CLIENTS = 8
local IDLE_S = 5          -- the window in which an idle pool's CPU is counted (in 10 ms ticks)
local POOL = tonumber(os.getenv("BENCH_POOL")) or 16
local BASELINE_SERVER = os.getenv("BENCH_BASELINE_SERVER")
local q = server.sh_quote

local function now_ms() return socket.gettime() * 1000 end

-- Samples of `n` calls of f, each timed in milliseconds.
local function timed(n, f)
  local s = {}
  for i = 1, n do
    local t0 = now_ms()
    f()
    s[i] = now_ms() - t0
  end
  return s
end

local tool = util.tool_ms

local function spawn(n, argv, uid, opens)
  local words = {}
  for i, a in ipairs(argv) do words[i] = q(a) end
  local open = {}
  for i, o in ipairs(opens or {}) do open[i] = "--open " .. q(o) .. " " end
  return tool(string.format("spawn %d %s%s-- %s", n, uid and ("--uid " .. uid .. " ") or "",
    table.concat(open), table.concat(words, " ")))
end

local machine = util.machine()
print(string.format("make bench: %s, %d cores, Linux %s; load average at start %s",
  machine.cpu, machine.cores, machine.kernel, util.loadavg()))
print(string.format("%d rounds, %d samples per figure per round, figure and baseline alternating; "
  .. "median (p95) in ms", ROUNDS, PER))
local account = util.account_start()

local servers = {
  pool = server.start { args = { "--pool", tostring(POOL), "--pool-shapes", "bash,python" } },
  cold = server.start(),
  -- no --pool: the small pool a server keeps by default
  defaults = server.start { pool_default = true },
}
if BASELINE_SERVER then
  local saved = server.bin
  server.bin = BASELINE_SERVER
  servers.baseline = server.start { pool_default = true }   -- it knows no --pool
  server.bin = saved
end
local server_ticks = {}
for name, s in pairs(servers) do server_ticks[name] = util.process_ticks(s.pid) end

local ok, err = pcall(function()
  local pc = unsandbox.client(servers.pool.client_opts())
  local cc = unsandbox.client(servers.cold.client_opts())
  local dc = unsandbox.client(servers.defaults.client_opts())
  local bwrap, bwrap_files = util.bwrap_argv()
  local lua_env = "LUA_PATH='lua/?.lua;lua/?/init.lua;;' LUA_CPATH='lua/?.so;;' "
  -- the facade as `make install` installs it: precompiled (build/luac)
  local installed_env = "LUA_PATH='build/luac/?.lua;build/luac/?/init.lua;;' LUA_CPATH='lua/?.so;;' "

  -- warm-ups: connections, caches, the pools' first refills
  assert(pc:health()); assert(cc:health())
  for _ = 1, 3 do
    assert(pc:execute_code("bash", "true")); assert(pc:execute_code("python", "print(1)"))
    assert(cc:execute_code("bash", "true")); assert(dc:execute_code("bash", "true"))
  end
  socket.sleep(0.5)

  local figures = {
    { name = "client: health() round trip", base = "raw libcurl keep-alive GET",
      run = function() return timed(PER, function() assert(pc:health()) end) end,
      baseline = function() return tool(string.format("http %d %s/health", PER, servers.pool.url)) end },
    { name = 'execute_code("bash", "true")', base = "bash -c true spawned",
      run = function() return timed(PER, function() assert(pc:execute_code("bash", "true")) end) end,
      baseline = function() return spawn(PER, { "/usr/bin/bash", "-c", "true" }) end,
      target = function(m, b) return string.format("<= 2.0x: %s", m <= 2 * b and "met"
        or string.format("NOT met by %.0f%%", (m / b / 2 - 1) * 100)) end },
    { name = "  the same with no pool (cold)", base = "the bare bwrap spawn",
      run = function() return timed(PER, function() assert(cc:execute_code("bash", "true")) end) end,
      baseline = function() return spawn(PER, bwrap, 65534, bwrap_files) end },
    { name = "  the same, the server's defaults", base = "bash -c true spawned",
      run = function() return timed(PER, function() assert(dc:execute_code("bash", "true")) end) end,
      baseline = function() return spawn(PER, { "/usr/bin/bash", "-c", "true" }) end },
    { name = 'execute_code("python", "print(1)")', base = "python3 -c 'print(1)'",
      run = function() return timed(PER, function()
        assert(pc:execute_code("python", "print(1)")) end) end,
      baseline = function() return spawn(PER, { "/usr/bin/python3", "-c", "print(1)" }) end,
      target = function(m, b) return string.format("<= 2x: %s", m <= 2 * b and "met" or "NOT met") end },
    { name = "unlua -e ''", base = "lua5.4 -e ''",
      run = function() return spawn(PER, { "bin/unlua", "-e", "" }) end,
      baseline = function() return spawn(PER, { "/usr/bin/lua5.4", "-e", "" }) end,
      target = function(m, b) return string.format("<= 1.3x: %s", m <= 1.3 * b and "met" or "NOT met") end },
    { name = "lua5.4 -e 'require \"unsandbox\"'", base = "lua5.4 -e ''",
      run = function() return tool(string.format("spawn %d -- env %s/usr/bin/lua5.4 -e %s", PER,
        installed_env, q('require "unsandbox"'))) end,
      baseline = function() return tool(string.format("spawn %d -- env %s/usr/bin/lua5.4 -e ''",
        PER, installed_env)) end,
      target = function(m, b) return string.format("<= 3x: %s", m <= 3 * b and "met" or "NOT met") end },
    { name = "  the same from the source tree", base = "lua5.4 -e ''",
      run = function() return tool(string.format("spawn %d -- env %s/usr/bin/lua5.4 -e %s", PER,
        lua_env, q('require "unsandbox"'))) end,
      baseline = function() return tool(string.format("spawn %d -- env %s/usr/bin/lua5.4 -e ''",
        PER, lua_env)) end },
  }
  local samples = {}
  -- each measurement starts with the pool full, so that neither a figure
  -- nor its baseline shares the machine with the refill of the one before
  local function quiet(f) return function() util.await_pool(pc); util.await_pool(dc); return f() end end
  local before, dbefore = pc:call("GET", "/health").pool, dc:call("GET", "/health").pool
  for r = 1, ROUNDS do
    for i, f in ipairs(figures) do
      samples[i] = samples[i] or { run = {}, base = {} }
      -- which goes first alternates too
      local a, b = quiet(f.run), quiet(f.baseline)
      if r % 2 == 0 then util.append(samples[i].base, b()); util.append(samples[i].run, a())
      else util.append(samples[i].run, a()); util.append(samples[i].base, b()) end
    end
  end
  local after, dafter = pc:call("GET", "/health").pool, dc:call("GET", "/health").pool
  print()
  print(string.format("%-36s %-18s %-30s %-16s %s", "figure", "median (p95)", "baseline",
    "median (p95)", "ratio"))
  for i, f in ipairs(figures) do
    local m, b = util.stats(samples[i].run), util.stats(samples[i].base)
    print(string.format("%-36s %7.2f (%7.2f)  %-30s %6.2f (%6.2f)  %5.2fx  %s", f.name, m.median,
      m.p95, f.base, b.median, b.p95, m.median / b.median, f.target and f.target(m.median, b.median) or ""))
  end
  print(string.format("pooled runs: %d found a sandbox ready, %d started cold (pool of %d per shape)",
    after.hits - before.hits, after.misses - before.misses, POOL))
  print(string.format("the server's defaults: a pool of %d per shape (%d shapes); %d runs found a sandbox ready, "
    .. "%d started cold", dafter.size, #dafter.shapes, dafter.hits - dbefore.hits, dafter.misses - dbefore.misses))

  -- what a full pool costs while nothing runs: the memory of its
  -- sandboxes' processes, and the CPU of the server and of them
  local function idle_cost(label, srv, c)
    util.await_pool(c)
    socket.sleep(0.5)
    local pids = util.sandbox_pids(srv)
    local kb, t0 = 0, util.process_ticks(srv.pid)
    for _, pid in ipairs(pids) do kb = kb + util.pss_kb(pid); t0 = t0 + util.process_ticks(pid) end
    socket.sleep(IDLE_S)
    local t1 = util.process_ticks(srv.pid)
    for _, pid in ipairs(pids) do t1 = t1 + util.process_ticks(pid) end
    print(string.format("  %-34s %3d sandbox processes, PSS %5.1f MiB; idle CPU %.1f ms a second "
      .. "(server and sandboxes, over %d s)", label, #pids, kb / 1024, (t1 - t0) * util.TICK_MS / IDLE_S, IDLE_S))
  end
  print("an idle full pool:")
  idle_cost(string.format("the server's defaults (%d x %d)", dafter.size, #dafter.shapes), servers.defaults, dc)
  idle_cost(string.format("the bench's pool (%d x 2)", POOL), servers.pool, pc)

  -- throughput: 8 client processes, JOBS runs each, against each server
  -- in turn, the order rotating between rounds
  local order = { "pool", "cold" }
  if servers.baseline then order[#order + 1] = "baseline" end
  local tp = {}
  for r = 1, ROUNDS do
    for k = 0, #order - 1 do
      local name = order[(r + k - 1) % #order + 1]
      tp[name] = tp[name] or {}
      tp[name][#tp[name] + 1] = util.throughput(servers[name], CLIENTS, JOBS)
    end
  end
  print()
  print(string.format("throughput, %d clients x %d bash \"true\" runs, %d rounds:", CLIENTS, JOBS, ROUNDS))
  local summary = {}
  for _, name in ipairs(order) do
    local s = util.summarise(tp[name])
    summary[name] = s
    print(string.format("  %-16s %7.1f jobs/s (median of rounds; lowest %5.1f)   CPU per job: server and "
      .. "its sandboxes %5.2f ms, whole machine %5.2f ms", name .. " server", s.rate, s.low,
      s.server_cpu, s.machine_cpu))
  end
  if summary.baseline then
    print(string.format("  pool server against the baseline server: %.2fx the jobs per second (target >= 2x: "
      .. "%s); CPU per job %.2fx for the server and its sandboxes, %.2fx for the whole machine",
      summary.pool.rate / summary.baseline.rate,
      (summary.pool.rate >= 2 * summary.baseline.rate) and "met" or "NOT met",
      summary.pool.server_cpu / summary.baseline.server_cpu,
      summary.pool.machine_cpu / summary.baseline.machine_cpu))
  else
    print("  (no baseline server: BENCH_BASELINE_SERVER unset and no git history to build one from)")
  end
  pc:close(); cc:close(); dc:close()
end)
for name, s in pairs(servers) do
  util.note_server(account, s, server_ticks[name])
  s.stop()
end
if util.cleanup then util.cleanup() end
local busy = util.account_end(account)
print()
print(string.format("machine: load average at the end %s; %.0f%% of %d cores busy during the bench, "
  .. "%.0f%% of them outside the bench (other users)", util.loadavg(), busy.total, machine.cores,
  busy.others))
if not ok then error(err, 0) end
