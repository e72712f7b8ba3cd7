--- Argument checks for the public functions. Misuse raises at the
-- caller's level with a message naming the function and the argument.
-- Internal module.
local compat = require "unsandbox.compat"
local core = require "unsandbox.core"

local M = {}

-- The error is reported at the first Lua frame outside this library's
-- own files, so it points at the user's line however deep the check is
-- (C frames between, such as the pcall of a public call's frame, are
-- passed over).
local function library_file(source)
  return source:find("unsandbox[/\\][%w_]+%.lua$") ~= nil
    or source:find("unsandbox[/\\][%w_]+[/\\][%w_]+%.lua$") ~= nil
end

-- (5.1 shows a frame a tail call replaced as what "tail": not the user's)
local function user_code(info)
  return info.what ~= "C" and info.what ~= "tail" and not library_file(info.source)
end

-- Raises msg at the first frame outside the library: a level of this
-- coroutine, or, when the library's frames end the coroutine (a helper of
-- compat.pcall runs them on 5.1), the place in the coroutine that made it,
-- written in front of msg as error would.
local function raise_at_user(msg)
  local level = 3                 -- 1 raise_at_user, 2 fail or raise, 3 their caller
  while true do
    local info = debug.getinfo(level, "S")
    if not info then break end
    if user_code(info) then error(msg, level) end
    level = level + 1
  end
  local co = coroutine.running()
  while co and compat.parent_of(co) do
    co = compat.parent_of(co)
    for l = 1, 200 do
      local info = debug.getinfo(co, l, "Sl")
      if not info then break end
      if user_code(info) then
        error(info.short_src .. ":" .. (info.currentline or 0) .. ": " .. msg, 0)
      end
    end
  end
  error(msg, 1)
end

--- The one message of a misuse: "bad argument 'name' to 'fname' (msg)",
-- or with arg a position "bad argument #n to 'fname' (msg)" (as lauxlib
-- says it), raised at the caller's line.
local function fail(fname, arg, msg)
  local what = compat.math_type(arg) == "integer" and "#" .. arg or "'" .. tostring(arg) .. "'"
  raise_at_user(string.format("bad argument %s to '%s' (%s)", what, fname, msg))
end

function M.type(fname, arg, v, want, optional)
  if v == nil and optional then return v end
  if type(v) ~= want then
    fail(fname, arg, want .. " expected, got " .. (v == nil and "no value" or type(v)))
  end
  return v
end

function M.nonempty(fname, arg, v)
  M.type(fname, arg, v, "string")
  if v == "" then fail(fname, arg, "non-empty string expected") end
  return v
end

function M.id(fname, arg, v)
  M.type(fname, arg, v, "string")
  if not core.rules.valid_id(v) then
    fail(fname, arg, "invalid id " .. string.format("%q", v:sub(1, 64)) ..
      ": only letters, digits, '.', '_' and '-' are allowed")
  end
  return v
end

function M.int_range(fname, arg, v, lo, hi)
  if v == nil then return nil end
  if compat.math_type(v) ~= "integer" and not (type(v) == "number" and v == math.floor(v)) then
    fail(fname, arg, "integer expected, got " .. type(v) .. (type(v) == "number" and " " .. v or ""))
  end
  v = compat.tointeger(v)
  if v < lo or v > hi then
    fail(fname, arg, string.format("must be between %d and %d, got %d", lo, hi, v))
  end
  return v
end

function M.positive(fname, arg, v)
  if v == nil then return nil end
  if type(v) ~= "number" or v <= 0 or v ~= v then
    fail(fname, arg, "positive number of seconds expected, got " .. tostring(v))
  end
  return v
end

function M.oneof(fname, arg, v, set)
  if v == nil then return nil end
  M.type(fname, arg, v, "string")
  if not set[v] then
    local names = {}
    for k in pairs(set) do names[#names + 1] = k end
    table.sort(names)
    fail(fname, arg, "expected one of " .. table.concat(names, ", ") .. ", got '" .. v .. "'")
  end
  return v
end

--- The options table of a public function, checked in one place: nil is
-- an empty table (unless required), anything but a table raises, and so
-- does a key the function does not take (a misspelt option would
-- otherwise be silently ignored). allowed: {name = true, ...}, the one
-- declared list of the function. how: true (the table is required), or a
-- table {required =, arg = the argument's name (default "opts"), unknown =
-- the message for a key not allowed ("%s" is the key; default "unknown
-- option '%s'"), explain = {key = message} for keys refused with a
-- reason of their own}.
function M.options(fname, opts, allowed, how)
  how = how == true and { required = true } or how or {}
  local arg = how.arg or "opts"
  if opts == nil and not how.required then return {} end
  M.type(fname, arg, opts, "table")
  for k in pairs(opts) do
    if not allowed[k] then
      local why = how.explain and how.explain[k]
      fail(fname, arg, why or string.format(how.unknown or "unknown option '%s'", tostring(k)))
    end
  end
  return opts
end

--- Raises msg at the caller's line: a misuse that is not about one
-- argument (a closed object, a call from the wrong place, a variable of
-- the environment the core refused).
function M.raise(msg)
  raise_at_user(tostring(msg))
end

--- What the returning form of a core function gave (csrc/lua/binding.h:
-- the value, or nil, why, arg for a value it refused), with the refusal
-- raised at the caller's line: arg "env" (a variable of the environment:
-- why alone), else the argument of fname it was, named by names[arg] (a
-- list of fname's argument names) or by names itself (a string). The
-- core says which argument it was; its message is never read for that.
function M.value(fname, names, v, why, arg)
  if v ~= nil then return v end
  if arg == "env" then M.raise(why) end
  fail(fname, type(names) == "table" and (names[arg] or arg) or names, why)
end

M.fail = fail

return M
