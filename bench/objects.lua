-- Peak memory of unsandboxd while it moves a 64 MiB object through the
-- Control Plane (PUT then GET /v1/storage/content), sampled from
-- /proc/<pid>/status after every MiB sent or received, with the same
-- run's idle RSS as the baseline, and the transfer rates. Figures only,
-- never pass/fail.
local server = require "spec.helpers.unsandboxd"
local cp = require "spec.helpers.cp"
local rawhttp = require "spec.helpers.rawhttp"
local obj = require "spec.helpers.objects"
local socket = require "socket"

local MIB = 1024 * 1024
local SIZE = 64 * MIB

local status_kb = require("util").status_kb   -- VmRSS / VmHWM in KiB

local function ticket(srv, loc, op)
  local st, t = obj.ticket(srv, srv.token, loc, op)
  assert(st == 201, "ticket: " .. tostring(st))
  return t.access_token
end

-- Sends SIZE bytes in 1 MiB pieces; returns peak RSS (KiB) and seconds.
local function upload(srv, token, piece)
  local s = rawhttp.connect({ port = srv.cp_port }, 120)
  local peak, t0 = 0, socket.gettime()
  assert(s:send(rawhttp.head("PUT", "/v1/storage/content", { Authorization = "Bearer " .. token,
    ["Content-Length"] = tostring(SIZE), Connection = "close" })))
  for _ = 1, SIZE // MIB do
    assert(s:send(piece))
    peak = math.max(peak, status_kb(srv.pid, "VmRSS"))
  end
  local st = rawhttp.read_head(s)
  s:close()
  assert(st == 201, "upload answered " .. tostring(st))
  return peak, socket.gettime() - t0
end

local function download(srv, token)
  local s = rawhttp.connect({ port = srv.cp_port }, 120)
  local peak, got, t0 = 0, 0, socket.gettime()
  assert(s:send(rawhttp.head("GET", "/v1/storage/content", { Authorization = "Bearer " .. token,
    Connection = "close" })))
  local st, h = rawhttp.read_head(s)
  assert(st == 200, "download answered " .. tostring(st))
  local total = tonumber(h["content-length"])
  while got < total do
    local data, err, partial = s:receive(math.min(MIB, total - got))
    data = data or partial
    if not data or #data == 0 then error("download cut: " .. tostring(err)) end
    got = got + #data
    peak = math.max(peak, status_kb(srv.pid, "VmRSS"))
  end
  s:close()
  return peak, socket.gettime() - t0
end

local srv = server.start {}
local ok, err = pcall(function()
  local loc = { scope = "agent", agent_id = "bench", run_id = "rss", path = "outputs/64mib.bin", owner = "bench/rss" }
  assert(cp.request(srv, "GET", "/livez") == 200)
  socket.sleep(0.5)
  local idle = status_kb(srv.pid, "VmRSS")
  local piece = string.rep("0123456789abcdef", MIB // 16)
  local up_peak, up_s = upload(srv, ticket(srv, loc, "upload"), piece)
  local down_peak, down_s = download(srv, ticket(srv, loc, "download"))
  local hwm = status_kb(srv.pid, "VmHWM")
  print(string.format("unsandboxd Control Plane objects: one %d MiB object, RSS sampled every MiB", SIZE // MIB))
  print(string.format("  idle RSS (baseline)           %7.1f MiB", idle / 1024))
  print(string.format("  peak RSS during upload (PUT)  %7.1f MiB   (+%.1f MiB over idle)   %6.1f MiB/s",
    up_peak / 1024, (up_peak - idle) / 1024, SIZE / MIB / up_s))
  print(string.format("  peak RSS during download (GET)%7.1f MiB   (+%.1f MiB over idle)   %6.1f MiB/s",
    down_peak / 1024, (down_peak - idle) / 1024, SIZE / MIB / down_s))
  print(string.format("  VmHWM after both              %7.1f MiB", hwm / 1024))
end)
srv.stop()
if not ok then error(err, 0) end
