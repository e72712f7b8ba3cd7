-- #unit specs of the client's rules for replies (spec §6, §7.10, §7.11), which
-- a well-behaved server never exercises: which progress notifications
-- reach on_chunk, bad JSON skipped, the final message found by its id,
-- JSON-RPC errors with their codes, a stream with no final message, a
-- result without structuredContent, SSE in a buffered answer, ids of a
-- reply used in paths only in their spec shapes, and a
-- runtime forgotten after a 401. The Manager's leases are seeded (no
-- lease request), and a peer on 127.0.0.1 plays the MCP route: in this
-- thread for streams (it moves when the client asks is_cancelled(),
-- i.e. between the transfer's steps), in a child lua5.4 for a buffered
-- call (which blocks this thread).
local socket = require "socket"
local cjson = require "cjson"
local proc = require "spec.helpers.proc"
local wait = require "spec.helpers.wait"

local WS = { workspace_id = "ws-0123456789ab", access_token = "wt", access_token_expires_in = 900 }
local SB = { id = "sb-0123456789ab", access_token = "st", access_token_expires_in = 900, template = "default" }

describe("MCP client rules #unit", function()
  local unsandbox, server, m, port

  before_each(function()
    unsandbox = require "unsandbox"
    server = assert(socket.bind("127.0.0.1", 0))
    server:settimeout(0)
    port = select(2, server:getsockname())
    m = unsandbox.manager { url = "http://127.0.0.1:" .. port, token = "tok", session = "mcp", env = {} }
    local sid = m:session_id()
    assert(m:_ws_apply(sid, WS, m:_now()))
    assert(m:_rt_apply(sid, SB, m:_now()))
  end)
  after_each(function()
    m:close()
    server:close()
  end)

  local function frame(t) return "event: message\ndata: " .. cjson.encode(t) .. "\n\n" end
  local function progress(id, seq, channel, chunk, token)
    return frame { jsonrpc = "2.0", method = "notifications/progress", params = {
      progressToken = token or id, progress = seq, message = chunk,
      _meta = { channel = channel, sequence = seq } } }
  end
  local function final(id, result) return frame { jsonrpc = "2.0", id = id, result = result } end

  -- A peer that moves one step each time the client asks is_cancelled():
  -- accept, read the request, then write `script(id)` (a list of strings)
  -- one item per move, then close. Returns is_cancelled and a table that
  -- gets the request's head and body.
  local function scripted(script, head_status)
    local seen, c, buf, items, i = {}, nil, "", nil, 0
    return function()
      if not c then
        c = server:accept()
        if c then c:settimeout(0) end
        return false
      end
      if not items then
        local d, _, p = c:receive(65536)
        buf = buf .. (d or p or "")
        local h, b = buf:match("^(.-\r\n\r\n)(.*)$")
        local len = h and tonumber(h:match("[Cc]ontent%-[Ll]ength: (%d+)"))
        if h and len and #b >= len then
          seen.head, seen.body = h, cjson.decode(b)
          items = script(seen.body.id)
          c:settimeout(5)
          c:send(head_status or "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
        end
        return false
      end
      i = i + 1
      if items[i] then c:send(items[i]) elseif i == #items + 1 then c:close() end
      return false
    end, seen
  end

  it("hands on_chunk only the progress of its own request, in order, and returns the final result", function()
    local is_cancelled, seen = scripted(function(id)
      return {
        progress(id, 1, "stdout", "one\n"),
        progress(id, 2, "stdout", "x", "another-request"),   -- not this request's
        progress(id, 3, "stdin", "x"),                       -- no such channel
        progress(id, 0, "stdout", "x"),                      -- sequence not positive
        progress(id, 4, "stdout", ""),                       -- empty chunk
        progress(id, 5.5, "stdout", "x"),                    -- not an integer
        "event: message\ndata: {not json\n\n",               -- skipped
        progress(id, 6, "stderr", "two\n"),
        final(id, { structuredContent = { exit_code = 0, stdout = "", stream_chunks = 6 } }),
      }
    end)
    local got = {}
    local r = assert(m:shell_stream("echo", 5, function(channel, chunk, seq)
      got[#got + 1] = { channel, chunk, seq }
    end, is_cancelled))
    assert.same({ { "stdout", "one\n", 1 }, { "stderr", "two\n", 6 } }, got)
    assert.same({ 0, 6 }, { r.exit_code, r.stream_chunks })
    assert.matches("^sandbox%-client%-%d+%-%x%x%x%x%x%x$", seen.body.id)
    assert.same({ name = "shell", arguments = { action = "exec_stream", command = "echo", timeout_seconds = 5 } },
      seen.body.params)
    assert.equal("2026-07-28", seen.body._meta["io.modelcontextprotocol/protocolVersion"])
    assert.matches("\r\nAuthorization: Bearer st\r\n", seen.head, 1, true)
    assert.matches("\r\nMcp%-Name: shell\r\n", seen.head)
    assert.matches("POST /v1/sandboxes/sb%-0123456789ab/mcp HTTP/1.1", seen.head)
  end)

  it("synthesises the §6 errors of a stream", function()
    local cases = {
      { function(id) return { progress(id, 1, "stdout", "a") } end, "protocol", 502,
        "MCP SSE ended without a final response" },
      { function(id) return { final(id, { content = {} }) } end, "protocol", 502,
        "MCP response has no structuredContent" },
      { function(id) return { frame { jsonrpc = "2.0", id = id, error = { code = -32001,
        message = "all PTY sessions are busy" } } } end,
        "rpc", 502, "MCP -32001: all PTY sessions are busy" },
    }
    for i, c in ipairs(cases) do
      local is_cancelled = scripted(c[1])
      local r, err = m:shell_stream("x", 5, function() end, is_cancelled)
      assert.is_nil(r, "case " .. i)
      assert.same({ c[2], c[3], c[4] }, { err.kind, err.status, err.message }, "case " .. i)
      if c[2] == "rpc" then assert.equal(-32001, err.rpc_code) end
    end
  end)

  it("forgets the runtime after a 401, without retrying", function()
    local text = '{"error":"invalid or expired scoped access token"}'
    local is_cancelled = scripted(function() return {} end,
      "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: " .. #text ..
      "\r\n\r\n" .. text)
    local r, err = m:shell_stream("x", 5, function() end, is_cancelled)
    assert.is_nil(r)
    assert.same({ "http", 401, "invalid or expired scoped access token" }, { err.kind, err.status, err.message })
    assert.is_nil(m:status().sandbox_id)
    assert.equal("ws-0123456789ab", m:status().workspace_id, "the workspace lease stays")
  end)

  -- A child lua5.4 that answers one request on the spec's port with
  -- `head` and `body` (ID in the body becomes the request's JSON-RPC id),
  -- since a buffered call blocks this thread. Runs call() until the child
  -- listens (at most 5 s) and returns its results.
  local function one_answer(head, body, call)
    server:close()
    local child = [[
      local socket = require "socket"
      local s = assert(socket.bind("127.0.0.1", PORT))
      s:settimeout(10)
      local c = assert(s:accept())
      c:settimeout(10)
      local len
      repeat
        local line = c:receive("*l")
        len = len or tonumber(line and line:match("^[Cc]ontent%-[Ll]ength: (%d+)"))
      until not line or line == ""
      local req = len and len > 0 and c:receive(len) or ""
      local id = req:match('"id":"([^"]+)"') or ""
      local body = (BODY):gsub("ID", id)
      c:send(HEAD .. "Content-Length: " .. #body .. "\r\n\r\n" .. body)
      c:close()
    ]]
    child = child:gsub("PORT", tostring(port)):gsub("HEAD", (string.format("%q", head):gsub("%%", "%%%%")))
      :gsub("BODY", (string.format("%q", body):gsub("%%", "%%%%")))
    local log = os.tmpname()
    local p = io.popen(proc.env_prefix(proc.LUA_ENV) .. "lua5.4 -e " .. proc.quote(child) ..
      " >" .. log .. " 2>&1 &")
    local r, err
    wait.eventually(function()
      r, err = call()
      return r or err.kind ~= "transport"
    end, 10, 0.1)
    p:close()
    local f = io.open(log)
    local child_out = f and f:read("*a") or ""
    if f then f:close() end
    os.remove(log)
    return r, err, child_out
  end

  it("finds the final message in an SSE body of a buffered call", function()
    local body = "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n" ..
      "data: {\"jsonrpc\":\"2.0\",\"id\":\"ID\",\"result\":{\"structuredContent\":{\"exit_code\":3}}}\n\n"
    local r, err, out = one_answer("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n", body,
      function() return m:shell("exit 3", 5) end)
    assert.is_table(r, tostring(err) .. " " .. out)
    assert.equal(3, r.exit_code)
  end)

  it("uses no id from a reply in a path unless it has its spec shape", function()
    local r, err, out = one_answer("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n",
      '{"workspace_id":"ws-0123456789ab","sandbox_id":"../admin/keys"}',
      function() return m:lookup_runtime("other") end)
    assert.is_nil(r, out)
    assert.same({ "protocol", 502, "Control Plane response has an invalid sandbox_id" },
      { err.kind, err.status, err.message })
  end)
end)
