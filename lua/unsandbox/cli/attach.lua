--- `un session attach ID`: a session's shell on this terminal. With a tty
-- on standard input: raw mode (keys go to the remote shell as bytes,
-- Ctrl-C included), the window size sent at start and on every SIGWINCH,
-- and a detach key (Ctrl-] then d; Ctrl-] twice sends one Ctrl-]). The
-- terminal's state is restored by a to-be-closed guard, so every way out
-- restores it: the shell's exit, detach, an error, SIGTERM or SIGHUP (they
-- only set a flag, csrc/lua/tty.c), a Lua error. Without a tty, standard
-- input is copied to the shell as it comes and its end is sent as Ctrl-D
-- (again while the shell stays quiet, see send_eof).
-- Either way the output goes to standard output and un exits with the
-- shell's exit code. One loop, one wait: the terminal's service step
-- polls the connection and standard input together.
-- Internal module.
local compat = require "unsandbox.compat"
local core = require "unsandbox.core"
local Error = require "unsandbox.errors"
local terminal = require "unsandbox.exec.terminal"

local M = {}

local STDIN, STDOUT = 0, 1
local READ_MAX = 4096
-- standard input is read only while less than this waits to be sent, so
-- a fast pipe never overruns the terminal's input cap
local INPUT_HIGH = 64 * 1024
local WAIT_MS = 1000
local EXIT_SIGNAL = { term = 128 + 15, hup = 128 + 1 }
local EXIT_LOCAL = require("unsandbox.cli.exits").codes.io

-- Restores the terminal and the signal dispositions when closed.
local function guard(saved)
  return setmetatable({}, { __close = function()
    core.tty_signals(false)
    if saved then core.tty_restore(STDIN, saved) end
  end })
end

-- The tty's size, clamped to what the protocol allows; nil when unknown.
local function size()
  local cols, rows = core.tty_size(STDIN)
  if not cols or cols < 1 or rows < 1 then return nil end
  return math.min(cols, core.TERMINAL_MAX_SIZE), math.min(rows, core.TERMINAL_MAX_SIZE)
end

-- Copies what is queued to stdout. Returns "open", "end" (state.code: the
-- exit code, nil when the terminal ended without one), "detached", or
-- "stdout" with the error of a failed write.
local function drain(t, state, h)
  while true do
    local item, ended = terminal.take(t)
    if item == nil then
      if ended == false then return "open" end
      if ended == true then return "end" end
      if state.code then return "end" end   -- the shell exited; how the socket ended is moot
      h.check(nil, ended)
    elseif type(item) == "string" then
      state.last_output = core.monotonic_us()
      -- straight to the fd: a resize's signal interrupts a write, and
      -- stdio would call that a write error
      local ok, werr = core.fd_write(STDOUT, item)
      if ok == false then return "open" end   -- SIGTERM or SIGHUP: the loop acts on it
      if not ok then return "stdout", werr end
    elseif item.type == "exit" then
      state.code = item.exit_code or 0
    elseif item.type == "detached" then
      return "detached"
    end
  end
end

-- A Ctrl-D that reaches the PTY before bash's line editor is up is lost
-- in the line discipline (an end-of-file mark, not a byte). So after the
-- end of piped input one is sent at once, and again (up to EOF_TRIES in
-- all) each time the shell has been quiet for EOF_QUIET_US since the last
-- output and the last Ctrl-D, until it exits.
local EOF_TRIES, EOF_QUIET_US = 5, 1000000

function M.send_eof(t, state, h)
  h.check(t:send("\4"))
  state.eofs = (state.eofs or 0) + 1
  state.last_eof = core.monotonic_us()
end

local function eof_again(t, state, h)
  if state.tty or not state.eofs or state.eofs >= EOF_TRIES or state.code then return end
  local now = core.monotonic_us()
  if now - state.last_eof >= EOF_QUIET_US and now - (state.last_output or 0) >= EOF_QUIET_US then
    M.send_eof(t, state, h)
  end
end

-- Reads standard input once and sends it; false at its end.
local function pump(t, state, h)
  local data, rerr = core.fd_read(STDIN, READ_MAX)
  if not data or data == "" then
    if not data then io.stderr:write("un: standard input: ", rerr, state.tty and "\r\n" or "\n") end
    -- the end of piped input is what Ctrl-D is on a terminal
    if not state.tty then M.send_eof(t, state, h) end
    return false
  end
  local detach = false
  if state.filter then data, detach = state.filter(data) end
  if #data > 0 then h.check(t:send(data)) end
  if detach then state.detached = true end
  return true
end

local function loop(t, state, h)
  local stdin_open = true
  while true do
    local st, werr = drain(t, state, h)
    if st == "detached" then return 0 end
    if st == "stdout" then
      io.stderr:write("un: standard output: ", tostring(werr), state.tty and "\r\n" or "\n")
      return EXIT_LOCAL
    end
    if st == "end" then
      if state.code then return state.code end
      h.check(nil, Error.new { kind = "protocol", message = "the terminal closed before the shell exited" })
    end
    local sig = core.tty_signal_take()
    if sig == "winch" and state.tty then
      local cols, rows = size()
      if cols then h.check(t:resize(cols, rows)) end
    elseif sig then
      return EXIT_SIGNAL[sig]
    end
    local watch = stdin_open and t:pending_input() < INPUT_HIGH
    local ok, fd_ready, msg = t:_service(WAIT_MS, watch and STDIN or -1)
    if ok == nil then h.check(nil, Error.new { kind = fd_ready, message = msg }) end
    if fd_ready then
      stdin_open = pump(t, state, h)
      if state.detached then return 0 end
    end
    eof_again(t, state, h)
  end
end

-- The attached terminal t run until it ends, the tty raw meanwhile and
-- given back however the loop ends.
local function attached(t, id, h, tty)
  local saved
  if tty then
    local err
    saved, err = core.tty_raw(STDIN)
    if not saved then io.stderr:write("un: ", err, "\n"); return EXIT_LOCAL end
  end
  return compat.with(guard(saved), function()
    core.tty_signals(true)
    local state = { tty = tty, filter = tty and terminal.detach_filter() or nil }
    if tty then io.stderr:write("[attached to ", id, "; detach: Ctrl-] then d]\r\n") end
    local code = loop(t, state, h)
    if tty and state.detached then io.stderr:write("\r\n[detached from ", id, "]\r\n") end
    return code
  end)
end

--- Runs the attach; returns un's exit code. h: cli.lua's helpers (check
-- raises un's exit for an Error). The terminal is closed however it ends.
function M.run(c, id, h)
  local tty = core.isatty(STDIN)
  local opts = {}
  if tty then opts.cols, opts.rows = size() end
  if not opts.cols then opts.cols, opts.rows = nil, nil end
  local t = h.check(c:session_attach(id, opts))
  return compat.with(t, attached, id, h, tty)
end

--- `un session attach ID` (the command table's function): the shell's
-- exit code, or un's own for a local failure (so it is not marked as the
-- program's: the two cannot be told apart here).
function M.command(o, c)
  local fail = require "unsandbox.cli.fail"
  return fail.guard(o.where, M.run, c, o.words[1], fail)
end

return M
