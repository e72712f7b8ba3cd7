-- The server's memory under the attacks of docs/internals.md ("Sharing
-- one machine", "Memory"): RSS while 80 unauthenticated connections hold
-- 7 MiB of an 8 MiB body each, while 30 slow readers hold a 20 MB job
-- document each, and while both run at once, next to the idle RSS
-- measured in the same run (after the documents were made, so what the
-- making cost is in the baseline). RSS is sampled 20 times over a second
-- while the clients hold, the peak printed. Figures only, never
-- pass/fail; the bounds are spec/memory_bounds_spec.lua's.
local server = require "spec.helpers.unsandboxd"
local raw = require "spec.helpers.rawhttp"
local slow = require "spec.helpers.slow"
local core = require "unsandbox.core"
local json = require "cjson"
local socket = require "socket"

-- Peak RSS (KiB) over a second of holding.
local function peak(pid)
  local p = 0
  for _ = 1, 20 do
    p = math.max(p, slow.rss_kb(pid))
    socket.sleep(0.05)
  end
  return p
end

local function readers(srv, path, n)
  return slow.slow_readers(srv.port, n, function()
    return raw.head("GET", path, raw.signed(srv, "GET", path, ""))
  end)
end

local function line(what, kb, idle)
  print(string.format("  %-52s %7.1f MiB   (%+.1f MiB over idle)", what, kb / 1024, (kb - idle) / 1024))
end

local srv = server.start {}
local c = core.client(srv.client_opts())
local ok, err = pcall(function()
  local path = slow.big_job(c, json)
  local size = #assert(c:request("GET", path)).body
  socket.sleep(0.5)
  local idle = peak(srv.pid)
  print(string.format("unsandboxd memory under slow clients (the job document: %d bytes)", size))
  print(string.format("  %-52s %7.1f MiB", "idle RSS (baseline)", idle / 1024))

  local bodies = slow.hold_bodies(srv, 80)
  slow.wait_drained(srv.port)
  line("80 unauthenticated 8 MiB bodies, 7 MiB each held", peak(srv.pid), idle)
  slow.close(bodies)

  local rs = readers(srv, path, 30)
  line("30 slow readers of the 20 MB job document", peak(srv.pid), idle)
  slow.close(rs)

  bodies = slow.hold_bodies(srv, 80)
  rs = readers(srv, path, 30)
  slow.wait_drained(srv.port)
  line("both at once", peak(srv.pid), idle)
  slow.close(bodies)
  slow.close(rs)
end)
c:close()
srv.stop()
if not ok then error(err, 0) end
