-- #integration specs of the execution API routes beyond execute, through
-- the Lua client against a real unsandboxd: session power, service
-- administration, the env vault, POST /snapshots and clone, images. Bad
-- input (misuse raising at the caller's line; unknown ids, locked
-- resources, an oversized vault, 428 challenges as nil, err) included.
local unsandbox = require "unsandbox"
local server = require "spec.helpers.unsandboxd"
local wait = require "spec.helpers.wait"
local lua = require "spec.helpers.lua"

local TICKER = "while true; do echo tick; sleep 0.2; done"

describe("execution API routes #integration", function()
  local srv, c, c2, pk2

  local function arm(fault) return assert(c:call("POST", "/_faults", fault)) end

  setup(function()
    srv = server.start { args = { "--enable-faults" } }
    c = unsandbox.client(srv.client_opts())
    local p = assert(io.popen(server.sh_quote(server.bin) .. " keys add --data " .. server.sh_quote(srv.data)))
    local out = p:read("*a")
    p:close()
    pk2 = out:match("UNSANDBOX_PUBLIC_KEY=(%S+)")
    c2 = unsandbox.client { url = srv.url, public_key = pk2, secret_key = out:match("UNSANDBOX_SECRET_KEY=(%S+)") }
  end)
  teardown(function()
    if c then c:close() end
    if c2 then c2:close() end
    if srv then srv.stop() end
  end)
  after_each(function() if c then c:call("POST", "/_faults", { mode = "off" }) end end)

  describe("session power", function()
    it("freezes, refuses commands while frozen, unfreezes, boosts and unboosts", function()
      local s = assert(c:create_session { multiplexer = "tmux" })   -- only such a session freezes
      assert.equal("frozen", assert(c:freeze_session(s.id)).status)
      local r, err = c:session_execute(s.id, "true")
      assert.is_nil(r)
      assert.equal(409, err.status)
      assert.equal("running", assert(c:unfreeze_session(s.id)).status)
      assert.equal("ok\n", assert(c:session_execute(s.id, "echo ok")).stdout)
      assert.equal(2, assert(c:boost_session(s.id)).vcpu)
      assert.equal(4, assert(c:boost_session(s.id, 4)).vcpu)
      assert.equal(1, assert(c:unboost_session(s.id)).vcpu)
      assert(c:delete_session(s.id))
    end)

    it("answers unknown sessions with 404 and raises on misuse", function()
      local r, err = c:freeze_session("unsb-session-none")
      assert.is_nil(r)
      assert.equal(404, err.status)
      assert.has_error(function() c:boost_session("x", 9) end,
        "bad argument 'vcpu' to 'boost_session' (must be between 1 and 8, got 9)")
      assert.has_error(function() c:freeze_session("../x") end)
      assert.has_error(function() c:boost_session(nil) end)
    end)
  end)

  describe("service administration", function()
    local svc
    setup(function()
      svc = assert(c:create_service { name = "admin", bootstrap_content = TICKER })
    end)
    teardown(function() c:delete_service(svc.id) end)

    it("freezes and unfreezes; execute is 409 while frozen", function()
      assert.equal("frozen", assert(c:freeze_service(svc.id)).state)
      local r, err = c:service_execute(svc.id, "true")
      assert.is_nil(r)
      assert.equal(409, err.status)
      assert.equal("running", assert(c:unfreeze_service(svc.id)).state)
      assert.equal("x\n", assert(c:service_execute(svc.id, "echo x")).stdout)
    end)

    it("locks against deletion, unlocks through a sudo challenge", function()
      assert.is_true(assert(c:lock_service(svc.id)).locked)
      local ok, err = c:delete_service(svc.id)
      assert.is_nil(ok)
      assert.equal(409, err.status)
      arm { mode = "sudo", otp = "123456", count = 1, path = "/services/" }
      local asked
      local doc = assert(c:unlock_service(svc.id,
        { on_sudo = function(e) asked = e.challenge_id; return "123456" end }))
      assert.is_string(asked)
      assert.is_false(doc.locked)
    end)

    it("updates vcpu and flags, resizes, and refuses bad values", function()
      local d = assert(c:update_service(svc.id, { vcpu = 3, unfreeze_on_demand = true, show_freeze_page = true }))
      assert.equal(3, d.vcpu)
      assert.is_true(d.unfreeze_on_demand)
      assert.is_true(d.show_freeze_page)
      assert.equal(2, assert(c:resize_service(svc.id, 2)).vcpu)
      assert.has_error(function() c:update_service(svc.id, {}) end)
      assert.has_error(function() c:update_service(svc.id, { vcpu = 9 }) end)
      assert.has_error(function() c:update_service(svc.id, { colour = "red" }) end)
      assert.has_error(function() c:resize_service(svc.id, "2") end)
      local r, err = c:update_service("unsb-service-none", { vcpu = 2 })
      assert.is_nil(r)
      assert.equal(404, err.status)
    end)

    it("adds, removes and replaces domains", function()
      assert.same({ "a.example.com" }, assert(c:set_service_domains(svc.id, { add = { "a.example.com" } })).domains)
      assert.same({}, assert(c:set_service_domains(svc.id, { remove = { "a.example.com" } })).domains)
      assert.same({ "b.example.com" }, assert(c:set_service_domains(svc.id, { replace = { "b.example.com" } })).domains)
      local r, err = c:set_service_domains(svc.id, { add = { "bad name" } })
      assert.is_nil(r)
      assert.equal(400, err.status)
      assert.has_error(function() c:set_service_domains(svc.id, { add = { "a" }, remove = { "b" } }) end)
      assert.has_error(function() c:set_service_domains(svc.id, { add = "a" }) end)
    end)

    it("keeps an env vault the service's runs see, and refuses an oversized one", function()
      assert.is_false(assert(c:get_service_env(svc.id)).has_vault)
      assert.equal(2, assert(c:set_service_env(svc.id, { TOKEN = "t0k", N = 7 })).count)
      local meta = assert(c:get_service_env(svc.id))
      assert.is_true(meta.has_vault)
      assert.equal(2, meta.count)
      assert.equal("N=7\nTOKEN=t0k\n", assert(c:export_service_env(svc.id)))
      assert.equal("t0k-7\n", assert(c:service_execute(svc.id, 'echo "$TOKEN-$N"')).stdout)
      local r, err = c:set_service_env(svc.id, "A=" .. string.rep("x", 70000))
      assert.is_nil(r)
      assert.equal(413, err.status)
      r, err = c:set_service_env(svc.id, "no equals sign")
      assert.is_nil(r)
      assert.equal(400, err.status)
      assert.has_error(function() c:set_service_env(svc.id, { A = "x\ny" }) end)
      assert.has_error(function() c:set_service_env(svc.id, 42) end)
      assert(c:delete_service_env(svc.id))
      r, err = c:export_service_env(svc.id)
      assert.is_nil(r)
      assert.equal(404, err.status)
    end)

    it("redeploys with a new bootstrap and reads all logs", function()
      assert(c:redeploy_service(svc.id, { bootstrap_content = "echo second-life; sleep 60",
                                          input_files = { { filename = "x.txt", content = "X" } } }))
      local log
      wait.eventually(function()
        log = assert(c:service_logs(svc.id, { all = true }))
        return log:find("second-life", 1, true)
      end)
      assert.truthy(log:find("second-life", 1, true), log)
      assert.equal("X", assert(c:service_execute(svc.id, "cat x.txt")).stdout)
      assert.has_error(function() c:service_logs(svc.id, { all = "yes" }) end)
      assert.has_error(function() c:redeploy_service(svc.id, { script = "x" }) end)
    end)
  end)

  describe("snapshots", function()
    it("creates with POST /snapshots and clones to a session and a service", function()
      local s = assert(c:create_session())
      assert(c:session_execute(s.id, "echo kept > k.txt"))
      local snap = assert(c:create_snapshot { source_type = "session", source_id = s.id, name = "k" })
      local s2 = assert(c:clone_snapshot(snap.id, { type = "session" }))
      assert.equal("kept\n", assert(c:session_execute(s2.id, "cat k.txt")).stdout)
      local svc = assert(c:clone_snapshot(snap.id, { type = "service", name = "from-snap", ports = { 8080 } }))
      assert.same({ 8080 }, svc.ports)
      assert.equal("kept\n", assert(c:service_execute(svc.id, "cat k.txt")).stdout)
      local r, err = c:clone_snapshot("unsb-snapshot-none", { type = "session" })
      assert.is_nil(r)
      assert.equal(404, err.status)
      assert.has_error(function() c:clone_snapshot(snap.id, { type = "vm" }) end)
      assert.has_error(function() c:clone_snapshot(snap.id, {}) end)
      assert.has_error(function() c:create_snapshot { source_type = "session" } end)
      r, err = c:create_snapshot { source_type = "service", source_id = "unsb-service-none" }
      assert.is_nil(r)
      assert.equal(404, err.status)
      for _, id in ipairs { s.id, s2.id } do assert(c:delete_session(id)) end
      assert(c:delete_service(svc.id))
    end)
  end)

  describe("images", function()
    it("publishes, lists, shares, spawns, clones, transfers and deletes", function()
      local svc = assert(c:create_service { name = "imgsrc", bootstrap_content = "echo hi > hi.txt; sleep 60" })
      assert(c:service_execute(svc.id, "echo from-image > f.txt"))
      local img = assert(c:publish_image { source_type = "service", source_id = svc.id, name = "i1" })
      assert.equal("private", img.visibility)
      local function has(list, id)
        for _, i in ipairs(list) do if i.id == id then return true end end
        return false
      end
      assert.is_true(has(assert(c:list_images()), img.id))
      assert.is_true(has(assert(c:list_images("owned")), img.id))
      assert.is_false(has(assert(c:list_images("public")), img.id))
      local r, err = c2:get_image(img.id)
      assert.is_nil(r)
      assert.equal(404, err.status)
      assert(c:grant_image_access(img.id, pk2))
      local trusted = assert(c:image_trusted(img.id))
      assert.same({ pk2 }, { lua.unpack(trusted) })   -- the items (a list carries timing too)
      assert.equal(1, trusted.timing.exchanges)
      assert.is_true(has(assert(c2:list_images("shared")), img.id))
      local spawned = assert(c2:spawn_image(img.id, { name = "spawned", ports = { 80 } }))
      assert.equal("from-image\n", assert(c2:service_execute(spawned.id, "cat f.txt")).stdout)
      local copy = assert(c2:clone_image(img.id, { name = "mine" }))
      assert.equal(pk2, copy.owner_api_key)
      assert(c:revoke_image_access(img.id, pk2))
      assert.equal("public", assert(c:set_image_visibility(img.id, "public")).visibility)
      assert.has_error(function() c:set_image_visibility(img.id, "everyone") end)
      assert.has_error(function() c:list_images("mine") end)
      assert.has_error(function() c:grant_image_access(img.id, "bad key!") end)
      assert(c:lock_image(img.id))
      r, err = c:delete_image(img.id)
      assert.is_nil(r)
      assert.equal(409, err.status)
      assert(c:unlock_image(img.id))
      assert(c:transfer_image(img.id, pk2))
      r, err = c:delete_image(img.id)
      assert.is_nil(r)
      assert.equal(404, err.status)
      arm { mode = "sudo", otp = "999", count = 1, path = "/images/" }
      r, err = c:delete_image(copy.id)
      assert.is_nil(r)
      assert.equal(428, err.status)
      assert.is_string(err.challenge_id)
      c:call("POST", "/_faults", { mode = "off" })
      assert(c2:delete_image(img.id))
      assert(c2:delete_image(copy.id))
      assert(c2:delete_service(spawned.id))
      assert(c:delete_service(svc.id))
    end)
  end)

  it("a restart keeps the env vault and thaws frozen services", function()
    local s1 = server.start()
    local data = s1.data
    local k = unsandbox.client(s1.client_opts())
    local svc = assert(k:create_service { name = "persist", bootstrap_content = "sleep 600" })
    assert(k:set_service_env(svc.id, "KEEP=me\n"))
    assert(k:freeze_service(svc.id))
    k:close()
    s1.stop(true)
    local s2 = server.start { data = data }
    k = unsandbox.client(s2.client_opts())
    assert.equal("running", assert(k:get_service(svc.id)).state)
    assert.equal("KEEP=me\n", assert(k:export_service_env(svc.id)))
    assert.equal("me\n", assert(k:service_execute(svc.id, "echo $KEEP")).stdout)
    assert(k:delete_service(svc.id))
    k:close()
    s2.stop()
    server.rm_rf(data)
    os.remove(s1.log)
  end)

  it("the module functions exist for every new route", function()
    for _, name in ipairs { "freeze_session", "unfreeze_session", "boost_session", "unboost_session",
      "freeze_service", "unfreeze_service", "lock_service", "unlock_service", "update_service",
      "resize_service", "set_service_domains", "redeploy_service", "get_service_env", "set_service_env",
      "export_service_env", "delete_service_env", "create_snapshot", "clone_snapshot", "publish_image",
      "list_images", "get_image", "delete_image", "lock_image", "unlock_image", "set_image_visibility",
      "grant_image_access", "revoke_image_access", "image_trusted", "transfer_image", "spawn_image",
      "clone_image" } do
      assert.is_function(unsandbox[name], name)
    end
  end)
end)
