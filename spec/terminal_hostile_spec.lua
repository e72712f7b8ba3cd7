-- #integration specs of the terminal client against a hostile WebSocket
-- peer (spec/helpers/hostile.lua: a loopback process answering with
-- scripted bytes): what the code in a sandbox, or a broken server, could
-- send. Oversized and malformed control messages, a bad exit code, a
-- dropped connection, an abnormal close code, a wrong or missing upgrade,
-- frames a server may not send (masked, text that is not UTF-8), an
-- endless reply head, silence: each is a clear nil, Error, never a hang
-- or a crash, and the process stays usable.
local unsandbox = require "unsandbox"
local hostile = require "spec.helpers.hostile"

-- The peer: a real RFC 6455 handshake answer (Sec-WebSocket-Accept from
-- the client's key, through openssl), then frames chosen by the path.
local SCRIPT = [==[
local function accept_of(key)
  local p = io.popen("printf %s '" .. key:gsub("[^%w+/=]", "") ..
    "258EAFA5-E914-47DA-95CA-C5AB0DC85B11' | openssl sha1 -binary | base64")
  local v = p:read("*l")
  p:close()
  return v
end
local function frame(op, payload, fin)
  local n = #payload
  local b0 = (fin == false and 0 or 0x80) | op
  local head
  if n < 126 then head = string.char(b0, n)
  elseif n < 65536 then head = string.char(b0, 126) .. string.pack(">I2", n)
  else head = string.char(b0, 127) .. string.pack(">I8", n) end
  return head .. payload
end
local function upgrade(headers, accept)
  return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" ..
    "Sec-WebSocket-Accept: " .. (accept or accept_of(headers["sec-websocket-key"] or "")) .. "\r\n\r\n"
end
local CONT, TEXT, BINARY, CLOSE, PING = 0, 1, 2, 8, 9
return function(method, path, n, headers)
  local what = path:match("^/sessions/([%w_-]+)/shell$")
  if what == "hold" then return false end
  if what == "plain" then return reply(200, "{}") end
  if what == "badaccept" then return upgrade(headers, "d3JvbmcgYWNjZXB0IGtleSE=") end
  if what == "http10" then return (upgrade(headers):gsub("^HTTP/1.1", "HTTP/1.0")) end
  if what == "endless" then return "HTTP/1.1 101 Switching Protocols\r\nX-Pad: " .. string.rep("p", 20000) end
  local body = ({
    bigtext = frame(TEXT, string.rep("x", 70000)),
    badjson = frame(TEXT, "{not json"),
    badexit = frame(TEXT, '{"type":"exit","exit_code":"three"}'),
    drop = frame(BINARY, "partial"),
    close1011 = frame(CLOSE, string.pack(">I2", 1011) .. "boom"),
    future = frame(TEXT, '{"type":"bell","volume":11}') .. frame(BINARY, "out") ..
             frame(TEXT, '{"type":"exit","exit_code":0}') .. frame(CLOSE, string.pack(">I2", 1000)),
    -- a client masks, a server must not (RFC 6455 5.1)
    masked = string.char(0x82, 0x80 | 3, 1, 2, 3, 4) .. "abc",
    badutf8 = frame(TEXT, "\255\254"),
    -- a control message in two fragments, a ping between them
    pieces = frame(TEXT, '{"type":"ex', false) .. frame(PING, "p") ..
             frame(CONT, 'it","exit_code":9}') .. frame(CLOSE, string.pack(">I2", 1000)),
  })[what]
  if not body then return reply(404, '{"error":"not_found"}') end
  return upgrade(headers) .. body
end
]==]

describe("terminal against a hostile peer #integration", function()
  local peer, c

  setup(function()
    peer = hostile.start(SCRIPT)
    c = unsandbox.client { url = peer.url, public_key = "unsb-pk-test", secret_key = "s3cret" }
  end)
  teardown(function()
    if c then c:close() end
    if peer then peer.stop() end
  end)

  local function attach(name, opts)
    return c:session_attach(name, opts or { connect_timeout = 5 })
  end

  it("signs the handshake like every request", function()
    local t = assert(attach("future"))
    finally(function() t:close() end)
    local log = peer.requests()
    assert.are.equal("GET /sessions/future/shell", log[#log])
  end)

  it("refuses a control message over 64 KiB", function()
    local t = assert(attach("bigtext"))
    finally(function() t:close() end)
    local item, err = t:read(10)
    assert.is_nil(item)
    assert.are.equal("protocol", err.kind)
    assert.matches("control message over 65536", err.message)
  end)

  it("reports malformed JSON and a bad exit code as protocol errors", function()
    local t = assert(attach("badjson"))
    finally(function() t:close() end)
    local item, err = t:read(10)
    assert.is_nil(item)
    assert.are.equal("protocol", err.kind)
    assert.matches("malformed", err.message)
    local t2 = assert(attach("badexit"))
    finally(function() t2:close() end)
    item, err = t2:read(10)
    assert.is_nil(item)
    assert.matches("exit_code", err.message)
  end)

  it("gives the output before a dropped connection, then a transport error", function()
    local t = assert(attach("drop"))
    finally(function() t:close() end)
    assert.are.equal("partial", t:read(10))
    local item, err = t:read(10)
    assert.is_nil(item)
    assert.are.equal("transport", err.kind)
    assert.matches("lost", err.message)
  end)

  it("reports an abnormal close with its code", function()
    local t = assert(attach("close1011"))
    finally(function() t:close() end)
    local item, err = t:read(10)
    assert.is_nil(item)
    assert.are.equal("protocol", err.kind)
    assert.are.equal(1011, err.close_code)
    assert.matches("1011, boom", err.message)
  end)

  it("passes unknown control messages on, then exit and a clean end", function()
    local t = assert(attach("future"))
    finally(function() t:close() end)
    local ev = t:read(10)
    assert.are.same({ type = "bell", volume = 11 }, ev)
    assert.are.equal("out", t:read(10))
    assert.are.same({ type = "exit", exit_code = 0 }, t:read(10))
    assert.is_nil(t:read(10))
  end)

  it("refuses frames a server may not send: masked, text that is not UTF-8", function()
    local t = assert(attach("masked"))
    finally(function() t:close() end)
    local item, err = t:read(10)
    assert.is_nil(item)
    assert.are.equal("protocol", err.kind)
    assert.matches("masked", err.message)
    local t2 = assert(attach("badutf8"))
    finally(function() t2:close() end)
    item, err = t2:read(10)
    assert.is_nil(item)
    assert.are.equal("protocol", err.kind)
    assert.matches("UTF%-8", err.message)
  end)

  it("joins a fragmented control message, answering a ping between its pieces", function()
    local t = assert(attach("pieces"))
    finally(function() t:close() end)
    assert.are.same({ type = "exit", exit_code = 9 }, t:read(10))
    assert.is_nil(t:read(10))
  end)

  it("refuses a 101 over HTTP/1.0 and a reply head without an end", function()
    local t, err = attach("http10")
    assert.is_nil(t)
    assert.are.equal("transport", err.kind)
    assert.matches("HTTP/1.0", err.message)
    t, err = attach("endless")
    assert.is_nil(t)
    assert.are.equal("transport", err.kind)
    assert.matches("reply head over 16384 bytes", err.message)
  end)

  it("refuses a wrong Sec-WebSocket-Accept and a reply that is not an upgrade", function()
    local t, err = attach("badaccept")
    assert.is_nil(t)
    assert.are.equal("transport", err.kind)
    t, err = attach("plain")
    assert.is_nil(t)
    assert.are.equal(200, err.status)
    t, err = attach("unknown")
    assert.is_nil(t)
    assert.are.equal(404, err.status)
  end)

  it("gives up on a silent server after connect_timeout", function()
    local t0 = os.time()
    local t, err = attach("hold", { connect_timeout = 1 })
    assert.is_nil(t)
    assert.are.equal("timeout", err.kind)
    assert.is_true(os.time() - t0 < 15)
  end)
end)
