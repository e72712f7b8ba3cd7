-- Hostile slow clients for the memory specs and `make bench`
-- (spec/memory_bounds_spec.lua, bench/memory.lua): connections that hold
-- most of an unauthenticated body, readers that take a reply's head and
-- then nothing, and the server's RSS. Only ever talks to 127.0.0.1;
-- every wait is bounded.
local raw = require "spec.helpers.rawhttp"
local fs = require "spec.helpers.fs"
local core = require "unsandbox.core"
local socket = require "socket"
local wait = require "spec.helpers.wait"

local M = {}

local MiB = 1024 * 1024

-- VmRSS of a process, KiB.
function M.rss_kb(pid)
  return tonumber(((fs.read("/proc/" .. pid .. "/status") or ""):match("\nVmRSS:%s*(%d+)")))
end

-- What the server side of our connections still has unread in the kernel
-- (rx queues of sockets on its port): 0 once it has taken every byte sent.
function M.server_unread(port)
  local total = 0
  for line in (fs.read("/proc/net/tcp") or ""):gmatch("[^\n]+") do
    local lp, rxq = line:match("^%s*%d+: %x+:(%x+) %x+:%x+ %x+ %x+:(%x+)")
    if lp and tonumber(lp, 16) == port then total = total + tonumber(rxq, 16) end
  end
  return total
end

-- Waits (at most 20 s) until the server has taken every byte sent to port.
function M.wait_drained(port)
  return wait.eventually(function() return M.server_unread(port) == 0 end, 20)
end

-- Headers of an execution API request that looks signed but is not: a
-- public key the server does not know, a timestamp in the window.
function M.unknown_key_head(path, length)
  return raw.head("POST", path, {
    ["Authorization"] = "Bearer unsb-pk-aaaa-bbbb-cccc-dddd",
    ["X-Timestamp"] = tostring(core.now()),
    ["X-Signature"] = string.rep("0", 64),
    ["Content-Length"] = tostring(length),
  })
end

M.PIECE = string.rep("x", 64 * 1024)

-- n connections, each declaring an 8 MiB body with an unknown key and
-- sending 7 MiB of it, then nothing: what a trickle reaches, at once.
function M.hold_bodies(srv, n)
  local socks = {}
  for i = 1, n do
    local s = raw.connect(srv, 30)
    assert(s:send(M.unknown_key_head("/execute", 8 * MiB)))
    for _ = 1, 7 * 16 do assert(s:send(M.PIECE)) end
    socks[i] = s
  end
  return socks
end

-- n connections to port that sent request() and read only the reply's
-- head: each answered 200, none reading its body. Returns {sock, length}.
function M.slow_readers(port, n, request)
  local readers = {}
  for i = 1, n do
    local s = assert(socket.tcp())
    s:settimeout(30)
    assert(s:connect("127.0.0.1", port))
    assert(s:send(request()))
    local status, h = raw.read_head(s)
    assert(status == 200, "slow reader " .. i .. " answered " .. tostring(status))
    readers[i] = { sock = s, length = tonumber(h["content-length"]) }
  end
  return readers
end

-- The rest of one slow reader's sized body.
function M.read_rest(r)
  local parts, left = {}, r.length
  while left > 0 do
    local data, err, partial = r.sock:receive(math.min(left, MiB))
    data = data or partial
    if not data or data == "" then break end
    parts[#parts + 1] = data
    left = left - #data
    if err then break end
  end
  return table.concat(parts)
end

function M.close(list)
  for _, s in ipairs(list) do (s.sock or s):close() end
end

-- The path of a finished job whose document is about 20 MB (15 MB of
-- random bytes as an artifact), made through client c. A busy machine may
-- answer it pending (past --sync-ms): it is then polled until it ends
-- (bounded).
function M.big_job(c, json)
  local r = assert(c:request("POST", "/execute", json.encode { language = "bash", return_artifacts = true,
    code = "head -c 15000000 /dev/urandom > big.bin && echo made" }))
  local job = json.decode(r.body)
  -- a loaded machine may answer while it still runs: then it is polled
  wait.eventually(function()
    if job.status ~= "pending" and job.status ~= "running" then return true end
    r = assert(c:request("GET", "/jobs/" .. job.job_id))
    job = json.decode(r.body)
  end, 120, 0.2)
  assert(r.status == 200 and job.stdout == "made\n", "the big job failed: " .. r.body:sub(1, 300))
  return "/jobs/" .. job.job_id, job
end

return M
