--- `un local start|status|env|stop`: the user's lasting local unsandboxd
-- (csrc/host/local_server.c, reached through unlua's `unlua.local`
-- module). Internal module.
local fail = require "unsandbox.cli.fail"
local out = require "unsandbox.cli.output"
local exits = require "unsandbox.cli.exits"

local M = {}

-- The host's module; un always runs under unlua, which has it.
local function host()
  local ok, mod = pcall(require, "unlua.local")
  if not ok then fail.exit_with(exits.codes.usage, "un: un local needs the unlua host (run un, not the script)") end
  return mod
end

local function checked(v, err)
  if v == nil then fail.exit_with(exits.codes.io, "un: local unsandboxd: " .. tostring(err)) end
  return v
end

local function describe(s)
  print(string.format("%-10s %s", "pid", tostring(s.pid)))
  print(string.format("%-10s %s", "url", tostring(s.url)))
  if s.cp_url then print(string.format("%-10s %s", "cp_url", s.cp_url)) end
  print(string.format("%-10s %s", "data", s.data))
  print(string.format("%-10s %s", "log", s.log))
end

function M.start(o)
  local s = checked(host().start())
  if o.json then return out.json(s) end
  print((s.started and "started" or "already running:") .. " the local unsandboxd at " .. s.url
    .. " (pid " .. s.pid .. "); un --local and unlua --local use it; un local stop stops it")
end

function M.status(o)
  local s = checked(host().status())
  if o.json then return out.json(s) end
  if not s.running then
    print("no local unsandboxd runs (un local start starts one; its data stays in " .. s.dir .. ")")
    return
  end
  print("the local unsandboxd runs")
  describe(s)
end

function M.env(o)
  local vars = checked(host().settings())
  if o.json then return out.json(vars) end
  local names = {}
  for k in pairs(vars) do names[#names + 1] = k end
  table.sort(names)
  for _, k in ipairs(names) do print("export " .. k .. "='" .. vars[k]:gsub("'", "'\\''") .. "'") end
end

function M.stop(o)
  local stopped = checked(host().stop())
  out.did(o, stopped, stopped and "stopped the local unsandboxd (its data stays for the next start)"
    or "no local unsandboxd was running")
end

return M
