--- Runs the sandbox-side helper (helper_sh.lua) through the Control
-- Plane's shell tool (MCP `shell` exec): the one way the agent tools reach
-- what the protocol has no route for. A call is one exec of
--
--   [ -f /tmp/.unsandbox/h-<hash>.sh ] || exit 213; . /tmp/.unsandbox/h-<hash>.sh OP ARG...
--
-- with every argument POSIX-quoted by the core (so hostile names travel
-- as data), within the tool's 8192-byte command and 30 s limits. Exit 213
-- means a file the call needs is not in this runtime yet (a fresh runtime,
-- or another client version: the names carry a hash of the content): it
-- is installed, in pieces written by `base64 -d` into a temporary and
-- renamed into place, and the call is made again. The helper's answer is
-- base64 on stdout (or a spill fetched in pieces); a refusal is exit 3
-- with "code<TAB>message", which becomes an unsandbox.Error: kind
-- not_found, or kind sandbox with err.code the helper's code. Internal
-- module.
local core = require "unsandbox.core"
local Error = require "unsandbox.errors"

local M = {}

M.ROOT = "/tmp/.unsandbox"
M.SCRIPT = require "unsandbox.agent.helper_sh"

--- The path a file of this content has in every runtime:
-- ROOT/<prefix>-<16 hex of its sha256><ext>.
function M.path_of(prefix, content, ext)
  return M.ROOT .. "/" .. prefix .. "-" .. core.codec.sha256(content):sub(1, 16) .. ext
end

M.HELPER = M.path_of("h", M.SCRIPT, ".sh")

local NEED_INSTALL = 213
local REFUSED = 3
local PIECE = 4500            -- bytes per install exec: 6000 base64 characters
local COMMAND_MAX = 8192      -- the shell tool's limit (spec §5.4)
M.ARG_ROOM = 6400             -- what a caller may put in its arguments, quoted

local function random_hex()
  return core.trace.new_traceparent():sub(37, 52)
end
M.random_hex = random_hex

local function fail(kind, message, fields)
  local e = { kind = kind, message = message }
  for k, v in pairs(fields or {}) do e[k] = v end
  return Error.new(e)
end
M.fail = fail

-- Writes content to path in the runtime: pieces into a temporary of its
-- own, then one rename (two clients installing at once both succeed).
local function install(m, key, path, content)
  local tmp = path .. ".tmp-" .. random_hex()
  local n = 0
  for i = 1, math.max(1, #content), PIECE do
    n = n + 1
    local b64 = core.codec.base64_encode(content:sub(i, i + PIECE - 1))
    local line = "mkdir -p " .. M.ROOT .. " && printf %s '" .. b64 .. "' | base64 -d " ..
      (n == 1 and ">" or ">>") .. " " .. tmp
    local r, err = m:shell(line, 30, key)
    if not r then return nil, err end
    if r.exit_code ~= 0 then
      return nil, fail("sandbox", "cannot install " .. path .. " in the sandbox: " ..
        tostring(r.stderr), { code = "io" })
    end
  end
  local r, err = m:shell("mv -f " .. tmp .. " " .. path, 30, key)
  if not r then return nil, err end
  if r.exit_code ~= 0 then
    return nil, fail("sandbox", "cannot install " .. path .. ": " .. tostring(r.stderr), { code = "io" })
  end
  return true
end

local function command_line(op, args, needs)
  local argv = { op }
  for i = 1, #args do argv[#argv + 1] = args[i] end
  local quoted = core.cp.shell_quote(argv)
  local test = { "[ -f " .. M.HELPER .. " ]" }
  for _, f in ipairs(needs) do test[#test + 1] = "[ -f " .. f.path .. " ]" end
  return table.concat(test, " && ") .. " || exit " .. NEED_INSTALL .. "; . " .. M.HELPER .. " " .. quoted
end

-- The helper's refusal (exit 3, "code<TAB>message" on stderr) as an Error.
local function refusal(fname, stderr)
  local code, msg = tostring(stderr):match("([%l_]+)\t(.-)\n?$")
  if not code then
    return fail("sandbox", fname .. ": " .. tostring(stderr), { code = "io" })
  end
  if code == "not_found" then return fail("not_found", fname .. ": " .. msg, { code = code }) end
  return fail("sandbox", fname .. ": " .. msg, { code = code })
end

local function exec(m, key, fname, line, t)
  local r, err = m:shell(line, t, key)
  if not r then return nil, err end
  if r.timed_out then
    return nil, fail("timeout", fname .. ": the sandbox did not answer within " .. t .. " s")
  end
  return r
end

local function decode(fname, text)
  local bytes = core.codec.base64_decode(text)
  if not bytes then return nil, fail("protocol", fname .. ": the sandbox's answer is not base64") end
  return bytes
end

-- A result the helper left in a spill file (its base64 text), fetched
-- in slices, each sent base64 again.
local function fetch_spill(m, key, fname, name, size)
  local parts, got = {}, 0
  while got < size do
    local line = command_line("spill", { name, tostring(got) }, {})
    local r, err = exec(m, key, fname, line, 30)
    if not r then return nil, err end
    if r.exit_code ~= 0 then return nil, refusal(fname, r.stderr) end
    local piece, derr = decode(fname, r.stdout)
    if not piece then return nil, derr end
    if #piece == 0 then return nil, fail("protocol", fname .. ": the sandbox's answer ended early") end
    parts[#parts + 1] = piece
    got = got + #piece
  end
  return decode(fname, table.concat(parts))
end

--- Runs OP with args (a list of strings) and returns its result (bytes),
-- or nil, Error. opts: timeout (s, 1-30: how long the exec may take),
-- needs ({{path =, content =}, ...}: files the call uses besides the
-- helper, installed when missing), fname (names the call in errors).
function M.run(m, key, op, args, opts)
  opts = opts or {}
  local fname, t = opts.fname or op, opts.timeout or 30
  local needs = opts.needs or {}
  local line = command_line(op, args, needs)
  if #line > COMMAND_MAX then
    return nil, fail("validation", fname .. ": the arguments are too long for one shell command")
  end
  for attempt = 1, 2 do
    local r, err = exec(m, key, fname, line, t)
    if not r then return nil, err end
    if r.exit_code == 0 then
      local name, size = tostring(r.stdout):match("^@(%S+) (%d+)$")
      if name then return fetch_spill(m, key, fname, name, tonumber(size)) end
      return decode(fname, r.stdout or "")
    elseif r.exit_code == REFUSED then
      return nil, refusal(fname, r.stderr)
    elseif r.exit_code == NEED_INSTALL and attempt == 1 then
      local ok, ierr = install(m, key, M.HELPER, M.SCRIPT)
      for _, f in ipairs(needs) do
        if not ok then break end
        ok, ierr = install(m, key, f.path, f.content)
      end
      if not ok then return nil, ierr end
    else
      return nil, fail("sandbox", fname .. ": the sandbox helper failed (exit " ..
        tostring(r.exit_code) .. "): " .. tostring(r.stderr), { code = "io" })
    end
  end
end

return M
