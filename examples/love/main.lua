-- A LÖVE game that runs code in sandboxes while it draws: each job is a
-- task of the library, love.update calls unsandbox.step(0) once a frame
-- (it never waits), and the frame goes on. When every job has ended the
-- game shows the results for a moment, prints them and the frame times,
-- and quits by itself (exit status 0 when every job gave the right answer).
--
--   xvfb-run -a love examples/love     (UNSANDBOX_URL and keys set, as for
--                                       any script; UNSB_LOVE_JOBS=16 runs 16;
--                                       UNSB_LOVE_JOBS=0 UNSB_LOVE_IDLE_S=3:
--                                       the game alone for 3 s, a baseline)
--
-- LÖVE 11 is LuaJIT: the library is found on LUA_PATH / LUA_CPATH as
-- installed for LuaJIT (docs/guide/hosts.md); run from a checkout, the
-- checkout's lua/ and build/luajit/ are used.
-- An error ends the game with status 1 and its traceback on stderr,
-- instead of LÖVE's error screen, which waits for a player: the game runs
-- headless in the specs, and one that cannot start should say why.
function love.errorhandler(msg)
  io.stderr:write("love: ", debug.traceback(tostring(msg), 2), "\n")
  return function() return 1 end
end

local function checkout_paths()
  local root = love.filesystem.getSource():gsub("/examples/love/?$", "")
  local f = io.open(root .. "/build/luajit/unsandbox/core.so", "rb")
  if not f then return end
  f:close()
  package.path = root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;" .. package.path
  package.cpath = root .. "/build/luajit/?.so;" .. package.cpath
end
checkout_paths()

local unsandbox = require "unsandbox"

local JOBS = tonumber(os.getenv("UNSB_LOVE_JOBS") or "") or 3
local IDLE_S = tonumber(os.getenv("UNSB_LOVE_IDLE_S") or "") or 0   -- frames at least this long
local GIVE_UP_S = 180           -- a backend that never answers still ends the game
local SHOW_S = 0.5              -- how long the results stay on screen

local jobs = {}                 -- {task, language, want, got}
local started, finished_at
local frames, longest_frame, longest_step = 0, 0, 0
local last_frame
local angle = 0

-- Job i: a small program whose output says it ran (and which job it was).
local PROGRAMS = {
  { "python", "import time\ntime.sleep(0.3)\nprint(sum(range(%d)))",
    function(n) return string.format("%d", n * (n - 1) / 2) end },
  { "lua", "print(('x'):rep(%d))", function(n) return ("x"):rep(n) end },
  { "bash", "sleep 0.2; echo $((%d * 7))", function(n) return string.format("%d", n * 7) end },
}

function love.load()
  -- the first client loads libcurl and OpenSSL: at load, not in a frame
  unsandbox.default_client()
  for i = 1, JOBS do
    local p = PROGRAMS[(i - 1) % #PROGRAMS + 1]
    local n = i + 1
    local want = p[3](n)
    local job = { language = p[1], want = want }
    job.task = unsandbox.spawn(function()
      return unsandbox.execute_code(p[1], p[2]:format(n))
    end)
    jobs[i] = job
  end
  started = love.timer.getTime()
end

local function all_done()
  for _, j in ipairs(jobs) do
    if not j.task:done() then return false end
  end
  return true
end

local function report_and_quit()
  local right = 0
  for i, j in ipairs(jobs) do
    local r, err = j.task:result()
    local got = r and r.stdout and r.stdout:gsub("\n$", "")
    if got == j.want then right = right + 1 end
    print(string.format("job %d (%s): %s", i, j.language, got or tostring(err)))
  end
  print(string.format("%d of %d jobs right in %.0f ms, %d frames; longest frame %.1f ms, longest step %.1f ms",
    right, #jobs, (finished_at - started) * 1000, frames, longest_frame * 1000, longest_step * 1000))
  love.event.quit(right == #jobs and 0 or 1)
end

function love.update(dt)
  local now = love.timer.getTime()
  if not finished_at then
    -- the frame just gone: from the last update to this one (drawing included)
    if last_frame then longest_frame = math.max(longest_frame, now - last_frame) end
    frames = frames + 1
    local t0 = love.timer.getTime()
    unsandbox.step(0)
    longest_step = math.max(longest_step, love.timer.getTime() - t0)
    if all_done() and now - started >= IDLE_S then finished_at = love.timer.getTime() end
    if now - started > GIVE_UP_S then
      print("gave up after " .. GIVE_UP_S .. " s")
      finished_at = now
    end
  elseif now - finished_at > SHOW_S then
    report_and_quit()
  end
  last_frame = now
  angle = angle + dt * 3
end

function love.draw()
  local g = love.graphics
  g.push()
  g.translate(580, 60)
  g.rotate(angle)
  g.rectangle("fill", -20, -20, 40, 40)    -- spins as long as frames are drawn
  g.pop()
  g.print("unsandbox " .. unsandbox.VERSION .. " in LÖVE (" .. (jit and jit.version or _VERSION) .. ")", 10, 10)
  for i, j in ipairs(jobs) do
    local line
    if j.task:done() then
      local r, err = j.task:result()
      line = r and (j.language .. " -> " .. (r.stdout or ""):gsub("\n$", "")) or tostring(err)
    else
      line = j.language .. " ... " .. j.task:status()
    end
    g.print(string.format("%2d  %s", i, line), 10, 20 + i * 14)
  end
end
