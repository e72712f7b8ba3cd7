-- The agent tools' figures (lua/unsandbox/agent/), each next to a
-- baseline measured in the same run against the same server:
--   * spawn-to-first-output of `echo hi` (sb:spawn, then p:read) against
--     an exec of the same command (the shell tool, one exchange);
--   * a context cell's round trip (`x = x + 1` in python) against a fresh
--     exec of `python3 -c` doing the same;
--   * one write-binary of 1 000 000 bytes and one read-binary of 4 MiB
--     (the file routes' limits; wall time and the server's CPU a call)
--     against a raw libcurl PUT and GET of the same bytes (bench/tool.c);
--   * a BENCH_AGENT_MIB (default 256) MiB upload and download between a
--     local file and a workspace (the file routes in pieces) against raw
--     libcurl PUTs and GETs of the same bytes through the object content
--     route (bench/tool.c; tickets of 64 MiB, the route's limit), with
--     this process's RSS sampled at every progress call.
-- Figures only, never pass/fail.
local server = require "spec.helpers.unsandboxd"
local obj = require "spec.helpers.objects"
local fs = require "spec.helpers.fs"
local util = require "bench.util"

local MIB = 1048576
local SIZE_MIB = tonumber(os.getenv("BENCH_AGENT_MIB") or "") or 256

local unsandbox = require "unsandbox"
local core = require "unsandbox.core"

local function ms() return core.loop.monotonic_us() / 1000 end
local function rss_kb()
  return tonumber((fs.read("/proc/self/status") or ""):match("VmRSS:%s+(%d+)")) or 0
end
local function median(t) return util.stats(t).median end

local function latency(sb, m)
  local spawn, exec = {}, {}
  for i = 1, 7 do
    local t0 = ms()
    assert(m:shell("echo hi", 30, "bench-agent"))
    local t1 = ms()
    local p = assert(sb:spawn("echo hi"))
    local out = assert(p:read(30))
    local t2 = ms()
    assert(out == "hi\n")
    p:close()
    if i > 2 then exec[#exec + 1], spawn[#spawn + 1] = t1 - t0, t2 - t1 end   -- 2 warm-ups
  end
  print(string.format("  spawn to first output   %8.1f ms   exec of the same command %8.1f ms   (x%.2f)",
    median(spawn), median(exec), median(spawn) / median(exec)))
end

local function cells(sb, m)
  local ctx = assert(sb:context("python"))
  assert(ctx:run("x = 0"))
  local cell, fresh = {}, {}
  for i = 1, 12 do
    local t0 = ms()
    assert(ctx:run("x = x + 1"))
    local t1 = ms()
    assert(m:shell("python3 -c 'x = 0; x = x + 1'", 30, "bench-agent"))
    local t2 = ms()
    if i > 2 then cell[#cell + 1], fresh[#fresh + 1] = t1 - t0, t2 - t1 end
  end
  ctx:close()
  print(string.format("  context cell x = x + 1  %8.1f ms   fresh exec of python3 -c %8.1f ms   (x%.2f)",
    median(cell), median(fresh), median(cell) / median(fresh)))
end

-- raw PUTs and GETs of size bytes in 64 MiB objects; seconds each way
local function raw(srv, size)
  local up, down, n = 0, 0, 0
  local left = size
  while left > 0 do
    n = n + 1
    local bytes = math.min(64 * MIB, left)
    local loc = { scope = "agent", agent_id = "bench", run_id = "agent", path = "outputs/part" .. n,
                  owner = "bench/agent" }
    for _, op in ipairs { "upload", "download" } do
      local st, t = obj.ticket(srv, srv.token, loc, op, { max_bytes = 64 * MIB })
      assert(st == 201, "ticket: " .. tostring(st))
      local us = util.tool(string.format("%s %d %s %s", op == "upload" and "put" or "get",
        bytes, srv.cp_url .. "/v1/storage/content", t.access_token))[1]
      assert(us, "the raw " .. op .. " failed")
      if op == "upload" then up = up + us / 1e6 else down = down + us / 1e6 end
    end
    left = left - bytes
  end
  return up, down
end

-- The two binary file routes alone, a call each way at their limits.
local function routes(srv, sb)
  local mg, name = sb:manager(), sb:name()
  local one = string.rep("0123456789abcdef", 62500)
  assert(sb:upload(string.rep("0123456789abcdef", 4 * 65536), "bench/four.bin"))
  local w, r, wcpu, rcpu, n = {}, {}, 0, 0, 0
  for i = 1, 12 do
    local c0, t0 = util.process_ticks(srv.pid), ms()
    assert(mg:upload_file("bench/one.bin", one, name))
    local c1, t1 = util.process_ticks(srv.pid), ms()
    assert(#assert(mg:download_file("bench/four.bin", name)) == 4 * MIB)
    local c2, t2 = util.process_ticks(srv.pid), ms()
    if i > 2 then
      w[#w + 1], r[#r + 1], n = t1 - t0, t2 - t1, n + 1
      wcpu, rcpu = wcpu + (c1 - c0) * util.TICK_MS, rcpu + (c2 - c1) * util.TICK_MS
    end
  end
  local up = select(1, raw(srv, #one))
  local _, down = raw(srv, 4 * MIB)
  print(string.format("  write-binary 1 MB       %8.1f ms (server CPU %.1f ms)   raw libcurl PUT %6.1f ms   (x%.1f)",
    median(w), wcpu / n, up * 1000, median(w) / (up * 1000)))
  print(string.format("  read-binary 4 MiB       %8.1f ms (server CPU %.1f ms)   raw libcurl GET %6.1f ms   (x%.1f)",
    median(r), rcpu / n, down * 1000, median(r) / (down * 1000)))
end

local function transfers(srv, sb, dir)
  local size = SIZE_MIB * MIB
  local src = dir .. "/src.bin"
  local f = assert(io.open(src, "wb"))
  local piece = string.rep("0123456789abcdef", MIB / 16)
  for _ = 1, SIZE_MIB do f:write(piece) end
  f:close()
  collectgarbage()
  local before = rss_kb()
  local peak = before
  local function sample() peak = math.max(peak, rss_kb()) end
  local t0 = ms()
  assert(sb:upload({ path = src }, "bench/big.bin", { on_progress = sample }))
  local up_s = (ms() - t0) / 1000
  t0 = ms()
  assert(sb:download("bench/big.bin", dir .. "/back.bin", { on_progress = sample }))
  local down_s = (ms() - t0) / 1000
  local raw_up, raw_down = raw(srv, size)
  print(string.format("  upload %d MiB           %8.1f MiB/s   raw libcurl PUT %8.1f MiB/s   (x%.3f)",
    SIZE_MIB, SIZE_MIB / up_s, SIZE_MIB / raw_up, raw_up / up_s))
  print(string.format("  download %d MiB         %8.1f MiB/s   raw libcurl GET %8.1f MiB/s   (x%.3f)",
    SIZE_MIB, SIZE_MIB / down_s, SIZE_MIB / raw_down, raw_down / down_s))
  print(string.format("  client RSS              %8.1f MiB before, peak %.1f MiB during both " ..
    "(+%.1f MiB for %d MiB moved)", before / 1024, peak / 1024, (peak - before) / 1024, 2 * SIZE_MIB))
end

local srv = server.start { args = { "--disk-mb", tostring(math.max(1024, SIZE_MIB * 2 + 256)) } }
local dir = fs.tmpdir("unsb-bench-agent")
local ok, err = pcall(function()
  local m = unsandbox.manager { url = srv.cp_url, token = srv.token, env = {} }
  local sb = assert(unsandbox.Sandbox.create { name = "bench-agent", manager = m })
  print(string.format("agent tools (load %s): medians of 5 and 10 rounds after warm-ups", util.loadavg()))
  latency(sb, m)
  cells(sb, m)
  transfers(srv, sb, dir)
  routes(srv, sb)
  sb:close()
end)
fs.rm_rf(dir)
srv.stop()
if not ok then error(err, 0) end
