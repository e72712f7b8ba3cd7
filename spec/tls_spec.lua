-- #integration: TLS verification is always on. A local `openssl s_server`
-- with a self-signed certificate stands in for an HTTPS service.
local unsandbox = require "unsandbox"
local fs = require "spec.helpers.fs"
local socket = require "socket"

local q = fs.quote

-- a free loopback port (bound, then released for s_server)
local function free_port()
  local s = assert(socket.bind("127.0.0.1", 0))
  local _, port = s:getsockname()
  s:close()
  return tonumber(port)
end

local function make_cert(dir, name, san)
  assert(os.execute(string.format(
    "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -keyout %s -out %s -subj /CN=%s " ..
    "-addext subjectAltName=%s >/dev/null 2>&1",
    q(dir .. "/" .. name .. ".key"), q(dir .. "/" .. name .. ".pem"), san:match(":(.*)"), san)))
  return dir .. "/" .. name .. ".pem", dir .. "/" .. name .. ".key"
end

describe("TLS #integration", function()
  local dir, pid, port, cert, other

  local function start_server(pem, key)
    port = free_port()
    local p = io.popen(string.format(
      "openssl s_server -accept 127.0.0.1:%d -cert %s -key %s -www -quiet </dev/null >/dev/null 2>&1 & echo $!",
      port, q(pem), q(key)))
    pid = tonumber(p:read("l"))
    p:close()
    -- bounded wait until it accepts connections
    for _ = 1, 50 do
      local c = socket.connect("127.0.0.1", port)
      if c then c:close(); return end
      socket.sleep(0.1)
    end
    error("openssl s_server did not start")
  end

  local function stop_server()
    if pid and fs.alive(pid) then os.execute("kill " .. pid) end
    pid = nil
  end

  setup(function()
    dir = fs.tmpdir("unsb-tls")
    cert = { make_cert(dir, "loopback", "IP:127.0.0.1") }
    other = { make_cert(dir, "elsewhere", "DNS:example.com") }
  end)
  teardown(function()
    stop_server()
    fs.rm_rf(dir)
  end)
  after_each(stop_server)

  local function health(opts)
    local c = unsandbox.client(opts)
    local ok, err = c:health()
    c:close()
    return ok, err
  end

  it("refuses a certificate no CA vouches for", function()
    start_server(cert[1], cert[2])
    local ok, err = health { url = "https://127.0.0.1:" .. port }
    assert.is_nil(ok)
    assert.are.equal("transport", err.kind)
    assert.matches("certificate", err.message:lower())
    assert.is_nil(err.request_id)  -- no HTTP exchange happened, so none is invented
  end)

  it("accepts it with ca_file, and then speaks HTTP over it", function()
    start_server(cert[1], cert[2])
    local ok, err = health { url = "https://127.0.0.1:" .. port, ca_file = cert[1] }
    -- s_server -www answers an HTML page: the TLS part worked, the body is no JSON
    assert.is_nil(ok)
    assert.are.equal("protocol", err.kind)
  end)

  it("checks the host name even when the CA is trusted", function()
    start_server(other[1], other[2])
    local ok, err = health { url = "https://127.0.0.1:" .. port, ca_file = other[1] }
    assert.is_nil(ok)
    assert.are.equal("transport", err.kind)
    assert.matches("127.0.0.1", err.message)
  end)

  it("a missing ca_file is a transport error naming the problem", function()
    start_server(cert[1], cert[2])
    local ok, err = health { url = "https://127.0.0.1:" .. port, ca_file = dir .. "/missing.pem" }
    assert.is_nil(ok)
    assert.are.equal("transport", err.kind)
  end)
end)
