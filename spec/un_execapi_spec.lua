-- #integration specs of the `un` subcommands for the execution API's
-- sessions, services, snapshots and images, run as a process against a
-- real unsandboxd:
-- the happy paths print ids and say what they did, bad arguments exit 64
-- with one line, API refusals exit 69.
-- One Lua: un runs under unlua (5.4); the spec runs it as a program.
local server = require "spec.helpers.unsandboxd"
local proc = require "spec.helpers.proc"
local wait = require "spec.helpers.wait"

describe("un execution subcommands #integration", function()
  local srv, env, dir

  local function un(args)
    local errfile = dir .. "/stderr"
    local out, code = proc.run("bin/un " .. args, env, errfile)
    local f = io.open(errfile)
    local err = f and f:read("*a") or ""
    if f then f:close() end
    return out, err, code
  end

  local function ok(args)
    local out, err, code = un(args)
    assert.are.equal(0, code, args .. ": " .. err)
    return out
  end

  setup(function()
    srv = server.start()
    dir = server.tmpdir("unsb-unx")
    env = { UNSANDBOX_URL = srv.url, UNSANDBOX_PUBLIC_KEY = srv.public_key,
            UNSANDBOX_SECRET_KEY = srv.secret_key, HOME = dir }
  end)
  teardown(function()
    srv.stop()
    server.rm_rf(dir)
  end)

  it("session freeze, unfreeze, boost and unboost", function()
    local sid = ok("session create --tmux"):match("%S+")    -- only such a session freezes
    assert.are.equal("froze session " .. sid .. "\n", ok("session freeze " .. sid))
    local _, err, code = un("session exec " .. sid .. " true")
    assert.are.equal(69, code)
    assert.matches("frozen", err)
    ok("session unfreeze " .. sid)
    assert.are.equal("session " .. sid .. " now runs its commands with 3 vcpu\n", ok("session boost " .. sid .. " 3"))
    assert.are.equal(3, require("cjson").decode(ok("session boost " .. sid .. " 3 --json")).result.vcpu)
    assert.are.equal("session " .. sid .. " is back to 1 vcpu\n", ok("session unboost " .. sid))
    _, err, code = un("session boost " .. sid .. " lots")
    assert.are.equal(64, code)
    assert.matches("integer", err)
    ok("session delete " .. sid)
  end)

  it("service administration and the env vault", function()
    local id = ok("service create svc1 'sleep 60'"):match("%S+")
    ok("service freeze " .. id)
    ok("service unfreeze " .. id)
    ok("service lock " .. id)
    local _, _, code = un("service delete " .. id)
    assert.are.equal(69, code)
    ok("service unlock " .. id)
    assert.are.equal("service " .. id .. " now has 2 vcpu\n", ok("service resize " .. id .. " 2"))
    assert.are.equal("updated service " .. id .. ": unfreeze_on_demand=true\n",
      ok("service update " .. id .. " unfreeze_on_demand=true"))
    assert.is_true(require("cjson").decode(ok("service get " .. id .. " --json")).unfreeze_on_demand)
    assert.are.equal(64, select(3, un("service update " .. id .. " unfreeze_on_demand=maybe")))
    assert.are.equal("service " .. id .. " domains: a.example.com, b.example.com\n",
      ok("service domains " .. id .. " add a.example.com b.example.com"))
    local f = assert(io.open(dir .. "/.env", "w"))
    f:write("K=v1\n")
    f:close()
    assert.are.equal("stored 1 variable(s) in the env vault of service " .. id .. "\n",
      ok("service env-set " .. id .. " " .. proc.quote(dir .. "/.env")))
    assert.are.equal(64, select(3, un("service env-set " .. id .. " " .. proc.quote(dir .. "/missing"))))
    assert.matches("has_vault%s+true", ok("service env " .. id))
    assert.are.equal("K=v1\n", ok("service env-export " .. id))
    ok("service env-delete " .. id)
    assert.are.equal(69, select(3, un("service env-export " .. id)))
    ok("service redeploy " .. id .. " 'echo again; sleep 60'")
    local out
    wait.eventually(function()
      out = ok("service logs " .. id .. " --all")
      return out:find("again", 1, true)
    end)
    assert.matches("again", out)
    assert.is_nil(out:find("req_", 1, true), "the request id is not part of the log")
    ok("service delete " .. id)
  end)

  it("snapshot create and clone, and the image commands", function()
    local sid = ok("session create"):match("%S+")
    ok("session exec " .. sid .. " 'echo img > i.txt'")
    local snap = ok("snapshot create session " .. sid):match("%S+")
    local clone = ok("snapshot clone " .. snap .. " session"):match("%S+")
    assert.are.equal("img\n", ok("session exec " .. clone .. " 'cat i.txt'"))
    local img = ok("image publish snapshot " .. snap .. " myimg"):match("%S+")
    assert.matches(img, ok("image list owned"), 1, true)
    assert.matches(img, ok("image"), 1, true)
    ok("image visibility " .. img .. " unlisted")
    local svc = ok("image spawn " .. img .. " fromimg"):match("%S+")
    assert.are.equal("img\n", ok("service exec " .. svc .. " 'cat i.txt'"))
    ok("image lock " .. img)
    assert.are.equal(69, select(3, un("image delete " .. img)))
    ok("image unlock " .. img)
    ok("image delete " .. img)
    local _, err, code = un("image visibility " .. img .. " everyone")
    assert.are.equal(64, code)
    assert.matches("visibility", err)
    assert.are.equal(64, select(3, un("image frobnicate x")))
    assert.are.equal(64, select(3, un("snapshot clone " .. snap .. " vm")))
    for _, cmd in ipairs { "service delete " .. svc, "session delete " .. clone, "session delete " .. sid } do
      ok(cmd)
    end
  end)
end)
