-- #unit specs of unsandbox.Transfer (the Manager's streamed calls, driven
-- from Lua) against a peer this spec plays itself on 127.0.0.1 with
-- luasocket, in the same thread: the transfer is stepped between the
-- peer's moves, so "a piece arrives before the response ends" is shown
-- move by move, with no timing. Every loop is bounded.
local socket = require "socket"

describe("unsandbox.Transfer #unit", function()
  local unsandbox, server, m

  before_each(function()
    unsandbox = require "unsandbox"
    server = assert(socket.bind("127.0.0.1", 0))
    server:settimeout(0)
    local _, port = server:getsockname()
    m = unsandbox.manager { url = "http://127.0.0.1:" .. port, token = "tok", env = {} }
  end)
  after_each(function()
    m:close()
    server:close()
  end)

  -- Steps t until cond() holds (at most 200 steps of <= 10 ms); returns
  -- the pieces seen meanwhile.
  local function step_until(t, cond)
    local seen = {}
    for _ = 1, 200 do
      local pieces, done = t:step(10)
      assert(pieces, done)
      for _, p in ipairs(pieces) do seen[#seen + 1] = p end
      if cond(seen, done) then return seen, done end
    end
    error("condition not reached")
  end

  -- Accepts the transfer's connection and reads its request head.
  local function accept(t)
    local c
    step_until(t, function()
      c = c or server:accept()
      return c ~= nil
    end)
    c:settimeout(0)
    local head = ""
    step_until(t, function()
      local data, _, partial = c:receive(4096)
      head = head .. (data or partial or "")
      return head:find("\r\n\r\n", 1, true) ~= nil
    end)
    c:settimeout(5)
    return c, head
  end

  local SSE_HEAD = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"

  it("hands over each SSE event as it arrives, and the last one at EOF", function()
    local t = assert(m:_open("POST", "/v1/sandboxes/sb-0123456789ab/mcp", "{}",
      { mode = "sse", tool = "shell", streaming = true }))
    local c, head = accept(t)
    assert.matches("\r\nAccept: text/event-stream, application/json\r\n", head, 1, true)
    assert.matches("\r\nAuthorization: Bearer tok\r\n", head, 1, true)
    c:send(SSE_HEAD .. "event: message\ndata: one\n\n")
    local seen = step_until(t, function(s) return #s == 1 end)
    assert.same({ "one" }, seen)
    c:send(": a comment\ndata: two\ndata: lines\n\n")
    assert.same({ "two\nlines" }, step_until(t, function(s) return #s == 1 end))
    c:send("data: last, no blank line")
    c:close()
    local _, done = step_until(t, function(s, d) return d and #s == 1 end)
    assert.is_true(done)
    local resp = assert(t:result())
    assert.equal(200, resp.status)
    assert.is_true(resp.streamed > 0)
    assert.equal("", resp.body)
    t:close()
    assert.equal("unsandbox.Transfer (closed)", tostring(t))
  end)

  it("buffers a non-2xx answer or a JSON answer for result()", function()
    for _, case in ipairs {
      { "HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\nContent-Length: 16\r\n\r\n{\"error\":\"busy\"}",
        409 },
      { "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"ok\":true}", 200 },
    } do
      local t = assert(m:_open("POST", "/x", "{}", { mode = "sse" }))
      local c = accept(t)
      c:send(case[1])
      local seen = step_until(t, function(_, d) return d end)
      assert.same({}, seen)
      local resp = assert(t:result())
      assert.equal(case[2], resp.status)
      assert.equal(0, resp.streamed)
      assert.matches("^{", resp.body)
      c:close()
      t:close()
    end
  end)

  it("streams raw chunks and keeps asked-for headers", function()
    local t = assert(m:_open("GET", "/v1/storage/content", nil,
      { mode = "raw", owner = true, capture = { "ETag" } }))
    local c = accept(t)
    c:send("HTTP/1.1 200 OK\r\nETag: \"e1\"\r\nContent-Length: 10\r\n\r\n01234")
    assert.equal("01234", table.concat((step_until(t, function(s) return #table.concat(s) == 5 end))))
    c:send("56789")
    assert.equal("56789", table.concat((step_until(t, function(_, d) return d end))))
    local resp = assert(t:result())
    assert.equal('"e1"', resp.headers.ETag)
    c:close()
  end)

  it("close() aborts a running transfer: the peer sees its connection closed", function()
    local t = assert(m:_open("POST", "/x", "{}", { mode = "sse" }))
    local c = accept(t)
    c:send(SSE_HEAD .. "data: 1\n\n")
    step_until(t, function(s) return #s == 1 end)
    t:close()
    local _, err = c:receive(1)
    assert.equal("closed", err)
    assert.matches("attempt to use a closed Transfer", select(2, pcall(t.step, t)))
  end)

  it("ends with the Manager: closing it closes its transfers", function()
    local t = assert(m:_open("POST", "/x", "{}", { mode = "sse" }))
    local c = accept(t)
    m:close()
    assert.matches("attempt to use a closed Transfer", select(2, pcall(t.step, t)))
    local _, err = c:receive(1)
    assert.equal("closed", err)
    t:close()   -- still fine
  end)

  it("returns interrupted when the interrupt flag is raised (Ctrl-C)", function()
    local t = assert(m:_open("POST", "/x", "{}", { mode = "sse" }))
    local c = accept(t)
    c:send(SSE_HEAD)
    require("unsandbox.core").interrupt()
    local pieces, kind = t:step(10)
    assert.is_nil(pieces)
    assert.equal("interrupted", kind)
    t:close()
    c:close()
  end)

  it("refuses bad options and fails closed before connecting", function()
    assert.has_error(function() m:_open("POST", "/x", "{}", { mode = "bytes" }) end)
    assert.has_error(function() m:_open("POST", "/x", "{}", { bogus = 1 }) end)
    local none = unsandbox.manager { url = "http://127.0.0.1:1", env = {} }
    local t, kind = none:_open("GET", "/x")
    assert.is_nil(t)
    assert.equal("credentials", kind)
    t, kind = m:_open("GET", "/v1/storage/objects")
    assert.is_nil(t)
    assert.equal("validation", kind)
    assert.is_nil(server:accept())
  end)
end)
