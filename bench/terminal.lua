-- The session terminal: how long an attach takes, and a whole
-- attach + `echo hi; exit` + the exit frame, each next to the same
-- session's `session_execute` of the same command (one sandbox run of the
-- same shape, over plain HTTP), measured in alternating rounds of the same
-- run; a round trip on an open terminal (a line sent, its output read);
-- and a frame loop's step(0) while a task waits on a quiet terminal's
-- read, next to step(0) with no task. Figures only, never pass/fail.
local unsandbox = require "unsandbox"
local server = require "spec.helpers.unsandboxd"
local socket = require "socket"
local util = require "bench.util"

local ROUNDS = tonumber(os.getenv("BENCH_ROUNDS")) or 5
local PER = 4

local srv = server.start()
local c = unsandbox.client(srv.client_opts())
local sess = assert(c:create_session())

-- One terminal: ms to the open Terminal, ms to the exit frame.
local function terminal_once()
  local t0 = socket.gettime()
  local t = assert(c:session_attach(sess.id))
  local t1 = socket.gettime()
  assert(t:send("echo hi; exit 0\n"))
  for _ = 1, 1000 do
    local item = assert(t:read(10))
    if type(item) == "table" and item.type == "exit" then break end
  end
  t:close()
  return (t1 - t0) * 1000, (socket.gettime() - t0) * 1000
end

local function execute_once(cmd)
  local t0 = socket.gettime()
  assert(c:session_execute(sess.id, cmd))
  return (socket.gettime() - t0) * 1000
end

local attach, whole, run_true, run_echo = {}, {}, {}, {}
for r = 1, ROUNDS do
  local function terminals()
    for _ = 1, PER do
      local a, w = terminal_once()
      attach[#attach + 1], whole[#whole + 1] = a, w
      -- a closed terminal counts against the key's 4 until its shell is gone
      socket.sleep(0.05)
    end
  end
  local function executes()
    for _ = 1, PER do
      run_true[#run_true + 1] = execute_once("true")
      run_echo[#run_echo + 1] = execute_once("echo hi; exit 0")
    end
  end
  if r % 2 == 0 then executes(); terminals() else terminals(); executes() end
end

-- A round trip on an open terminal: a line sent, its output read back
-- (the shell's echo off, so the marker arrives once, as output).
local function round_trips(n)
  local t = assert(c:session_attach(sess.id))
  assert(t:send("stty -echo; echo ready\n"))
  local seen = ""
  -- (the PTY echoes the line itself before bash turns echo off: the output
  -- is the one at the start of a line)
  while not seen:find("[\r\n]ready\r?\n") do
    local item = assert(t:read(10))
    if type(item) == "string" then seen = seen .. item end
  end
  local out = {}
  for i = 1, n do
    local mark = "rt" .. i .. "x"
    local t0 = socket.gettime()
    assert(t:send("echo " .. mark .. "\n"))
    local got = ""
    while not got:find("[\r\n]" .. mark .. "\r?\n") do
      local item = assert(t:read(10))
      if type(item) == "string" then got = got .. item end
    end
    out[#out + 1] = (socket.gettime() - t0) * 1000
  end
  return t, out
end

-- step(0) of a frame loop while a task waits on that terminal's read (a
-- quiet shell: nothing comes within the read's 1 s), next to step(0) with
-- no task at all.
local function frame_steps(t, n)
  local waiting
  local with, without = {}, {}
  for _ = 1, n do
    if not waiting or waiting:done() then waiting = unsandbox.spawn(function() return t:read(1) end) end
    local t0 = socket.gettime()
    unsandbox.step(0)
    with[#with + 1] = (socket.gettime() - t0) * 1000
  end
  waiting:cancel()
  unsandbox.run(5)
  for _ = 1, n do
    local t0 = socket.gettime()
    unsandbox.step(0)
    without[#without + 1] = (socket.gettime() - t0) * 1000
  end
  return with, without
end

local rt_term, rt = round_trips(ROUNDS * PER)
local frame_with, frame_without = frame_steps(rt_term, 10)
rt_term:close()

local function line(name, v, base_name, b, digits)
  local m, bm = util.stats(v), util.stats(b)
  local f = "%7." .. (digits or 1) .. "f"
  print(string.format("  %-40s " .. f .. " (" .. f .. ")  %-34s " .. f .. " (" .. f .. ")  %5.2fx",
    name, m.median, m.p95, base_name, bm.median, bm.p95, m.median / bm.median))
end
print(string.format("session terminal: %d rounds of %d, median (p95) in ms", ROUNDS, PER))
line("session_attach (to an open Terminal)", attach, 'session_execute(id, "true")', run_true)
line("attach, `echo hi; exit`, the exit frame", whole, 'session_execute(id, "echo hi; exit 0")', run_echo)
line("round trip: a line sent, its output read", rt, 'session_execute(id, "echo hi; exit 0")', run_echo)
line("step(0) while a task reads the terminal", frame_with, "step(0) with no task", frame_without, 3)
assert(c:delete_session(sess.id))
c:close()
srv.stop()
