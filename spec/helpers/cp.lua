-- HTTP/1.1 to the local Control Plane for specs: one request per
-- connection over luasocket, every header under the spec's control (the
-- client library is tested separately), bodies as strings or tables
-- (JSON-encoded), replies decoded when they are JSON.
local socket = require "socket"
local json = require "cjson"
local rawhttp = require "spec.helpers.rawhttp"

local M = {}

local function read_body(s, h)
  if h["transfer-encoding"] and h["transfer-encoding"]:lower():find("chunked") then
    local parts = {}
    for _ = 1, 100000 do
      local line = s:receive("*l")
      local size = line and tonumber(line:match("^(%x+)"), 16)
      if not size or size == 0 then break end
      parts[#parts + 1] = s:receive(size)
      s:receive("*l")
    end
    return table.concat(parts)
  end
  local n = tonumber(h["content-length"] or "")
  if n then return n > 0 and (s:receive(n) or "") or "" end
  return s:receive("*a") or ""
end

-- opts: token (Bearer value), headers {name = value}, body (string or
-- table), raw_length (false: no Content-Length), timeout (s).
-- Returns status, decoded body (or the raw text), headers, raw body.
function M.request(srv, method, path, opts)
  opts = opts or {}
  local s = assert(socket.tcp())
  s:settimeout(opts.timeout or 30)
  assert(s:connect("127.0.0.1", srv.cp_port))
  local body = opts.body
  if type(body) == "table" then body = json.encode(body) end
  local lines = { method .. " " .. path .. " HTTP/1.1", "Host: 127.0.0.1", "Connection: close" }
  if opts.token then lines[#lines + 1] = "Authorization: Bearer " .. opts.token end
  for k, v in pairs(opts.headers or {}) do lines[#lines + 1] = k .. ": " .. v end
  if body and opts.raw_length ~= false then lines[#lines + 1] = "Content-Length: " .. #body end
  if body and not (opts.headers or {})["Content-Type"] then
    lines[#lines + 1] = "Content-Type: application/json"
  end
  s:send(table.concat(lines, "\r\n") .. "\r\n\r\n" .. (body or ""))
  local status, h = rawhttp.read_head(s)
  if not status then s:close(); return nil, "no reply" end
  local raw = read_body(s, h)
  s:close()
  local ok, doc = pcall(json.decode, raw)
  return status, ok and doc or raw, h, raw
end

-- A tenant and a key for it through the admin API; returns the key.
function M.tenant_key(srv, tenant, opts)
  opts = opts or {}
  local st = M.request(srv, "POST", "/v1/admin/tenants", { token = srv.token,
    body = { id = tenant, max_workspaces = opts.max_workspaces, max_runtimes = opts.max_runtimes } })
  assert(st == 201 or st == 409, "tenant create answered " .. tostring(st))
  local kst, key = M.request(srv, "POST", "/v1/admin/tenants/" .. tenant .. "/keys", { token = srv.token,
    body = { label = "spec", permissions = opts.act_as_subjects and { "act_as_subjects" } or nil } })
  assert(kst == 201, "key create answered " .. tostring(kst))
  return key.api_key, key
end

return M
