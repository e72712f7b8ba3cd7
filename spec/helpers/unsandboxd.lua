-- Starts a real unsandboxd on an ephemeral loopback port for a spec and
-- stops it (by pid) afterwards. The server announces its URL and dev keys
-- on stdout once it accepts connections, so nothing here sleeps or guesses.
local M = {}

local ROOT = os.getenv("UNSANDBOX_ROOT") or "."
M.bin = ROOT .. "/bin/unsandboxd"

local fs = require "spec.helpers.fs"
local wait = require "spec.helpers.wait"
local sh_quote, alive = fs.quote, fs.alive
M.sh_quote, M.tmpdir, M.rm_rf, M.alive = fs.quote, fs.tmpdir, fs.rm_rf, fs.alive

-- Starts unsandboxd. opts.args: extra command-line arguments (list);
-- opts.data: reuse a data directory (restart tests); the server has no
-- sandbox pool (--pool 0: a spec's sandboxes are its own, and idle pools
-- would load the shared machine) unless opts.args asks for one or
-- opts.pool_default keeps the server's default pool. Returns a server
-- table: url, public_key, secret_key, cp_url, cp_port, token (the
-- Control Plane's break-glass token), pid, data, log, and stop().
function M.start(opts)
  opts = opts or {}
  local data = opts.data or M.tmpdir("unsbd-data")
  local log = data .. ".log"
  local args = { "--listen", "127.0.0.1:0", "--data", data, "--dev-keys" }
  if not opts.pool_default then args[#args + 1] = "--pool"; args[#args + 1] = "0" end
  for _, a in ipairs(opts.args or {}) do args[#args + 1] = a end
  local quoted = {}
  for i, a in ipairs(args) do quoted[i] = sh_quote(a) end
  -- The shell backgrounds the server, reports its pid, and exits; the
  -- server keeps the pipe's write end as its stdout.
  local cmd = string.format("%s %s 2>>%s </dev/null & echo UNSANDBOXD_PID=$!",
    sh_quote(M.bin), table.concat(quoted, " "), sh_quote(log))
  local pipe = assert(io.popen(cmd, "r"))
  local srv = { data = data, log = log, owns_data = not opts.data, pipe = pipe }
  for _ = 1, 10 do
    local line = pipe:read("*l")
    if not line then break end
    local k, v = line:match("^([%w_]+)=(.*)$")
    if k == "UNSANDBOXD_PID" then srv.pid = tonumber(v)
    elseif k == "UNSANDBOX_URL" then srv.url = v
    elseif k == "SANDBOX_CONTROL_PLANE_URL" then srv.cp_url = v
    elseif k == "UNSANDBOX_PUBLIC_KEY" then srv.public_key = v
    elseif k == "UNSANDBOX_SECRET_KEY" then srv.secret_key = v
    elseif k == "SANDBOX_TOKEN" then srv.token = v end
    if srv.pid and srv.url and srv.public_key and srv.secret_key and srv.token then break end
  end
  if not (srv.pid and srv.url and srv.secret_key) then
    if srv.pid then os.execute("kill -9 " .. srv.pid .. " 2>/dev/null") end
    local f = io.open(log)
    local text = f and f:read("*a") or ""
    if f then f:close() end
    pipe:close()
    os.remove(log)
    if srv.owns_data then M.rm_rf(data) end
    error("unsandboxd did not start: " .. text)
  end
  srv.port = tonumber(srv.url:match(":(%d+)$"))
  srv.cp_port = srv.cp_url and tonumber(srv.cp_url:match(":(%d+)$"))

  -- Stops the server with SIGTERM and waits (bounded) for it to exit.
  function srv.stop(keep_data)
    if srv.pid and alive(srv.pid) then
      os.execute("kill -TERM " .. srv.pid .. " 2>/dev/null")
      wait.eventually(function() return not alive(srv.pid) end, 5)
      if alive(srv.pid) then os.execute("kill -9 " .. srv.pid .. " 2>/dev/null") end
    end
    if srv.pipe then srv.pipe:close(); srv.pipe = nil end
    if not keep_data and srv.owns_data then
      M.rm_rf(srv.data)
      os.remove(srv.log)
    end
  end

  -- Environment-style options for unsandbox.client{...}.
  function srv.client_opts(extra)
    local o = { url = srv.url, public_key = srv.public_key, secret_key = srv.secret_key }
    for k, v in pairs(extra or {}) do o[k] = v end
    return o
  end
  return srv
end

--- run(args) -> output, exit status: unsandboxd run with the flags
-- args (a shell word list) on a fresh data directory, removed after, for
-- specs of flags it must refuse before it serves.
function M.run(args)
  local data = M.tmpdir("unsbd-flags")
  local p = assert(io.popen(M.sh_quote(M.bin) .. " --data " .. M.sh_quote(data) .. " " .. args .. " 2>&1; echo rc=$?"))
  local out = p:read("*a")
  p:close()
  M.rm_rf(data)
  local rc = tonumber(out:match("rc=(%d+)%s*$"))
  return out:gsub("rc=%d+%s*$", ""), rc
end

--- add_key(srv) -> public_key, secret_key: a second key pair in srv's
-- data directory (`unsandboxd keys add`), for specs that need two owners.
function M.add_key(srv)
  local p = assert(io.popen(M.sh_quote(M.bin) .. " keys add --data " .. M.sh_quote(srv.data) .. " 2>&1"))
  local out = p:read("*a")
  p:close()
  local pk, sk = out:match("UNSANDBOX_PUBLIC_KEY=(%S+)"), out:match("UNSANDBOX_SECRET_KEY=(%S+)")
  assert(pk and sk, "keys add failed: " .. out)
  return pk, sk
end

return M
