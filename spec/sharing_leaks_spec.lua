-- #integration specs of what one party can learn about the others or
-- about the host through a shared unsandboxd, played through the two
-- APIs only: whether a key exists, and where the server's files live.
local unsandbox = require "unsandbox"
local server = require "spec.helpers.unsandboxd"
local mcp = require "spec.helpers.mcp"

local function realpath(p)
  local h = assert(io.popen("realpath " .. server.sh_quote(p)))
  local out = h:read("*l")
  h:close()
  return assert(out, "realpath " .. p)
end

describe("sharing one machine: nothing leaks #integration", function()
  local srv, c, pk2, c2

  setup(function()
    srv = server.start {}
    c = unsandbox.client(srv.client_opts())
    local sk2
    pk2, sk2 = server.add_key(srv)
    c2 = unsandbox.client { url = srv.url, public_key = pk2, secret_key = sk2 }
  end)
  teardown(function()
    if c then c:close() end
    if c2 then c2:close() end
    if srv then srv.stop() end
  end)

  it("an image transfer answers alike for a registered key and one nobody holds", function()
    local unknown = "unsb-pk-0000-0000-0000-0000"
    -- on an image the caller does not own: the same 404 whatever the key
    local answers = {}
    for _, to in ipairs { srv.public_key, unknown } do
      local r, err = c2:transfer_image("unsb-image-nothing", to)
      assert.is_nil(r)
      answers[#answers + 1] = err.status .. " " .. err.message
    end
    assert.are.equal(answers[1], answers[2])
    assert.matches("^404 ", answers[1])
    -- on its own image: a key of the right shape is taken, held or not
    local svc = assert(c:create_service { name = "leaksrc", bootstrap_content = "sleep 60" })
    local img1 = assert(c:publish_image { source_type = "service", source_id = svc.id, name = "a" })
    local img2 = assert(c:publish_image { source_type = "service", source_id = svc.id, name = "b" })
    local t1 = assert(c:transfer_image(img1.id, pk2))
    local t2 = assert(c:transfer_image(img2.id, unknown))
    assert.are.equal("transferred", t1.status)
    assert.are.equal("transferred", t2.status)
    assert.are.equal(unknown, t2.owner_api_key)
    assert(c2:delete_image(img1.id))
    local r, err = c:delete_image(img2.id)           -- given away: no longer the caller's
    assert.is_nil(r)
    assert.are.equal(404, err.status)
    -- a malformed key is refused for its shape alone
    assert.has_error(function() c:transfer_image(img1.id, "not a key!") end)
    assert(c:delete_service(svc.id))
  end)

  it("no sandbox sees a host path of the server's files in its mount table", function()
    local hosts = { realpath(server.bin):match("^(.*)/[^/]+$"), realpath(srv.data), realpath(".") }
    local function clean(what, mounts)
      for _, host in ipairs(hosts) do
        assert.is_falsy(mounts:find(host, 1, true), what .. ": " .. host .. " in:\n" .. mounts)
      end
    end
    local _, sb = mcp.sandbox(srv, "leaks")
    local mounts = mcp.sh(srv, sb, "cat /proc/self/mountinfo")
    assert.is_truthy(mounts:find(" /unsandboxd-agent ", 1, true), mounts)
    clean("a Control Plane runtime", mounts)
    clean("an execute run", assert(c:execute_code("bash", "cat /proc/self/mountinfo")).stdout)
    local s = assert(c:create_session())
    clean("a session", assert(c:session_execute(s.id, "cat /proc/self/mountinfo")).stdout)
    assert(c:delete_session(s.id))
  end)
end)

describe("sharing one machine: the audit log is bounded #integration", function()
  local cp = require "spec.helpers.cp"
  local srv

  setup(function() srv = server.start { args = { "--cp-audit-rows", "20" } } end)
  teardown(function() if srv then srv.stop() end end)

  it("keeps its newest rows while a tenant probes a hundred foreign workspaces", function()
    local key = cp.tenant_key(srv, "prober")
    for i = 1, 100 do   -- every denial a distinct target: none is de-duplicated
      local st = cp.request(srv, "DELETE", string.format("/v1/workspaces/ws-%012x", i), { token = key })
      assert.are.equal(404, st)
    end
    local _, audit = cp.request(srv, "GET", "/v1/admin/audit?limit=1000", { token = srv.token })
    assert.are.equal(20, #audit.events)
    assert.are.equal(string.format("ws-%012x", 100), audit.events[1].target)
    assert.are.equal(string.format("ws-%012x", 81), audit.events[20].target)
  end)
end)
