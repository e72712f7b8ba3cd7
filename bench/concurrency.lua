-- make bench, concurrency figures: fan-out of jobs through tasks, the
-- frame budget of a C host stepping the library at 60 Hz, and the
-- per-request overhead of 1 and 16 tasks next to a raw libcurl keep-alive
-- loop (bench/tool.c) measured in the same run. Also the cost of a request
-- hook, and the fan-out of calls held by the server on a fresh client
-- next to a warm one (a fresh one once ran them one at a time). Figures
-- and ratios are printed; nothing passes or fails.
--
-- Environment: BENCH_FANOUT (jobs, 64; run 16 and then all of them at
-- once), BENCH_SEQ (jobs run one after the other for the sequential rate,
-- 8), BENCH_REQUESTS (2000).
local unsandbox = require "unsandbox"
local server = require "spec.helpers.unsandboxd"
local socket = require "socket"
local util = require "bench.util"

local FANOUT = tonumber(os.getenv("BENCH_FANOUT")) or 64
local SEQ = tonumber(os.getenv("BENCH_SEQ")) or 8
local REQUESTS = tonumber(os.getenv("BENCH_REQUESTS")) or 2000
local CONC = 16
-- the jobs one key may run at once on the server of the frame loop and
-- the held calls: the server's default for CONC workers (3/4 of them)
local KEY_JOBS = CONC * 3 // 4
local HELD, HOLD_MS = 8, 1000   -- the fresh-client fan-out: calls, and how long the server holds each

local function now_ms() return socket.gettime() * 1000 end

local function run_tool(args)
  local total = 0
  for _, ms in ipairs(util.tool_ms(args)) do total = total + ms end
  return total
end

-- n requests of call(c) spread over `tasks` tasks; wall ms.
local function requests(c, n, tasks, call)
  local t0 = now_ms()
  if tasks == 1 then
    for _ = 1, n do assert(call(c)) end
  else
    local left = n
    for _ = 1, tasks do
      unsandbox.spawn(function()
        while left > 0 do
          left = left - 1
          assert(call(c))
        end
      end)
    end
    assert(unsandbox.run(600))
  end
  return now_ms() - t0
end

-- Fan-out: FANOUT jobs of `sleep 1` through map(), `conc` at once, on a
-- fresh client (no connection yet) and then on the same client warm. The
-- server runs every one of them at once for the one key (--key-jobs as
-- large as the fan-out, and memory for all), so what is measured is the
-- client's and the sandboxes' start, not the share a server keeps for
-- other keys (with the default share, 3/4 of the workers, the wall is
-- that many more rounds).
local function fanout(srv_f, conc, goal)
  local inputs = {}
  for i = 1, FANOUT do inputs[i] = i end
  local x = unsandbox.client(srv_f.client_opts { max_concurrency = conc })
  local walls, cpu, failed = {}, {}, 0
  for i = 1, 2 do
    util.await_pool(x)
    local t0, c0 = now_ms(), util.process_ticks(srv_f.pid)
    local out = x:map("bash", inputs, function() return "sleep 1" end, { concurrency = conc })
    walls[i] = now_ms() - t0
    cpu[i] = (util.process_ticks(srv_f.pid) - c0) * util.TICK_MS
    for j = 1, FANOUT do if not out[j] then failed = failed + 1 end end
  end
  x:close()
  local ideal = math.ceil(FANOUT / conc) * 1000
  local judge = function(w)
    return string.format("%.0f ms (%.2fx; goal <= %.2fx: %s)", w, w / ideal, goal,
      w / ideal <= goal and "met" or string.format("NOT met by %.0f%%", (w / ideal / goal - 1) * 100))
  end
  print(string.format("  fan-out: %d jobs of `sleep 1`, %d at once (ideal %d ms): fresh client %s, warm %s%s",
    FANOUT, conc, ideal, judge(walls[1]), judge(walls[2]),
    failed > 0 and string.format("; %d FAILED", failed) or ""))
  -- what bounds it on a small machine: the CPU spent meanwhile (the runs'
  -- sandboxes set up and torn down, bash and sleep, the server, the pool
  -- refilling behind them), which the cores share with the jobs' starts
  local cores = util.machine().cores
  print(string.format("    the server and its sandboxes: %.1f ms of CPU a job (fresh) and %.1f ms (warm), "
    .. "%.0f ms of each of the %d cores for the %d jobs", cpu[1] / FANOUT, cpu[2] / FANOUT,
    math.min(cpu[1], cpu[2]) / cores, cores, FANOUT))
end

print()
print("concurrency: one thread, tasks on one event loop")
do
  -- a server sized for the fan-out: every run claims its memory limit
  -- (1 GiB) from a budget of 3/4 of the host's memory, which on a small
  -- host holds fewer than FANOUT, so the budget is FANOUT GiB (each
  -- `sleep 1` uses a few MiB); and a pool as wide as the fan-out, so that
  -- sandboxes are started while the jobs sleep, not when they are asked for
  local srv_f = server.start { args = { "--workers", tostring(FANOUT), "--key-jobs", tostring(FANOUT),
    "--queue", tostring(FANOUT * 2), "--memory-budget-mb", tostring(FANOUT * 1024),
    "--pool", tostring(FANOUT) } }
  local c = unsandbox.client(srv_f.client_opts())
  local t0 = now_ms()
  for _ = 1, SEQ do assert(c:execute_code("bash", "sleep 1")) end
  local seq_each = (now_ms() - t0) / SEQ
  c:close()
  local ok, err = pcall(function()
    fanout(srv_f, CONC, 1.10)
    fanout(srv_f, FANOUT, 1.30)
  end)
  srv_f.stop()
  print(string.format("    one after the other: %.0f ms a job (measured over %d), so %.0f ms for all",
    seq_each, SEQ, seq_each * FANOUT))
  if not ok then error(err, 0) end
end
local srv = server.start { args = { "--workers", tostring(CONC), "--key-jobs", tostring(KEY_JOBS),
  "--queue", tostring(FANOUT * 2), "--enable-faults" } }
local ok, err = pcall(function()
  local c = unsandbox.client(srv.client_opts { max_concurrency = CONC })
  assert(c:execute_code("bash", "true"))

  -- fresh-client fan-out: calls issued at once, each held by the server,
  -- on a client that has no connection yet and on the same client warm
  local held = function(x)
    assert(c:call("POST", "/_faults", { mode = "latency", ms = HOLD_MS, count = HELD, path = "/jobs" }))
    local t1 = now_ms()
    for _ = 1, HELD do unsandbox.spawn(function() assert(x:list_jobs()) end) end
    assert(unsandbox.run(120))
    return now_ms() - t1
  end
  local fresh_c = unsandbox.client(srv.client_opts())
  local fresh = held(fresh_c)
  local warm = held(fresh_c)
  fresh_c:close()
  print(string.format("  fresh-client fan-out: %d calls at once, each held %d ms by the server: "
    .. "fresh client %.0f ms, warm %.0f ms (all at once: %d ms; one at a time: %d ms)",
    HELD, HOLD_MS, fresh, warm, HOLD_MS, HELD * HOLD_MS))

  -- frame budget: the C host of examples/embed, 3 runs; the wall time of
  -- a step includes the machine's preemptions, its CPU time does not
  local env = string.format("UNSANDBOX_URL=%s UNSANDBOX_PUBLIC_KEY=%s UNSANDBOX_SECRET_KEY=%s",
    srv.url, srv.public_key, srv.secret_key)
  local load0 = util.loadavg()
  local runs = {}
  for i = 1, 3 do
    local p = assert(io.popen(env .. " examples/embed/frame_loop lua 32 2>&1"))
    local text = p:read("a")
    p:close()
    local waited, preempted = text:match("its context switches: (%d+) waited, (%d+) preempted")
    runs[i] = { step = tonumber(text:match("longest step%(0%) ([%d.]+) ms")) or math.huge,
      cpu = tonumber(text:match("most CPU in one step%(0%) ([%d.]+) ms")) or math.huge,
      frame = tonumber(text:match("longest frame ([%d.]+) ms")) or math.huge,
      waited = tonumber(waited) or -1, preempted = tonumber(preempted) or -1,
      right = text:match("jobs (%d+) of 32 right") or "?" }
  end
  table.sort(runs, function(a, b) return a.step < b.step end)
  local best, worst = runs[1], runs[3]
  local verdict = best.step < 2 and "met" or "NOT met"
  if best.step >= 2 and best.waited == 0 and best.cpu < 2 then
    verdict = "NOT met on the wall clock, by preemption: the step never waited and its CPU is under 2 ms"
  end
  print(string.format("  frame budget: 60 Hz host, 32 jobs of `sleep 1`, 3 runs: longest step(0) %.2f ms in "
    .. "the best run (%d context switches waiting, %d preempted), %.2f ms in the worst (%d waiting, %d "
    .. "preempted); most CPU in one step(0) %.2f-%.2f ms; target < 2 ms: %s; longest frame %.2f ms; jobs "
    .. "right %s/%s/%s; load average %s -> %s", best.step, best.waited, best.preempted, worst.step, worst.waited,
    worst.preempted, math.min(runs[1].cpu, runs[2].cpu, runs[3].cpu), math.max(runs[1].cpu, runs[2].cpu,
    runs[3].cpu), verdict, best.frame, runs[1].right, runs[2].right, runs[3].right, load0, util.loadavg()))

  -- overhead per request: signed GET /jobs through the client, 1 and 16
  -- tasks; unsigned GET /health through the client and through raw libcurl
  local list = function(x) return x:list_jobs() end
  local health = function(x) return x:health() end
  local raw = run_tool(string.format("http %d %s/health", REQUESTS, srv.url))
  local h1 = requests(c, REQUESTS, 1, health)
  local h16 = requests(c, REQUESTS, CONC, health)
  local s1 = requests(c, REQUESTS, 1, list)
  local s16 = requests(c, REQUESTS, CONC, list)
  unsandbox.on_request(function() end)
  local hooked = requests(c, REQUESTS, 1, list)
  unsandbox.on_request(nil)
  local us = function(ms) return ms * 1000 / REQUESTS end
  print(string.format("  overhead, %d requests each (microseconds a request):", REQUESTS))
  print(string.format("    raw libcurl keep-alive GET /health (C, one handle)   %7.0f", us(raw)))
  print(string.format("    client GET /health, 1 task  %7.0f (%.2fx raw)   %d tasks %7.0f (%.2fx raw)",
    us(h1), h1 / raw, CONC, us(h16), h16 / raw))
  print(string.format("    client signed GET /jobs, 1 task  %7.0f   %d tasks %7.0f (%.2fx of 1 task)",
    us(s1), CONC, us(s16), s16 / s1))
  print(string.format("    the same, 1 task, with a request hook set  %7.0f (%.2fx without)", us(hooked),
    hooked / s1))
  c:close()
end)
srv.stop()
print(string.format("  machine load average now %s", util.loadavg()))
if not ok then error(err, 0) end
