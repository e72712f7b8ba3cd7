-- Latency and throughput of the client against a local unsandboxd.
-- Baselines measured in the same run: GET /health (HTTP, signing-free, no
-- sandbox) and a bare `bwrap /bin/true` spawn (the sandbox alone).
local unsandbox = require "unsandbox"
local server = require "spec.helpers.unsandboxd"
local socket = require "socket"   -- gettime(): microsecond wall clock

local function now_ms() return socket.gettime() * 1000 end

local N = tonumber(os.getenv("BENCH_N")) or 40
local CONCURRENT, PER_CLIENT = 8, tonumber(os.getenv("BENCH_PER_CLIENT")) or 20

local function stats(samples)
  table.sort(samples)
  local function pct(p) return samples[math.max(1, math.ceil(#samples * p))] end
  return { median = pct(0.5), p95 = pct(0.95), n = #samples }
end

local function measure(n, f)
  f() -- warm-up: connection, caches
  local s = {}
  for i = 1, n do
    local t0 = now_ms()
    f()
    s[i] = now_ms() - t0
  end
  return stats(s)
end

local function report(name, st, base)
  print(string.format("%-34s median %7.2f ms   p95 %7.2f ms   (n=%d)%s", name, st.median, st.p95, st.n,
    base and string.format("   %.1fx baseline", st.median / base.median) or ""))
end

local srv = server.start()
local ok, err = pcall(function()
  local c = unsandbox.client(srv.client_opts())
  local nproc = io.popen("nproc")
  print(string.format("unsandboxd at %s, %s cores", srv.url, nproc:read("l")))
  nproc:close()

  local health = measure(N, function() assert(c:health()) end)
  local spawn = measure(math.min(N, 20), function()
    assert(os.execute("bwrap --unshare-all --die-with-parent --ro-bind /usr /usr " ..
      "--symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 /bin/true"))
  end)
  report("baseline GET /health", health)
  report("baseline bwrap /bin/true spawn", spawn)
  local bash = measure(N, function() assert(c:execute_code("bash", "true")) end)
  report('execute_code("bash", "true")', bash, spawn)
  -- the cost of the run's cgroup: the same call against a server limited
  -- by rlimits only (--cgroups off), the two measured alternately
  local srv2 = server.start { args = { "--cgroups", "off" } }
  local ok2, err2 = pcall(function()
    local c2 = unsandbox.client(srv2.client_opts())
    assert(c:execute_code("bash", "true")); assert(c2:execute_code("bash", "true"))
    local with, without = {}, {}
    for i = 1, N do
      local t0 = now_ms(); assert(c:execute_code("bash", "true")); with[i] = now_ms() - t0
      t0 = now_ms(); assert(c2:execute_code("bash", "true")); without[i] = now_ms() - t0
    end
    local w, wo = stats(with), stats(without)
    report('bash "true", rlimits only', wo)
    report('bash "true", own cgroup', w, wo)
    print(string.format("%-34s %+7.2f ms median", "cost of the cgroup", w.median - wo.median))
    c2:close()
  end)
  srv2.stop()
  if not ok2 then error(err2, 0) end
  local py = measure(N, function() assert(c:execute_code("python", "print(1)")) end)
  report('execute_code("python", "print(1)")', py, spawn)

  -- throughput: 8 client processes, each running PER_CLIENT jobs
  local script = string.format([[
    local u = require "unsandbox"
    local c = u.client{url=%q, public_key=%q, secret_key=%q}
    for i = 1, %d do assert(c:execute_code("bash", "true")) end]],
    srv.url, srv.public_key, srv.secret_key, PER_CLIENT)
  local cmds = {}
  for i = 1, CONCURRENT do cmds[i] = "lua5.4 -e " .. server.sh_quote(script) .. " &" end
  local t0 = now_ms()
  assert(os.execute(table.concat(cmds, " ") .. " wait"))
  local secs = (now_ms() - t0) / 1000
  local jobs = CONCURRENT * PER_CLIENT
  print(string.format("%-34s %7.1f jobs/s   (%d jobs, %d clients, %.1f s; serial bash rate %.1f jobs/s)",
    "throughput, 8 concurrent clients", jobs / secs, jobs, CONCURRENT, secs, 1000 / bash.median))
  c:close()
end)
srv.stop()
if not ok then error(err, 0) end
