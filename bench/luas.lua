-- make bench: the library under each Lua it is built for, side by side and
-- in the same rounds (which go first alternates): per-request overhead (a
-- client's health() round trip on a warm connection) next to raw libcurl's
-- keep-alive GET; the time `require "unsandbox"` adds to an empty start of
-- the same interpreter; and the LÖVE example's longest frame while 16 jobs
-- run next to the same game with none. Goals: LuaJIT no slower
-- than 5.4, and the frame under one 60 Hz frame (16.7 ms) on an idle
-- machine. Prints figures, never passes or fails.
--
-- Environment: BENCH_ROUNDS (default 5), BENCH_PER (samples per figure
-- per round, 12; the round trips take 8 times as many, in one process per
-- Lua and round, so that a process's start does not weigh on them). Needs
-- the module of each Lua (make all-luas), and love with xvfb-run for the
-- frame figure.
local server = require "spec.helpers.unsandboxd"
local util = require "bench.util"

local ROUNDS = tonumber(os.getenv("BENCH_ROUNDS")) or 5
local PER = tonumber(os.getenv("BENCH_PER")) or 12
local q = server.sh_quote

local LUAS = {
  { name = "LuaJIT", interp = "luajit", cpath = "build/luajit/?.so" },
  { name = "5.4", interp = "lua5.4", cpath = "lua/?.so" },
  { name = "5.3", interp = "lua5.3", cpath = "build/5.3/?.so" },
  { name = "5.1", interp = "lua5.1", cpath = "build/5.1/?.so" },
}

-- The numbers (microseconds, one a line) cmd prints, in milliseconds.
local function lines_ms(cmd)
  local p = assert(io.popen(cmd))
  local s = {}
  for line in p:lines() do
    local v = tonumber(line)
    if v then s[#s + 1] = v / 1000 end
  end
  assert(p:close(), "failed: " .. cmd)
  return s
end

local function paths(l)
  return "LUA_PATH='lua/?.lua;lua/?/init.lua;;' LUA_CPATH='" .. l.cpath .. ";;' "
end

local srv = server.start()
local env = string.format("UNSANDBOX_URL=%s UNSANDBOX_PUBLIC_KEY=%s UNSANDBOX_SECRET_KEY=%s ",
  q(srv.url), q(srv.public_key), q(srv.secret_key))

local function health(l)
  return lines_ms("env " .. env .. paths(l) .. l.interp .. " bench/luas_client.lua " .. PER * 8)
end
local function raw_get()
  return util.tool_ms(string.format("http %d %s/health", PER, srv.url))
end
local function start(l, code)
  return util.tool_ms(string.format("spawn %d -- env %s%s -e %s", PER, paths(l),
    "/usr/bin/" .. l.interp, q(code)))
end

-- The LÖVE example: its summary line's longest frame and step, in ms.
local function love(jobs, idle_s)
  local p = assert(io.popen(string.format(
    "env %sUNSB_LOVE_JOBS=%d UNSB_LOVE_IDLE_S=%d xvfb-run -a love examples/love 2>/dev/null",
    env, jobs, idle_s)))
  local out = p:read("*a")
  p:close()
  local frame, step = out:match("longest frame ([%d.]+) ms, longest step ([%d.]+) ms")
  local frames = out:match("(%d+) frames")
  if not frame then return nil, out end
  return { frame = tonumber(frame), step = tonumber(step), frames = tonumber(frames),
           right = out:match("(%d+ of %d+) jobs right") }
end

local ok, err = pcall(function()
  print()
  print(string.format("Lua versions (bench/luas.lua): %d rounds, %d samples per figure per round; "
    .. "median (p95) in ms", ROUNDS, PER))
  local s = {}
  local function add(key, samples)
    s[key] = s[key] or {}
    util.append(s[key], samples)
  end
  for r = 1, ROUNDS do
    local order = {}
    for i = 1, #LUAS do order[i] = LUAS[(r + i - 2) % #LUAS + 1] end
    add("raw", raw_get())
    for _, l in ipairs(order) do
      add("health " .. l.name, health(l))
      add("require " .. l.name, start(l, 'require "unsandbox"'))
      add("empty " .. l.name, start(l, ""))
    end
  end
  local raw = util.stats(s.raw)
  print(string.format("%-40s %7.2f (%7.2f)", "raw libcurl keep-alive GET (baseline)", raw.median, raw.p95))
  local base = {}
  for _, l in ipairs(LUAS) do
    local h = util.stats(s["health " .. l.name])
    base[l.name] = h.median
    print(string.format("%-40s %7.2f (%7.2f)  %5.2fx the raw GET", "health() round trip, " .. l.name,
      h.median, h.p95, h.median / raw.median))
  end
  local req = {}
  for _, l in ipairs(LUAS) do
    local a, e = util.stats(s["require " .. l.name]), util.stats(s["empty " .. l.name])
    req[l.name] = a.median - e.median
    print(string.format("%-40s %7.2f (%7.2f)  empty start %5.2f: require adds %5.2f ms",
      l.interp .. " -e 'require \"unsandbox\"'", a.median, a.p95, e.median, a.median - e.median))
  end
  print(string.format("LuaJIT against 5.4: %.2fx the round trip, %.2fx the require time (goal: no slower: %s)",
    base.LuaJIT / base["5.4"], req.LuaJIT / req["5.4"],
    (base.LuaJIT <= base["5.4"] * 1.05 and req.LuaJIT <= req["5.4"] * 1.05) and "met" or "NOT met"))

  -- the LÖVE game: 16 jobs, and the same game alone for as long
  local busy, idle = {}, {}
  for r = 1, math.min(ROUNDS, 3) do
    local a, aerr = love(16, 0)
    if not a then print("LÖVE example failed: " .. tostring(aerr)) return end
    local b = assert(love(0, 3))
    busy[r], idle[r] = a, b
  end
  local function med(list, k)
    local v = {}
    for i, x in ipairs(list) do v[i] = x[k] end
    return util.stats(v).median
  end
  print(string.format("LÖVE 11.4 (xvfb-run), 16 jobs as tasks: longest frame %.1f ms (median of %d runs; "
    .. "longest step(0) %.1f ms; %s right); the game alone: %.1f ms. Goal < 16.7 ms: %s",
    med(busy, "frame"), #busy, med(busy, "step"), busy[1].right, med(idle, "frame"),
    med(busy, "frame") < 16.7 and "met" or "NOT met (see the machine's load below)"))
end)
srv.stop()
if not ok then print("bench/luas.lua failed: " .. tostring(err)) end
print("machine: load average now " .. util.loadavg())
