-- The MCP endpoint and file routes of the local Control Plane, for specs:
-- a workspace with a running sandbox, JSON-RPC bodies and the four MCP
-- headers, buffered calls, a Server-Sent Events reader that timestamps
-- each frame as it arrives (and can hang up mid-stream), and a count of
-- the processes in the server's sandbox cgroups. Every loop is bounded
-- in count and time; every request goes to 127.0.0.1.
local socket = require "socket"
local json = require "cjson"
local cp = require "spec.helpers.cp"
local fs = require "spec.helpers.fs"
local rawhttp = require "spec.helpers.rawhttp"

local M = { VERSION = "2026-07-28" }
local serial = 0

-- A workspace for session key sid (break-glass unless token) and a
-- running sandbox of it: the workspace lease and the sandbox lease.
function M.sandbox(srv, sid, token)
  local st, ws = cp.request(srv, "POST", "/v1/workspaces", { token = token or srv.token, body = { session_id = sid } })
  assert(st == 201, "workspace: " .. tostring(st) .. " " .. json.encode(ws))
  local sst, sb = cp.request(srv, "POST", "/v1/sandboxes", { token = token or srv.token,
    body = { workspace_id = ws.workspace_id } })
  assert(sst == 201, "sandbox: " .. tostring(sst) .. " " .. json.encode(sb))
  return ws, sb
end

-- A JSON-RPC request body (a table); id defaults to a fresh SDK-style id.
function M.body(method, params, id)
  serial = serial + 1
  return { jsonrpc = "2.0", id = id or ("sandbox-client-" .. serial .. "-abcdef"), method = method,
    params = params, _meta = { ["io.modelcontextprotocol/protocolVersion"] = M.VERSION,
      ["io.modelcontextprotocol/client"] = { name = "sandbox-client", version = "0.1.0" } } }
end

function M.headers(method, name, stream)
  return { ["MCP-Protocol-Version"] = M.VERSION, ["Mcp-Method"] = method, ["Mcp-Name"] = name,
    Accept = stream and "text/event-stream, application/json" or "application/json" }
end

-- POST to the lease's mcp_url: status, decoded reply, headers, raw.
-- opts: token (default the lease's), headers (replace the MCP ones),
-- body (a table or a raw string), timeout.
function M.post(srv, lease, method, params, opts)
  opts = opts or {}
  local name = params and params.name
  return cp.request(srv, "POST", lease.mcp_url, { token = opts.token or lease.access_token,
    headers = opts.headers or M.headers(method, name, false),
    body = opts.body or M.body(method, params), timeout = opts.timeout or 60 })
end

-- A buffered tools/call: structuredContent (or nil), the JSON-RPC error
-- (or nil), the HTTP status and the whole reply.
function M.tool(srv, lease, tool, args, opts)
  local st, doc = M.post(srv, lease, "tools/call", { name = tool, arguments = args }, opts)
  local result = type(doc) == "table" and doc.result
  return result and result.structuredContent, type(doc) == "table" and doc.error or nil, st, doc
end

-- Shell exec, buffered: its stdout (asserting success) and the result.
function M.sh(srv, lease, command, timeout)
  local r, err = M.tool(srv, lease, "shell", { command = command, timeout_seconds = timeout })
  assert(r, "shell failed: " .. json.encode(err or {}))
  return r.stdout, r
end

-- Splits SSE text into frames {event=, data=, msg=} (msg: decoded data).
local function frames_of(buf, out, t, on_frame)
  for _ = 1, 100000 do
    local i, j = buf:find("\n\n", 1, true)
    if not i then break end
    local text = buf:sub(1, i - 1)
    buf = buf:sub(j + 1)
    local f = { t = t, raw = text, event = text:match("^event: ([^\n]*)"), data = text:match("\ndata: ([^\n]*)$") }
    local ok, msg = pcall(json.decode, f.data or "")
    f.msg = ok and msg or nil
    out[#out + 1] = f
    if on_frame and on_frame(f) == "close" then return buf, true end
  end
  return buf, false
end

-- Decodes as much of a chunked body as `raw` holds: the payload and the
-- rest (an incomplete chunk), and whether the last chunk was seen.
local function dechunk(raw)
  local out, pos = {}, 1
  for _ = 1, 100000 do
    local e = raw:find("\r\n", pos, true)
    if not e then break end
    local size = tonumber(raw:sub(pos, e - 1):match("^(%x+)"), 16)
    if not size then break end
    if size == 0 then return table.concat(out), "", true end
    if #raw < e + 2 + size + 1 then break end
    out[#out + 1] = raw:sub(e + 2, e + 1 + size)
    pos = e + 4 + size
  end
  return table.concat(out), raw:sub(pos), false
end

-- A streamed shell call (Accept: text/event-stream first). Returns
-- {status, headers, frames = {{t, event, data, msg}...}, closed, raw}: t
-- is seconds since the request was sent. opts.on_frame(frame) returning
-- "close" hangs up right there; opts.accept replaces the Accept header;
-- opts.limit (s, default 60) bounds the whole read.
function M.stream(srv, lease, args, opts)
  opts = opts or {}
  local s = assert(socket.tcp())
  s:settimeout(10)
  assert(s:connect("127.0.0.1", srv.cp_port))
  local body = json.encode(M.body("tools/call", { name = "shell", arguments = args }, opts.id))
  local h = M.headers("tools/call", "shell", true)
  if opts.accept then h.Accept = opts.accept end
  h.Authorization = "Bearer " .. (opts.token or lease.access_token)
  h["Content-Type"] = "application/json"
  h["Content-Length"] = tostring(#body)
  local t0 = socket.gettime()
  s:send(rawhttp.head("POST", lease.mcp_url, h) .. body)
  local out = { frames = {}, raw = "" }
  out.status, out.headers = rawhttp.read_head(s)
  if not out.status then s:close(); return out end
  local chunked = (out.headers["transfer-encoding"] or ""):lower():find("chunked")
  local pending, text, deadline = "", "", t0 + (opts.limit or 60)
  s:settimeout(0.05)
  while socket.gettime() < deadline do
    local data, err, partial = s:receive(65536)
    data = data or partial
    if data and #data > 0 then
      out.raw = out.raw .. data
      local payload, done = data, false
      if chunked then payload, pending, done = dechunk(pending .. data) end
      local closed
      text, closed = frames_of(text .. payload, out.frames, socket.gettime() - t0, opts.on_frame)
      if closed then out.closed = true; break end
      if done then break end
    end
    if err == "closed" then break end
  end
  s:close()
  return out
end

-- The progress frames and the final message of a stream.
function M.split(out)
  local progress, final = {}, nil
  for _, f in ipairs(out.frames) do
    if f.msg and f.msg.method == "notifications/progress" then progress[#progress + 1] = f
    elseif f.msg then final = f end
  end
  return progress, final
end

-- Processes in this server's sandbox cgroups (run-N below
-- unsandboxd-<pid>-...): other servers on the machine share slot uids.
function M.sandbox_procs(srv)
  local p = io.popen("ls /proc")
  local names = p:read("*a")
  p:close()
  local needle, n = "/unsandboxd%-" .. srv.pid .. "%-%d+/run%-", 0
  for name in names:gmatch("%d+") do
    local cg = fs.read("/proc/" .. name .. "/cgroup") or ""
    if cg:find(needle) then n = n + 1 end
  end
  return n
end

return M
