-- Small file and process helpers shared by the specs.
local M = {}

function M.quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- The file's content, or nil when it cannot be read.
function M.read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

-- Writes text to path and returns the path.
function M.write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
  return path
end

-- A fresh directory under /tmp.
function M.tmpdir(prefix)
  local p = io.popen("mktemp -d /tmp/" .. (prefix or "unsb") .. ".XXXXXX")
  local dir = p:read("*l")
  p:close()
  return dir
end

-- Removes a directory tree, refusing anything outside /tmp.
function M.rm_rf(dir)
  if dir and dir:match("^/tmp/.") then os.execute("rm -rf " .. M.quote(dir)) end
end

-- Is the process running? A zombie (exited, not yet reaped) is not.
function M.alive(pid)
  local st = M.read("/proc/" .. pid .. "/status")
  return st ~= nil and not st:match("\nState:%s*Z")
end

return M
