-- Output that costs what it weighs: a bash run that writes 1 MiB of
-- stdout (and one that writes 1 KiB, the fixed cost of a run) through the
-- execution API of a server with its defaults, next to the same program
-- spawned on the host with its stdout read to the end (bench/tool.c spawn
-- --read); and the server's own CPU per run (unsandboxd's utime + stime,
-- without its sandboxes'): taking the output in, storing the finished job
-- and writing the reply. Goals for 1 MiB: <= 8 ms of server CPU, <= 2.2x
-- the local spawn. Rounds alternate between the two sides; medians.
-- Figures only, never pass/fail. BENCH_ROUNDS (5) rounds of 10 runs a side.
local unsandbox = require "unsandbox"
local server = require "spec.helpers.unsandboxd"
local socket = require "socket"
local util = require "bench.util"

local ROUNDS = tonumber(os.getenv("BENCH_ROUNDS")) or 5
local PER = 10

local SIZES = { { name = "1 KiB", bytes = 1024 }, { name = "1 MiB", bytes = 1048576 } }

local function program(bytes) return string.format("head -c %d /dev/zero | tr '\\0' x", bytes) end

local function verdict(ok) return ok and "met" or "NOT met" end

print(string.format("output of a run, %d rounds of %d runs a side (load average at the start %s)", ROUNDS,
  PER, util.loadavg()))
local srv = server.start { pool_default = true }
local ok, err = pcall(function()
  local c = unsandbox.client(srv.client_opts())
  for _, s in ipairs(SIZES) do assert(c:execute_code("bash", program(s.bytes))) end
  for _, s in ipairs(SIZES) do
    local lat, base, ticks = {}, {}, 0
    local code = program(s.bytes)
    local function client_side()
      util.await_pool(c)
      local t = util.process_ticks(srv.pid, true)
      for _ = 1, PER do
        local t0 = socket.gettime()
        local r = assert(c:execute_code("bash", code))
        lat[#lat + 1] = (socket.gettime() - t0) * 1000
        assert(#r.stdout == s.bytes, "short output")
      end
      ticks = ticks + util.process_ticks(srv.pid, true) - t
    end
    local function local_side()
      util.append(base, util.tool_ms(string.format("spawn %d --read -- /usr/bin/bash -c %s", PER,
        server.sh_quote(code))))
    end
    for r = 1, ROUNDS do
      if r % 2 == 1 then client_side(); local_side() else local_side(); client_side() end
    end
    s.cpu = ticks * util.TICK_MS / (ROUNDS * PER)
    s.lat, s.base = util.stats(lat).median, util.stats(base).median
  end
  c:close()
  local kib, mib = SIZES[1], SIZES[2]
  for _, s in ipairs(SIZES) do
    print(string.format("  %s of stdout: run %6.2f ms, local spawn read to its end %6.2f ms (%.2fx); "
      .. "server CPU per run %5.2f ms", s.name, s.lat, s.base, s.lat / s.base, s.cpu))
  end
  print(string.format("  1 MiB: server CPU %.2f ms (goal <= 8 ms: %s; the output's own share %.2f ms over a "
    .. "1 KiB run), latency %.2fx the local spawn (goal <= 2.2x: %s)", mib.cpu, verdict(mib.cpu <= 8),
    mib.cpu - kib.cpu, mib.lat / mib.base, verdict(mib.lat / mib.base <= 2.2)))
end)
srv.stop()
print(string.format("  load average at the end %s", util.loadavg()))
if not ok then error(err, 0) end
