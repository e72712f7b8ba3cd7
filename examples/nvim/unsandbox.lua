-- A Neovim plugin: :UnsandboxRun [language] runs the current buffer in a
-- sandbox without blocking the editor, and shows what it printed in a
-- scratch buffer. The job is a task of the library; Neovim's own event
-- loop (vim.loop, libuv) drives it: the sockets and the timeout that
-- unsandbox.pollfds() names are watched with uv polls and a uv timer, and
-- each time one fires, unsandbox.step(0) moves the tasks on (it never
-- waits). Neovim is LuaJIT: install the library for it (docs/guide/hosts.md).
--
--   as a plugin:  copy to ~/.config/nvim/lua/unsandbox_nvim.lua, then
--                 require("unsandbox_nvim").setup() in init.lua
--   self-test:    nvim --headless -u NONE -c 'luafile examples/nvim/unsandbox.lua'
--                 (UNSANDBOX_URL and keys set): runs a buffer of Python,
--                 prints the scratch buffer and how often a timer of the
--                 editor fired meanwhile, exits 0 when all was right.
local M = {}

local uv = vim.loop
local unsandbox

------------------------------------------------------------------------
-- the library on vim.loop
------------------------------------------------------------------------

local polls = {}      -- fd -> uv poll of the sockets the library waits on now
local timer           -- the library's next timeout
local sync

-- One step of the library, then what it waits on next; nothing once no
-- task is left (the next run starts the watching again).
local function advance()
  if unsandbox.step(0) == 0 then
    for fd, p in pairs(polls) do p:close(); polls[fd] = nil end
    timer:stop()
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
    p:start(f.events, advance)
  end
  for fd, p in pairs(polls) do
    if not seen[fd] then p:close(); polls[fd] = nil end
  end
  timer:stop()
  -- -1: nothing scheduled (a socket wakes us); 0: a task can go on now
  if timeout >= 0 then timer:start(timeout, 0, advance) end
end

-- Starts driving the library's tasks on vim.loop (again, if it had stopped).
local function drive()
  timer:stop()
  timer:start(0, 0, advance)
end

------------------------------------------------------------------------
-- the plugin
------------------------------------------------------------------------

local LANGUAGE_OF_FILETYPE = { sh = "bash", javascript = "javascript", python = "python", lua = "lua" }

-- The scratch buffer that shows a result.
local function show(result, err, language)
  local lines = {}
  if result then
    for line in ((result.stdout or "") .. (result.stderr or "")):gmatch("([^\n]*)\n") do
      lines[#lines + 1] = line
    end
    lines[#lines + 1] = string.format("-- %s: exit code %d", language, result.exit_code or -1)
  else
    lines[#lines + 1] = "-- unsandbox: " .. tostring(err)
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.api.nvim_buf_set_option(buf, "modifiable", false)
  vim.cmd("botright split")
  vim.api.nvim_win_set_buf(0, buf)
  return buf
end

--- Runs buffer buf (0: the current one) in a sandbox as language (by
-- default from its filetype or name). Returns at once with the Task;
-- on_done(scratch_buffer, result, err) runs in the editor once it ends.
function M.run(buf, language, on_done)
  buf = (buf == nil or buf == 0) and vim.api.nvim_get_current_buf() or buf
  language = language or LANGUAGE_OF_FILETYPE[vim.bo[buf].filetype]
    or unsandbox.detect_language(vim.api.nvim_buf_get_name(buf))
  if not language then
    vim.notify("unsandbox: which language? :UnsandboxRun python", vim.log.levels.ERROR)
    return nil
  end
  local code = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") .. "\n"
  local task = unsandbox.spawn(function()
    local r, err = unsandbox.execute_code(language, code)
    -- loop callbacks may not touch the editor: its part runs scheduled
    vim.schedule(function()
      local scratch = show(r, err, language)
      if on_done then on_done(scratch, r, err) end
    end)
    return r, err
  end)
  drive()
  return task
end

function M.setup()
  vim.api.nvim_create_user_command("UnsandboxRun", function(cmd)
    M.run(0, cmd.args ~= "" and cmd.args or nil)
  end, { nargs = "?", desc = "Run the buffer in a sandbox (unsandbox)" })
end

-- Called once the library is found: the polls' timer and the module.
local function init(lib)
  unsandbox = lib
  timer = timer or uv.new_timer()
  return M
end

------------------------------------------------------------------------
-- the self-test (this file run by :luafile rather than required)
------------------------------------------------------------------------

-- Run from a checkout: its lua/ and build/luajit/ (make LUA=luajit).
local function checkout_paths()
  local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
  local root = here .. "/../.."
  if vim.loop.fs_stat(root .. "/build/luajit/unsandbox/core.so") then
    package.path = root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;" .. package.path
    package.cpath = root .. "/build/luajit/?.so;" .. package.cpath
  end
end

local function self_test()
  checkout_paths()
  init(require "unsandbox")
  M.setup()
  local out = io.stdout
  local buf = vim.api.nvim_create_buf(true, false)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false,
    { "import time", "time.sleep(1)", "print('hello from nvim', 6 * 7)" })
  vim.bo[buf].filetype = "python"
  vim.api.nvim_set_current_buf(buf)

  -- the editor's own work meanwhile: a timer that must keep firing
  local ticks, running = 0, true
  local tick = uv.new_timer()
  tick:start(10, 10, function() if running then ticks = ticks + 1 end end)

  local scratch, result, failure
  local started = uv.hrtime()
  local task = M.run(0, nil, function(b, r, err) scratch, result, failure = b, r, err end)
  local returned_ms = (uv.hrtime() - started) / 1e6
  vim.wait(120000, function() return scratch ~= nil end, 10)
  running = false
  tick:stop()
  tick:close()

  local lines = scratch and vim.api.nvim_buf_get_lines(scratch, 0, -1, false) or {}
  out:write("scratch buffer:\n")
  for _, l in ipairs(lines) do out:write("  ", l, "\n") end
  out:write(string.format("run() returned in %.1f ms; the editor's timer fired %d times while the job ran (%s)\n",
    returned_ms, ticks, task and task:status() or "no task"))
  local ok = result and result.exit_code == 0 and lines[1] == "hello from nvim 42"
  out:write(ok and "self-test ok\n" or ("self-test FAILED: " .. tostring(failure) .. "\n"))
  out:flush()
  vim.cmd(ok and "qall!" or "cquit 1")
end

if ... == nil then
  -- an error quits with status 1, the error on stderr: headless, the
  -- editor would otherwise wait for a user who is not there
  local ok, err = xpcall(self_test, debug.traceback)
  if not ok then
    io.stderr:write("self-test error: ", tostring(err), "\n")
    vim.cmd("cquit 1")
  end
  return
end
return init(require "unsandbox")
