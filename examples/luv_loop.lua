-- Driving unsandbox from someone else's event loop: luv (libuv for Lua,
-- Debian's lua-luv). The application owns the loop; unsandbox only says
-- which sockets it waits on and for how long (unsandbox.pollfds()), and
-- is stepped with step(0) whenever one of them is ready or its timeout
-- has passed. Here a libuv timer ticks alongside, standing in for the
-- application's own work, and eight jobs run as tasks.
--
--   bin/unlua examples/luv_loop.lua   (UNSANDBOX_URL and keys set)
local uv = require "luv"
local unsandbox = require "unsandbox"

local N = 8
local jobs = {}
for i = 1, N do
  jobs[i] = unsandbox.spawn(function()
    return unsandbox.execute_code("bash", "sleep 1; echo luv-" .. i)
  end)
end

local polls = {}          -- fd -> uv poll handle, for the sockets of now
local timer = uv.new_timer()
local ticks = 0
local app = uv.new_timer()  -- the application's own work
app:start(10, 10, function() ticks = ticks + 1 end)

local sync
-- One step, then the sockets and the timer unsandbox asks for next.
local function advance()
  local live = unsandbox.step(0)
  if live == 0 then
    for fd, p in pairs(polls) do p:close(); polls[fd] = nil end
    timer:close()
    app:close()
    return
  end
  sync()
end

function sync()
  local fds, timeout = unsandbox.pollfds()
  local seen = {}
  for _, f in ipairs(fds) do
    seen[f.fd] = true
    local p = polls[f.fd]
    if not p then
      p = uv.new_socket_poll(f.fd)
      polls[f.fd] = p
    end
    local events = f.events == "rw" and "rw" or f.events == "w" and "w" or "r"
    p:start(events, function() advance() end)
  end
  for fd, p in pairs(polls) do
    if not seen[fd] then p:close(); polls[fd] = nil end
  end
  timer:stop()
  -- -1: nothing scheduled (a socket will wake us); 0: something can run now
  if timeout >= 0 then timer:start(timeout, 0, function() advance() end) end
end

uv.update_time()
local started = uv.now()
sync()
timer:start(0, 0, function() advance() end)
uv.run()

local right = 0
for i, t in ipairs(jobs) do
  local r, err = t:result()
  if r and r.stdout == "luv-" .. i .. "\n" then right = right + 1
  else print("job " .. i .. ": " .. tostring(r and r.stdout or err)) end
end
uv.update_time()
print(string.format("%d of %d jobs right in %d ms; the application ticked %d times meanwhile",
  right, N, uv.now() - started, ticks))
os.exit(right == N and 0 or 1)
