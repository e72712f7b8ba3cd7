-- #integration: a terminal over wss verifies the certificate and the host
-- name, always, as the HTTP client does (tls_spec.lua); ca_file replaces
-- the system store. A local `openssl s_server -www` with self-signed
-- certificates stands in for the service: once TLS is accepted it answers
-- the upgrade with its HTTP 200 status page, so "HTTP 200" proves the TLS
-- part passed and a transport error without a status proves it did not.
local unsandbox = require "unsandbox"
local fs = require "spec.helpers.fs"
local tls = require "spec.helpers.tls_server"

describe("terminal over wss #integration", function()
  local dir, srv, port, loopback, elsewhere

  local function start_server(pem, key)
    srv = tls.start(pem, key)
    port = srv.port
  end

  local function attach(ca_file)
    local c = unsandbox.client { url = "https://127.0.0.1:" .. port, public_key = "pk",
                                 secret_key = "sk", ca_file = ca_file }
    -- the Terminal copies what it needs: the client may close at once
    return unsandbox.with(c, c.session_attach, "s1", { connect_timeout = 10 })
  end

  setup(function()
    dir = fs.tmpdir("unsb-wss")
    loopback = { tls.make_cert(dir, "loopback", "IP:127.0.0.1") }
    elsewhere = { tls.make_cert(dir, "elsewhere", "DNS:example.com") }
  end)
  teardown(function() fs.rm_rf(dir) end)
  after_each(function()
    tls.stop(srv)
    srv = nil
  end)

  it("refuses a self-signed certificate the system store does not trust", function()
    start_server(loopback[1], loopback[2])
    local t, err = attach(nil)
    assert.is_nil(t)
    assert.are.equal("transport", err.kind)
    assert.is_nil(err.status)
    assert.matches("TLS", err.message)
  end)

  it("trusts it through ca_file, and then speaks HTTP over TLS", function()
    start_server(loopback[1], loopback[2])
    local t, err = attach(loopback[1])
    assert.is_nil(t)
    assert.are.equal(200, err.status)   -- the TLS part was accepted
  end)

  it("refuses a trusted certificate for another host name", function()
    start_server(elsewhere[1], elsewhere[2])
    local t, err = attach(elsewhere[1])
    assert.is_nil(t)
    assert.are.equal("transport", err.kind)
    assert.is_nil(err.status)
  end)

  it("says so when ca_file cannot be read", function()
    start_server(loopback[1], loopback[2])
    local t, err = attach(dir .. "/missing.pem")
    assert.is_nil(t)
    assert.matches("ca_file", err.message)
  end)
end)
