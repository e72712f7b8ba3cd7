-- make bench: the throughput curve of `bash true` jobs against the number
-- of client processes (k = 1, 2, 4, 8, 16), with the CPU each job costs,
-- for the server's defaults (its run queue: at most --starts jobs, the
-- cores, start their sandbox at once) next to the same server with the
-- run queue opened wide (--starts 256: every worker starts at once), the
-- baseline, measured in the same rounds, alternating which goes first.
-- It never passes or fails: it prints the figures, each k's rate as a
-- share of the curve's peak (the goal: >= 0.95x from the peak to k = 16,
-- CPU per job not rising with k), and how busy the machine was.
--
-- Environment: BENCH_ROUNDS (rounds, default 3), BENCH_TP_JOBS (jobs per
-- k, split between its clients, default 96).
local server = require "spec.helpers.unsandboxd"
local util = require "bench.util"

local ROUNDS = tonumber(os.getenv("BENCH_ROUNDS")) or 3
local TOTAL = tonumber(os.getenv("BENCH_TP_JOBS")) or 96
local KS = { 1, 2, 4, 8, 16 }

local machine = util.machine()
print()
print(string.format("throughput curve: %d cores; load average at start %s; %d rounds, about %d "
  .. "bash \"true\" jobs per k", machine.cores, util.loadavg(), ROUNDS, TOTAL))
local account = util.account_start()

local servers = {
  queue = server.start { pool_default = true },
  wide = server.start { pool_default = true, args = { "--starts", "256" } },
}
local names = { "queue", "wide" }
local label = { queue = "run queue (defaults)", wide = "no run queue (--starts 256)" }
local ticks = {}
for name, s in pairs(servers) do ticks[name] = util.process_ticks(s.pid) end

local ok, err = pcall(function()
  local runs = { queue = {}, wide = {} }
  for r = 1, ROUNDS do
    for _, k in ipairs(KS) do
      local per = math.ceil(TOTAL / k)
      for i = 0, #names - 1 do
        local name = names[(r + i - 1) % #names + 1]
        runs[name][k] = runs[name][k] or {}
        local t = runs[name][k]
        t[#t + 1] = util.throughput(servers[name], k, per)
      end
    end
  end
  for _, name in ipairs(names) do
    local sum, peak = {}, 0
    for _, k in ipairs(KS) do
      sum[k] = util.summarise(runs[name][k])
      peak = math.max(peak, sum[k].rate)
    end
    print(string.format("  %s:", label[name]))
    local low_after_peak, seen_peak = math.huge, false
    for _, k in ipairs(KS) do
      local s = sum[k]
      seen_peak = seen_peak or s.rate == peak
      if seen_peak then low_after_peak = math.min(low_after_peak, s.rate / peak) end
      print(string.format("    k = %2d  %6.1f jobs/s (%.2fx of the peak; lowest round %5.1f)   "
        .. "CPU per job: server and its sandboxes %5.2f ms (%.2fx of k = 1), whole machine %5.2f ms",
        k, s.rate, s.rate / peak, s.low, s.server_cpu, s.server_cpu / sum[1].server_cpu,
        s.machine_cpu))
    end
    print(string.format("    from the peak to k = 16: at least %.2fx of the peak (goal >= 0.95x: %s)",
      low_after_peak, low_after_peak >= 0.95 and "met" or
      string.format("NOT met, short by %.2f", 0.95 - low_after_peak)))
  end
  local q16, w16 = util.summarise(runs.queue[16]), util.summarise(runs.wide[16])
  print(string.format("  at k = 16, the run queue against none: %.2fx the jobs per second, %.2fx the "
    .. "server's CPU per job", q16.rate / w16.rate, q16.server_cpu / w16.server_cpu))
end)
for name, s in pairs(servers) do
  util.note_server(account, s, ticks[name])
  s.stop()
end
local busy = util.account_end(account)
print(string.format("  machine: load average at the end %s; %.0f%% of %d cores busy, %.0f%% of it "
  .. "outside the bench (other users)", util.loadavg(), busy.total, machine.cores, busy.others))
if not ok then error(err, 0) end
