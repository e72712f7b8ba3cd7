-- What the specs need that differs between the Luas they run under (5.4,
-- 5.3, 5.1 and LuaJIT 2.1: `make test-all-luas`), so every spec file is
-- written in their common subset, as the facade is. Numbers and tables
-- come from the facade's own unsandbox.compat; the rest is for the specs
-- alone.
local compat = require "unsandbox.compat"

local M = {
  pack = compat.pack,
  unpack = compat.unpack,
  math_type = compat.math_type,
  tointeger = compat.tointeger,
  -- the Lua running the specs: "5.4", "5.3", "5.1" or "luajit"
  name = rawget(_G, "jit") and "luajit" or _VERSION:match("^Lua (%d+%.%d+)$"),
}

-- utf8.codes / utf8.len for what the specs check (5.1 and LuaJIT have no
-- utf8 library): the code points of valid UTF-8, or nil for invalid.
local function decode(s)
  local out, i, n = {}, 1, #s
  while i <= n do
    local c = s:byte(i)
    local len, cp = 1, c
    if c >= 0xF0 and c <= 0xF4 then len, cp = 4, c - 0xF0
    elseif c >= 0xE0 then len, cp = 3, c - 0xE0
    elseif c >= 0xC2 and c < 0xE0 then len, cp = 2, c - 0xC0
    elseif c >= 0x80 then return nil end
    if i + len - 1 > n then return nil end
    for j = i + 1, i + len - 1 do
      local b = s:byte(j)
      if b < 0x80 or b > 0xBF then return nil end
      cp = cp * 64 + (b - 0x80)
    end
    out[#out + 1] = cp
    i = i + len
  end
  return out
end

--- The number of code points of s, or nil when s is not valid UTF-8.
function M.utf8_len(s)
  local cps = decode(s)
  return cps and #cps
end

--- The code points of s (valid UTF-8, else it raises), as a list.
function M.utf8_codes(s)
  return assert(decode(s), "invalid UTF-8")
end

--- n as a big-endian unsigned integer of `bytes` bytes (string.pack(">In")).
function M.uint_be(n, bytes)
  local out = {}
  for i = bytes, 1, -1 do
    out[i] = string.char(n % 256)
    n = math.floor(n / 256)
  end
  return table.concat(out)
end

--- Runs a shell command: true when it exited 0 (os.execute's result
-- differs: 5.1 and LuaJIT return the status number).
function M.sh(cmd)
  local a, _, code = os.execute(cmd)
  if type(a) == "number" then return a == 0 end
  return a == true and (code == nil or code == 0)
end

--- loadfile(path, "t", env) on every Lua (5.1: setfenv).
function M.loadfile(path, env)
  local setfenv = rawget(_G, "setfenv")
  if setfenv then
    local f, err = loadfile(path)
    if f then setfenv(f, env) end
    return f, err
  end
  return loadfile(path, "t", env)
end

-- On 5.4 the language's own to-be-closed variable, compiled only there.
local scope54 = M.name == "5.4" and assert(load([[
  local x, fn = ...
  local v <close> = x
  return fn(v)
]], "=scope54"))

--- fn(x), x closed when fn ends however it ends: by `local v <close> = x`
-- on 5.4, and by unsandbox.with (its documented equivalent) elsewhere.
function M.scope(x, fn)
  if scope54 then return scope54(x, fn) end
  return compat.with(x, fn)
end

return M
