-- Helpers of make bench (bench/bench.lua): statistics, the machine and
-- its CPU accounting, the bare bwrap command line, and one throughput run.
local socket = require "socket"
local server = require "spec.helpers.unsandboxd"
local fs = require "spec.helpers.fs"

local M = {}
local q = server.sh_quote

local function slurp(path) return fs.read(path) or "" end

local function cmd(line)
  local p = assert(io.popen(line))
  local out = p:read("a")
  p:close()
  return (out:gsub("%s+$", ""))
end

--- Proportional set size of a process, in kB (0 when it is gone).
function M.pss_kb(pid)
  return tonumber(slurp("/proc/" .. pid .. "/smaps_rollup"):match("Pss:%s+(%d+)")) or 0
end

--- The pids of every process in srv's sandbox cgroups (mcp.lua's rule):
-- its runs, its pooled sandboxes, its sessions'.
function M.sandbox_pids(srv)
  local p = io.popen("ls /proc")
  local names = p:read("a")
  p:close()
  local needle, pids = "/unsandboxd%-" .. srv.pid .. "%-%d+/run%-", {}
  for name in names:gmatch("%d+") do
    if slurp("/proc/" .. name .. "/cgroup"):find(needle) then pids[#pids + 1] = name end
  end
  return pids
end

--- The PSS of all of srv's sandbox processes, in kB.
function M.sandboxes_pss_kb(srv)
  local total = 0
  for _, pid in ipairs(M.sandbox_pids(srv)) do total = total + M.pss_kb(pid) end
  return total
end

local TICK_MS = 1000 / (tonumber(cmd("getconf CLK_TCK")) or 100)
M.TICK_MS = TICK_MS                 -- one tick of process_ticks, in ms

--- The bench's baselines (bench/tool.c) run with args: its samples (one
-- number a line, microseconds) and its named lines ("cpu N"); raises when
-- the tool fails.
function M.tool(args)
  local p = assert(io.popen("build/bench/tool " .. args))
  local samples, named = {}, {}
  for line in p:lines() do
    local k, v = line:match("^(%a+) (%d+)$")
    if k then named[k] = tonumber(v) else samples[#samples + 1] = tonumber(line) end
  end
  assert(p:close(), "bench tool failed: " .. args)
  return samples, named
end

--- The same samples in milliseconds.
function M.tool_ms(args)
  local s = M.tool(args)
  for i, v in ipairs(s) do s[i] = v / 1000 end
  return s
end

--- A field of /proc/PID/status in KiB (VmRSS, VmHWM), 0 when gone.
function M.status_kb(pid, field)
  local text = slurp("/proc/" .. pid .. "/status")
  return tonumber(text:match(field .. ":%s+(%d+)")) or 0
end

function M.append(dst, src) for _, v in ipairs(src) do dst[#dst + 1] = v end end

function M.stats(samples)
  local s = {}
  for i, v in ipairs(samples) do s[i] = v end
  table.sort(s)
  local function pct(p) return s[math.max(1, math.ceil(#s * p))] end
  return { median = pct(0.5), p95 = pct(0.95), n = #s }
end

function M.machine()
  local cpu = slurp("/proc/cpuinfo"):match("model name%s*:%s*([^\n]+)") or "unknown CPU"
  return { cpu = cpu, cores = tonumber(cmd("nproc")) or 1, kernel = cmd("uname -r") }
end

function M.loadavg()
  return slurp("/proc/loadavg"):match("^(%S+ %S+ %S+)") or "?"
end

-- Busy and total ticks of the whole machine (/proc/stat).
local function machine_ticks()
  local f = {}
  for n in slurp("/proc/stat"):match("^cpu%s+([^\n]+)"):gmatch("%d+") do f[#f + 1] = tonumber(n) end
  local busy = f[1] + f[2] + f[3] + f[6] + f[7] + (f[8] or 0)
  return busy, busy + f[4] + f[5]
end

-- utime + stime + cutime + cstime of a process: itself and the children
-- it reaped (for unsandboxd: its sandboxes, all of whose processes are
-- reaped up the chain to it); with own, utime + stime alone (the server's
-- own work, without its sandboxes'). In ticks of 10 ms.
local function process_ticks(pid, own)
  local stat = slurp("/proc/" .. pid .. "/stat")
  local rest = stat:match("%) (.*)$")
  if not rest then return 0 end
  local f = {}
  for w in rest:gmatch("%S+") do f[#f + 1] = w end
  -- after "pid (comm) ": state is field 1, utime field 12 ... cstime 15
  local t = (tonumber(f[12]) or 0) + (tonumber(f[13]) or 0)
  if own then return t end
  return t + (tonumber(f[14]) or 0) + (tonumber(f[15]) or 0)
end
M.process_ticks = process_ticks

-- The CPU accounting of the whole bench: the machine's busy ticks, and
-- ours (this process with every child it reaped; the servers are read
-- separately, before they stop, with note_server).
function M.account_start()
  local busy, total = machine_ticks()
  return { busy = busy, total = total, self = process_ticks("self"), servers = 0 }
end

function M.note_server(acc, srv, start_ticks)
  acc.servers = acc.servers + process_ticks(srv.pid) - (start_ticks or 0)
end

function M.account_end(acc)
  local busy, total = machine_ticks()
  local all = busy - acc.busy
  local ours = process_ticks("self") - acc.self + acc.servers
  local span = total - acc.total
  return { total = span > 0 and 100 * all / span * 1 or 0,
           others = all > 0 and 100 * math.max(0, all - ours) / all or 0 }
end

-- The server's bwrap command line for a bash run (bash zerotrust, vcpu
-- 1), without the fds the runner passes it for its own use (info, block):
-- the sandbox alone, run as an unprivileged uid by the bench tool. Its
-- work and code directories, passwd and group live in a temporary
-- directory removed at exit. Also returns the tool's --open words for the
-- files the command line copies in from fds. One difference: it has
-- bwrap make /dev (--dev), where the server binds the one it made once in
-- its own mount namespace (mounts.c), which this bare spawn has not.
function M.bwrap_argv()
  local dir = server.tmpdir("unsb-bench")
  assert(os.execute("mkdir -p " .. q(dir .. "/code") .. " " .. q(dir .. "/work") ..
    " && printf true > " .. q(dir .. "/code/main.sh") ..
    " && printf 'sandbox:x:1000:1000:sandbox:/sandbox:/bin/sh\\n' > " .. q(dir .. "/passwd") ..
    " && printf 'sandbox:x:1000:\\n' > " .. q(dir .. "/group") .. " && chmod -R a+rX " .. q(dir) ..
    " && chown 65534 " .. q(dir .. "/work")))
  M.cleanup = function() server.rm_rf(dir) end
  local a = { "/usr/bin/bwrap", "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
    "--unshare-cgroup-try", "--unshare-net", "--disable-userns", "--die-with-parent",
    "--new-session", "--cap-drop", "ALL", "--uid", "1000", "--gid", "1000",
    "--hostname", "sandbox", "--ro-bind", "/usr", "/usr" }
  for _, top in ipairs { "bin", "sbin", "lib", "lib32", "lib64", "libx32" } do
    local target = cmd("readlink /" .. top)
    if target:match("^/?usr/") then
      a[#a + 1] = "--symlink"; a[#a + 1] = target; a[#a + 1] = "/" .. top
    end
  end
  -- as sandbox/bwrap_argv.c: the files copied in (--file, from fds the tool
  -- opens), the directories bound
  local opens, fd = {}, 20
  local function copy(path, dest)
    for _, w in ipairs { "--perms", "0444", "--file", tostring(fd), dest } do a[#a + 1] = w end
    opens[#opens + 1] = fd .. "=" .. path
    fd = fd + 1
  end
  for _, etc in ipairs { "ld.so.cache", "ld.so.conf", "localtime", "nsswitch.conf", "hosts" } do
    if io.open("/etc/" .. etc) then copy("/etc/" .. etc, "/etc/" .. etc) end
  end
  for _, etc in ipairs { "ld.so.conf.d", "alternatives", "perl" } do
    a[#a + 1] = "--ro-bind-try"; a[#a + 1] = "/etc/" .. etc; a[#a + 1] = "/etc/" .. etc
  end
  copy(dir .. "/passwd", "/etc/passwd")
  copy(dir .. "/group", "/etc/group")
  for _, w in ipairs { "--proc", "/proc", "--dev", "/dev", "--size", "1073741824", "--tmpfs", "/tmp",
      "--size", "1073741824", "--tmpfs", "/dev/shm", "--bind", dir .. "/work", "/sandbox",
      "--ro-bind", dir .. "/code", "/code", "--remount-ro", "/", "--chdir", "/sandbox",
      "--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "HOME",
      "/sandbox", "--setenv", "LANG", "C.UTF-8", "--", "/usr/bin/bash", "/code/main.sh" } do
    a[#a + 1] = w
  end
  return a, opens
end

-- Waits (at most 5 s) until every shape of a pooled server is full again,
-- so the CPU of refilling what a run took counts in that run.
function M.await_pool(c)
  for _ = 1, 100 do
    local h = c:call("GET", "/health")
    local full = h and h.pool and h.pool.size > 0
    for _, s in ipairs(h and h.pool and h.pool.shapes or {}) do
      full = full and s.ready >= h.pool.size
    end
    if full or not (h and h.pool and h.pool.size > 0) then return end
    socket.sleep(0.05)
  end
end

-- One throughput run: `clients` processes of `jobs` bash "true" runs each.
-- Each client loads the library, makes its client and a first request,
-- then waits at a start line (it opens a FIFO, which blocks until we open
-- it), so that what is timed is the jobs, not k processes loading Lua.
-- Jobs per second (wall clock from the start line to the end of the last
-- client), and CPU per job of the server with its sandboxes and of the
-- whole machine (the clients' own CPU included) over the same span.
local START_WAIT_S = 60                -- the clients' getting ready, at most
function M.throughput(srv, clients, jobs)
  local unsandbox = require "unsandbox"
  local c = unsandbox.client(srv.client_opts())
  M.await_pool(c)
  socket.sleep(0.1)
  local dir = server.tmpdir("unsb-tp")
  local line = q(dir .. "/go")
  assert(os.execute("mkfifo " .. line))
  local script = string.format([[
    local u = require "unsandbox"
    local c = u.client{url=%q, public_key=%q, secret_key=%q}
    assert(c:health())
    io.open(%q, "w"):close()
    io.open(%q, "r"):close()
    for i = 1, %d do assert(c:execute_code("bash", "true")) end]],
    srv.url, srv.public_key, srv.secret_key, dir .. "/ready-" .. "%s", dir .. "/go", jobs)
  local cmds = {}
  for i = 1, clients do
    cmds[i] = "lua5.4 -e " .. q((script:gsub("%%s", tostring(i)))) .. " & pids=\"$pids $!\";"
  end
  local p = assert(io.popen("(pids=; " .. table.concat(cmds, " ") .. " fail=0; for j in $pids; do "
    .. "wait $j || fail=1; done; echo $fail) 2>&1"))
  local ready = 0
  for _ = 1, START_WAIT_S * 100 do
    ready = 0
    for i = 1, clients do if fs.read(dir .. "/ready-" .. i) then ready = ready + 1 end end
    if ready == clients then break end
    socket.sleep(0.01)
  end
  local s0, m0 = process_ticks(srv.pid), machine_ticks()
  local t0 = socket.gettime()
  local go = assert(io.open(dir .. "/go", "r+"))   -- read-write: never blocks; the clients' opens return
  local out = p:read("a")
  local secs = socket.gettime() - t0
  go:close()
  p:close()
  server.rm_rf(dir)
  assert(ready == clients, "throughput clients did not get ready")
  assert(out:match("0%s*$"), "a throughput client failed: " .. out)
  M.await_pool(c)
  socket.sleep(0.1)                    -- the last runs' background release
  local s1, m1 = process_ticks(srv.pid), machine_ticks()
  c:close()
  local n = clients * jobs
  return { rate = n / secs, server_cpu = (s1 - s0) * TICK_MS / n, machine_cpu = (m1 - m0) * TICK_MS / n }
end

function M.summarise(runs)
  local rate, scpu, mcpu, low = {}, {}, {}, math.huge
  for i, r in ipairs(runs) do
    rate[i], scpu[i], mcpu[i] = r.rate, r.server_cpu, r.machine_cpu
    low = math.min(low, r.rate)
  end
  return { rate = M.stats(rate).median, low = low, server_cpu = M.stats(scpu).median,
           machine_cpu = M.stats(mcpu).median }
end

return M
