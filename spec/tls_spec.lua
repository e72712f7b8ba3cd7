-- #integration: TLS verification is always on. A local `openssl s_server`
-- with a self-signed certificate stands in for an HTTPS service.
local unsandbox = require "unsandbox"
local fs = require "spec.helpers.fs"
local tls = require "spec.helpers.tls_server"

describe("TLS #integration", function()
  local dir, srv, port, cert, other

  local function start_server(pem, key)
    srv = tls.start(pem, key)
    port = srv.port
  end

  local function stop_server()
    tls.stop(srv)
    srv = nil
  end

  setup(function()
    dir = fs.tmpdir("unsb-tls")
    cert = { tls.make_cert(dir, "loopback", "IP:127.0.0.1") }
    other = { tls.make_cert(dir, "elsewhere", "DNS:example.com") }
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
