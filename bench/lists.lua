-- The Control Plane's long lists: GET /v1/storage/objects/list of 10,000
-- objects of one owner and GET /v1/workspaces of 500, each timed from the
-- request to the reply's last byte (a kept connection, medians), next to
-- baselines of the same run: the time cjson (C) takes to encode the same
-- reply (against the whole figure, and against what is left of it over
-- the same route answering an empty list), and the server before its
-- lists were written row by row
-- (BENCH_PRE_LISTS_SERVER, built by bench/run.sh), with the RSS each
-- server keeps after the reply. Figures only, never pass/fail.
local server = require "spec.helpers.unsandboxd"
local cp = require "spec.helpers.cp"
local rawhttp = require "spec.helpers.rawhttp"
local obj = require "spec.helpers.objects"
local util = require "util"
local json = require "cjson"
local socket = require "socket"

local OBJECTS = tonumber(os.getenv("BENCH_LIST_OBJECTS") or "") or 10000
local WORKSPACES = tonumber(os.getenv("BENCH_LIST_WORKSPACES") or "") or 500
local SAMPLES = 15
local WARM = 2        -- untimed lists first: the store's pages and WAL settle after the fill
local OWNER = "bench/lists"
local PRE = os.getenv("BENCH_PRE_LISTS_SERVER")

local status_kb = util.status_kb

-- GET path on a kept connection: seconds to the last byte, the body.
local function timed_get(s, path, token)
  local t0 = socket.gettime()
  assert(s:send(rawhttp.head("GET", path, { Authorization = "Bearer " .. token })))
  local st, h = rawhttp.read_head(s)
  assert(st == 200, path .. " answered " .. tostring(st))
  local body = assert(s:receive(tonumber(h["content-length"])))
  return socket.gettime() - t0, body
end

local function fill(srv)
  for i = 1, OBJECTS do
    local loc = { scope = "upload", upload_id = "many", path = string.format("source/f%05d.txt", i), owner = OWNER }
    assert(obj.post(srv, srv.token, loc, "x") == 201, "object " .. i)
  end
  for i = 1, WORKSPACES do
    local st = cp.request(srv, "POST", "/v1/workspaces", { token = srv.token, body = { session_id = "w" .. i } })
    assert(st == 201, "workspace " .. i .. " answered " .. tostring(st))
  end
end

-- Times, encode times and RSS around SAMPLES lists of path on srv, with
-- token (default the operator's).
local function measure(srv, path, token)
  token = token or srv.token
  local s = rawhttp.connect({ port = srv.cp_port }, 120)
  local before = status_kb(srv.pid, "VmRSS")
  local times, encodes, body = {}, {}, nil
  for _ = 1, WARM do timed_get(s, path, token) end
  for i = 1, SAMPLES do
    times[i], body = timed_get(s, path, token)
    local doc = json.decode(body)
    local t0 = socket.gettime()
    json.encode(doc)
    encodes[i] = socket.gettime() - t0
  end
  s:close()
  -- the high-water mark is the process's: a rise over the RSS before
  -- the lists is theirs (filling the server peaked lower)
  return { ms = util.stats(times).median * 1000, enc = util.stats(encodes).median * 1000,
           bytes = #body, kept = (status_kb(srv.pid, "VmRSS") - before) / 1024,
           peak = math.max(0, status_kb(srv.pid, "VmHWM") - before) / 1024 }
end

-- Each list, and the same route answering an empty list (what a request
-- costs whatever its answer: the rows' own cost is the difference).
local LISTS = {
  { name = string.format("list_objects of %d", OBJECTS),
    path = "/v1/storage/objects/list" .. obj.query({ scope = "upload", upload_id = "many", owner = OWNER }),
    empty = function(srv)
      return "/v1/storage/objects/list" .. obj.query({ scope = "upload", upload_id = "none", owner = OWNER }),
        srv.token
    end },
  { name = string.format("list_workspaces of %d", WORKSPACES), path = "/v1/workspaces",
    empty = function(srv) return "/v1/workspaces", (cp.tenant_key(srv, "bench-empty")) end },
}

-- small volumes, so that 500 workspaces fit the operator's storage quota
local ARGS = { "--disk-mb", "16" }
local servers = { { label = "now", srv = server.start { args = ARGS } } }
if PRE then
  local saved = server.bin
  server.bin = PRE
  servers[2] = { label = "before", srv = server.start { args = ARGS } }
  server.bin = saved
end
local ok, err = pcall(function()
  print(string.format("unsandboxd Control Plane lists (load average at start %s): median of %d, "
    .. "request to last byte on a kept connection, after %d untimed", util.loadavg(), SAMPLES, WARM))
  for _, s in ipairs(servers) do fill(s.srv) end
  for _, l in ipairs(LISTS) do
    local got = {}
    for _, s in ipairs(servers) do got[s.label] = measure(s.srv, l.path) end
    local now, pre = got.now, got.before
    local empty = measure(servers[1].srv, l.empty(servers[1].srv)).ms
    local rows = now.ms - empty
    print(string.format("  %-26s %7.1f ms  %5.2fx cjson's encoding of the reply (%.1f ms, %d KiB)",
      l.name, now.ms, now.ms / now.enc, now.enc, now.bytes // 1024))
    print(string.format("  %-26s an empty list %.2f ms; the rows' own %.2f ms, %.2fx the encoding (goal <= 2x: %s)",
      "", empty, rows, rows / now.enc, rows / now.enc <= 2 and "met" or "NOT met"))
    print(string.format("  %-26s RSS kept after %d replies %+.1f MiB (peak %+.1f MiB; goal within 2 MiB: %s)",
      "", SAMPLES, now.kept, now.peak, math.abs(now.kept) <= 2 and "met" or "NOT met"))
    if pre then
      print(string.format("  %-26s %7.1f ms  (now: %.2fx of it); RSS kept %+.1f MiB (peak %+.1f MiB)",
        "  the server before", pre.ms, now.ms / pre.ms, pre.kept, pre.peak))
    end
  end
  print(string.format("  load average at end %s", util.loadavg()))
end)
for _, s in ipairs(servers) do s.srv.stop() end
if not ok then error(err, 0) end
