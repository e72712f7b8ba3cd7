--- How `un` stops: a failure with its exit code (cli/exits.lua) and its
-- one line for stderr, raised inside main and caught there; the library's
-- Errors mapped to those codes; a misuse the library raised about a
-- user's word turned into a usage error that names the command, never a
-- function of the library. Internal module.
local compat = require "unsandbox.compat"
local unsandbox = require "unsandbox"
local exits = require "unsandbox.cli.exits"

local M = {}

local CODES = exits.codes

-- The metatable of a failure in flight.
M.Exit = {}

function M.exit_with(code, msg)
  error(setmetatable({ code = code, msg = msg }, M.Exit), 0)
end

--- A usage error: "un: msg (un --help for usage)" unless msg already
-- says where the help is.
function M.usage(msg)
  if not msg:find("--help", 1, true) then msg = msg .. " (un --help for usage)" end
  M.exit_with(CODES.usage, msg:match("^un ") and msg or "un: " .. msg)
end

--- The exit for an unsandbox.Error: interrupted 130, credentials and
-- 401/403 auth, timeout, every other failure of the service. The line is
-- the Error's text (with its hint: what to do).
function M.fail(err)
  if err.kind == "interrupted" then
    error(setmetatable({ code = CODES.interrupted, interrupted = true }, M.Exit), 0)
  end
  local code = CODES.service
  if err.kind == "credentials" or err.status == 401 or err.status == 403 then code = CODES.auth
  elseif err.kind == "timeout" then code = CODES.timeout end
  M.exit_with(code, "un: " .. tostring(err):gsub("^unsandbox: ", ""))
end

--- The value of a call that succeeded, alone, or the exit for its error.
function M.check(v, err)
  if v == nil then M.fail(err) end
  return v
end

--- Runs f(...); a misuse the library raised (a bad id, a path outside
-- /workspace, a bad URL) becomes a usage error of the command `where`,
-- with the library's reason and without its function's name.
function M.guard(where, f, ...)
  local r = table.pack(pcall(f, ...))
  if r[1] then return compat.unpack(r, 2, r.n) end
  local e = r[2]
  if getmetatable(e) == M.Exit or M.is_interrupt(e) then error(e, 0) end
  local text = tostring(e):gsub("^[^\n]-:%d+: ", "")
  local why = text:match("^bad argument [^(]* %((.*)%)$")
  M.usage((where == "un" and "" or where .. ": ") .. (why or text))
end

--- Ctrl-C as it reaches main: unlua's "interrupted!", the library's
-- raised Error of kind interrupted, or fail()'s exit for a returned one.
function M.is_interrupt(e)
  if type(e) == "string" then return e:match("interrupted!$") ~= nil end
  if unsandbox.Error.is(e) then return e.kind == "interrupted" end
  return getmetatable(e) == M.Exit and e.interrupted == true
end

return M
