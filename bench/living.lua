-- Living sessions: a command (`true`) on a living session, next to the
-- one-shot path of the same command (POST /execute of bash `true`: a
-- sandbox of its own, as every session command was before sessions
-- lived), next to `bash -c true` spawned on the host (bench/tool.c), and,
-- when make bench built it (BENCH_PRE_LIVING_SERVER), next to a session
-- command on the server as it was before (each command a one-shot sandbox
-- over the volume); a session's creation (the sandbox started and ready)
-- next to a one-shot run; and the host memory an idle living session costs
-- (the PSS of its sandbox's processes, with the server's own growth), next
-- to an idle server with none. All measured in alternating rounds of the
-- same run. Figures only, never pass/fail.
local unsandbox = require "unsandbox"
local server = require "spec.helpers.unsandboxd"
local socket = require "socket"
local util = require "bench.util"

local ROUNDS = tonumber(os.getenv("BENCH_ROUNDS")) or 5
local PER = 10
local IDLE = 8                          -- idle sessions for the memory figure

local function ms(f)
  local t0 = socket.gettime()
  f()
  return (socket.gettime() - t0) * 1000
end

local tool = util.tool_ms

local pss, sandboxes_pss = util.pss_kb, util.sandboxes_pss_kb

local srv = server.start()
local c = unsandbox.client(srv.client_opts())
local sess = assert(c:create_session())
local pre, pc, psess
if os.getenv("BENCH_PRE_LIVING_SERVER") then
  local saved = server.bin
  server.bin = os.getenv("BENCH_PRE_LIVING_SERVER")
  pre = server.start()
  server.bin = saved
  pc = unsandbox.client(pre.client_opts())
  psess = assert(pc:create_session())
end

local living, oneshot, host, before, create, create_base = {}, {}, {}, {}, {}, {}
for r = 1, ROUNDS do
  local steps = {
    function()
      for _ = 1, PER do living[#living + 1] = ms(function() assert(c:session_execute(sess.id, "true")) end) end
    end,
    function() for _ = 1, PER do
      oneshot[#oneshot + 1] = ms(function() assert(c:execute_code("bash", "true")) end) end end,
    function() util.append(host, tool(string.format("spawn %d -- /usr/bin/bash -c true", PER))) end,
    function()
      for _ = 1, 2 do
        local id
        create[#create + 1] = ms(function() id = assert(c:create_session()).id end)
        assert(c:delete_session(id))
        create_base[#create_base + 1] = ms(function() assert(c:execute_code("bash", "true")) end)
      end
    end,
  }
  if pc then
    steps[#steps + 1] = function() for _ = 1, PER do
      before[#before + 1] = ms(function() assert(pc:session_execute(psess.id, "true")) end) end end
  end
  for i = 1, #steps do steps[(i + r - 2) % #steps + 1]() end
end

-- memory: an idle server, then IDLE idle living sessions on it
local quiet = server.start()
local qc = unsandbox.client(quiet.client_opts())
socket.sleep(1)
local server0, boxes0 = pss(quiet.pid), sandboxes_pss(quiet)
local ids = {}
for i = 1, IDLE do ids[i] = assert(qc:create_session()).id end
socket.sleep(2)                         -- a few health pings: the steady state
local server1, boxes1 = pss(quiet.pid), sandboxes_pss(quiet)
for _, id in ipairs(ids) do assert(qc:delete_session(id)) end
qc:close()
quiet.stop()

local function line(name, v, base_name, b)
  local m, bm = util.stats(v), util.stats(b)
  print(string.format("  %-38s %7.2f (%7.2f)  %-36s %7.2f (%7.2f)  %6.2fx",
    name, m.median, m.p95, base_name, bm.median, bm.p95, m.median / bm.median))
end
print(string.format("living sessions: %d rounds of %d, median (p95) in ms (load %s)", ROUNDS, PER, util.loadavg()))
line('session_execute(id, "true")', living, 'execute_code("bash", "true")', oneshot)
line('session_execute(id, "true")', living, "bash -c true on the host", host)
if pc then line('session_execute(id, "true")', living, "the same before sessions lived", before) end
line("create_session() (sandbox ready)", create, 'execute_code("bash", "true")', create_base)
print(string.format("  an idle living session costs the host %.1f MiB (PSS of its sandbox's processes %.1f MiB,"
  .. " the server's own growth %.1f MiB; %d sessions, idle server %.1f MiB)",
  ((boxes1 - boxes0) + (server1 - server0)) / 1024 / IDLE, (boxes1 - boxes0) / 1024 / IDLE,
  (server1 - server0) / 1024 / IDLE, IDLE, server0 / 1024))

assert(c:delete_session(sess.id))
c:close()
srv.stop()
if pc then
  pc:delete_session(psess.id)
  pc:close()
  pre.stop()
end
