-- Object storage calls of the local Control Plane for specs: locators as
-- query strings or bodies, tickets, content transfers, sha256 of test
-- data (sha256sum, so the check is independent of the server's code),
-- and files planted in a workspace from outside (nsenter into the
-- server's mount namespace, where its volumes are mounted).
local cp = require "spec.helpers.cp"
local fs = require "spec.helpers.fs"
local json = require "cjson"
local core = require "unsandbox.core"

local M = {}

local function escape(s)
  return (tostring(s):gsub("[^%w%-%._~/]", function(c) return string.format("%%%02X", c:byte()) end))
end

-- "?k=v&..." of a table, keys sorted, values percent-encoded.
function M.query(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = escape(k) .. "=" .. escape(t[k]) end
  return #parts > 0 and "?" .. table.concat(parts, "&") or ""
end

-- A copy of t with the fields of extra added.
function M.with(t, extra)
  local out = {}
  for k, v in pairs(t) do out[k] = v end
  for k, v in pairs(extra or {}) do out[k] = v end
  return out
end

-- A GET-style route (stat, list, versions, objects, DELETE) with a locator.
function M.get(srv, token, route, loc, opts)
  opts = opts or {}
  return cp.request(srv, opts.method or "GET", "/v1/storage/objects" .. route .. M.query(loc),
    { token = token, headers = opts.headers })
end

function M.post(srv, token, loc, bytes, opts)
  opts = opts or {}
  local body = M.with(loc, { content_base64 = core.base64_encode(bytes) })
  return cp.request(srv, "POST", "/v1/storage/objects", { token = token, headers = opts.headers,
    body = M.with(body, opts.extra) })
end

-- A ticket: status, ObjectTicket.
function M.ticket(srv, token, loc, operation, extra, headers)
  return cp.request(srv, "POST", "/v1/storage/tickets", { token = token, headers = headers,
    body = M.with(M.with(loc, { operation = operation }), extra) })
end

function M.upload(srv, ticket, bytes, opts)
  opts = opts or {}
  return cp.request(srv, "PUT", "/v1/storage/content", { token = ticket, body = bytes,
    headers = { ["Content-Type"] = opts.content_type or "application/octet-stream" }, timeout = 120 })
end

function M.download(srv, ticket)
  return cp.request(srv, "GET", "/v1/storage/content", { token = ticket, timeout = 120 })
end

-- Lower-case hex SHA-256 of a string.
function M.sha256(s)
  local dir = fs.tmpdir("sha")
  fs.write(dir .. "/d", s)
  local p = io.popen("sha256sum " .. fs.quote(dir .. "/d"))
  local out = p:read("*l")
  p:close()
  fs.rm_rf(dir)
  return out:match("^(%x+)")
end

local function b64url(s) return (core.base64_encode(s):gsub("%+", "-"):gsub("/", "_"):gsub("=", "")) end
local function unb64url(s)
  s = s:gsub("%-", "+"):gsub("_", "/")
  return core.base64_decode(s .. string.rep("=", (4 - #s % 4) % 4))
end

-- The claims of a token, and a token with changed claims but the old
-- signature (a forgery).
function M.claims(token) return json.decode(unb64url(token:match("^([^.]+)"))) end
function M.forge(token, change)
  local c = M.claims(token)
  for k, v in pairs(change) do c[k] = v end
  return b64url(json.encode(c)) .. "." .. token:match("%.(.+)$")
end

-- Runs a shell command in the server's mount namespace (where its
-- volumes are mounted); returns its first output line.
function M.in_server(srv, cmd)
  local p = io.popen("nsenter --target " .. srv.pid .. " --mount -- sh -c " .. fs.quote(cmd) .. " 2>&1")
  local out = p:read("*l")
  p:close()
  return out
end

-- The host path of rel in workspace ws (valid inside the server's namespace).
function M.ws_path(srv, ws, rel) return srv.data .. "/workspaces/" .. ws .. "/work/" .. rel end

-- Plants rel in workspace ws: a file with content, or with opts.symlink a
-- symlink to it, opts.fifo a FIFO, opts.size a sparse file of that size.
function M.plant(srv, ws, rel, content, opts)
  opts = opts or {}
  local path = fs.quote(M.ws_path(srv, ws, rel))
  local tmp = fs.tmpdir("plant")
  fs.write(tmp .. "/c", content or "")
  local make
  if opts.symlink then make = "ln -sfn " .. fs.quote(opts.symlink) .. " " .. path
  elseif opts.fifo then make = "mkfifo " .. path
  elseif opts.size then make = "truncate -s " .. opts.size .. " " .. path
  else make = "cp " .. fs.quote(tmp .. "/c") .. " " .. path end
  local out = M.in_server(srv, "mkdir -p \"$(dirname " .. path .. ")\" && " .. make .. " && echo planted")
  fs.rm_rf(tmp)
  assert(out == "planted", "could not plant " .. rel .. ": " .. tostring(out))
end

-- A workspace with a running runtime for owner, via the break-glass
-- token: its id and its workspace token.
function M.workspace(srv, session, owner)
  local st, lease = cp.request(srv, "POST", "/v1/workspaces", { token = srv.token,
    body = { session_id = session, owner = owner } })
  assert(st == 201, "workspace: " .. tostring(st))
  return lease.workspace_id, lease.access_token
end

function M.runtime(srv, ws)
  local st, sb = cp.request(srv, "POST", "/v1/sandboxes", { token = srv.token,
    body = { workspace_id = ws }, timeout = 120 })
  assert(st == 201, "sandbox: " .. tostring(st) .. " " .. json.encode(sb))
  return sb.id
end

return M
