-- Runs a child process through the shell and returns its combined output
-- and exit code. env: table of variables to set (false = unset) for it.
local M = {}

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
M.quote = q

function M.env_prefix(env)
  local parts = {}
  for k, v in pairs(env or {}) do
    if v == false then parts[#parts + 1] = "-u " .. k
    else parts[#parts + 1] = k .. "=" .. q(v) end
  end
  table.sort(parts)
  return #parts > 0 and ("env " .. table.concat(parts, " ") .. " ") or ""
end

-- The library's own paths for a child lua5.4, so it finds this checkout.
M.LUA_ENV = {
  LUA_PATH = "lua/?.lua;lua/?/init.lua;;",
  LUA_CPATH = "lua/?.so;;",
}

-- errfile: send stderr there instead of merging it into the output.
-- Standard input is /dev/null: CI may run with none at all.
function M.run(cmd, env, errfile)
  local redirect = " </dev/null" .. (errfile and (" 2>" .. q(errfile)) or " 2>&1")
  local p = io.popen(M.env_prefix(env) .. cmd .. redirect .. "; echo \"EXIT=$?\"")
  local out = p:read("*a")
  p:close()
  local code = tonumber(out:match("EXIT=(%d+)%s*$"))
  out = out:gsub("EXIT=%d+%s*$", "")
  return out, code
end

-- Runs a Lua snippet in a fresh lua5.4 with the library on its paths.
function M.lua(code, env)
  local e = {}
  for k, v in pairs(M.LUA_ENV) do e[k] = v end
  for k, v in pairs(env or {}) do e[k] = v end
  return M.run("lua5.4 -e " .. q(code), e)
end

return M
