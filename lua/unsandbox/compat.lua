--- What differs between the Lua dialects the facade runs on (5.4, 5.3,
-- 5.1 and LuaJIT 2.1), in one place: every other file of the facade is
-- written in their common subset (no `<close>` variables, no `//` or
-- bitwise operators, no goto, no 5.3 library function called directly)
-- and calls these instead. Resources still carry `__close`, so a 5.4
-- user's `local x <close> = ...` works; on the others `x:close()` or
-- M.with does the same. Internal module (M.with is unsandbox.with).
local M = {}

M.unpack = table.unpack or rawget(_G, "unpack")   -- 5.1 and LuaJIT: the global

--- table.pack: the values and their count n.
M.pack = table.pack or function(...)
  return { n = select("#", ...), ... }
end

------------------------------------------------------------------------
-- numbers
------------------------------------------------------------------------

-- 5.1 and LuaJIT have only doubles: an integral value that a double holds
-- exactly (|v| <= 2^53) is what 5.3 would call an integer. JSON is the
-- same either way: cjson encodes every number as a double (%.14g) on all
-- four, and transport.normalise makes integral decoded numbers integers.
if math.type then
  M.math_type, M.tointeger, M.maxinteger = math.type, math.tointeger, math.maxinteger
else
  local EXACT = 2 ^ 53

  function M.math_type(v)
    if type(v) ~= "number" then return nil end
    if v == math.floor(v) and v >= -EXACT and v <= EXACT then return "integer" end
    return "float"
  end

  function M.tointeger(v)
    if M.math_type(v) == "integer" then return v end
    return nil
  end

  M.maxinteger = EXACT
end

--- a // b for numbers (floor division), as an integer when both are.
function M.idiv(a, b)
  local q = math.floor(a / b)
  return M.tointeger(q) or q
end

------------------------------------------------------------------------
-- coroutines
------------------------------------------------------------------------

-- 5.1's coroutine.running() is nil on the main thread: this stands for it.
local MAIN = setmetatable({}, { __name = "unsandbox.MainThread" })

-- helper coroutine (M.pcall on 5.1) -> the coroutine it runs for, and
-- -> the coroutine that made it (a helper's helper has both apart)
local helper_of = setmetatable({}, { __mode = "k" })
local parent_of = setmetatable({}, { __mode = "k" })

--- The coroutine that made co when co is a helper of M.pcall, else nil:
-- where the frames of the code that called M.pcall are.
function M.parent_of(co)
  return parent_of[co]
end

--- The running coroutine as the facade's per-coroutine state sees it:
-- the main thread is a value too (5.1), and a helper coroutine of M.pcall
-- is the coroutine that made it.
function M.running()
  local co = coroutine.running()
  if co == nil then return MAIN end
  return helper_of[co] or co
end

--- coroutine.close where there is one (5.4: pending `<close>` variables
-- of co run); elsewhere co is left to the collector.
M.close_coroutine = coroutine.close or function() return true end

-- Can a coroutine yield across pcall? Not on PUC 5.1 (a C boundary);
-- LuaJIT and 5.2+ can.
local function pcall_yields()
  local co = coroutine.create(function() return pcall(coroutine.yield, true) end)
  local ok, yielded = coroutine.resume(co)
  return ok and yielded == true and coroutine.status(co) == "suspended"
end

--- Called with (helper, parent) for each helper coroutine M.pcall makes,
-- so the task scheduler can let it wait as its task (tasks.lua sets it).
M.on_helper = nil

--- pcall that a task's wait can yield across, on every dialect: on PUC
-- 5.1, inside a coroutine, f runs in a helper coroutine whose yields are
-- passed on (up) and whose resumptions are passed in (down).
M.pcall = pcall
if not pcall_yields() then
  local function settle(co, ok, ...)
    if not ok then return false, ... end
    if coroutine.status(co) == "dead" then return true, ... end
    return settle(co, coroutine.resume(co, coroutine.yield(...)))
  end

  M.pcall = function(f, ...)
    local parent = coroutine.running()
    if parent == nil then return pcall(f, ...) end   -- the main thread never yields
    local fn = f
    if type(f) ~= "function" then fn = function(...) return f(...) end end
    local co = coroutine.create(fn)
    helper_of[co] = helper_of[parent] or parent
    parent_of[co] = parent
    if M.on_helper then M.on_helper(co, parent) end
    return settle(co, coroutine.resume(co, ...))
  end
end

------------------------------------------------------------------------
-- closing
------------------------------------------------------------------------

-- How x is closed: its __close metamethod (called with the error the
-- block ends with), else its close method; nil when it has neither.
local function closer_of(x)
  local mt = getmetatable(x)
  if type(mt) == "table" and mt.__close then return mt.__close end
  local methods = type(x) == "table" and x or (type(mt) == "table" and mt.__index)
  if type(methods) == "table" and type(methods.close) == "function" then return methods.close end
  return nil
end

-- Closes x (nil or false: nothing) as a `<close>` variable would.
local function close_one(x, err)
  if x == nil or x == false then return end
  local closer = closer_of(x)
  if not closer then error("attempt to close a value with no close method (" .. type(x) .. ")", 0) end
  return closer(x, err)
end

local function closed(list, n, ok, ...)
  local err = not ok and (...) or nil
  local cok, cerr = true, nil
  for i = 1, n do
    local ok2, e = M.pcall(close_one, list[i], err)
    if not ok2 and cok then cok, cerr = false, e end
  end
  if not ok then error((...), 0) end
  if not cok then error(cerr, 0) end
  return ...
end

--- Runs fn(...) and closes every resource of list (a table of them, in
-- the order given, nil holes allowed up to list.n or #list), whichever
-- way fn ends; what fn raised is raised again after. What `local x
-- <close> = ...` does in 5.4, in the common subset.
function M.closing(list, fn, ...)
  return closed(list, list.n or #list, M.pcall(fn, ...))
end

--- with(resource, fn, ...) -> what fn(resource, ...) returns; resource is
-- closed however fn ends (returns, raises, or its task is cancelled while
-- it waits: the task's transfers are closed then). 5.1 and LuaJIT's
-- equivalent of `local x <close> = resource`.
function M.with(resource, fn, ...)
  if (type(resource) ~= "table" and type(resource) ~= "userdata") or not closer_of(resource) then
    error("bad argument #1 to 'with' (a resource with close expected, got " .. type(resource) .. ")", 2)
  end
  local fmt = getmetatable(fn)
  if type(fn) ~= "function" and not (type(fmt) == "table" and fmt.__call) then
    error("bad argument #2 to 'with' (function expected, got " .. type(fn) .. ")", 2)
  end
  return M.closing({ resource, n = 1 }, fn, resource, ...)
end

return M
