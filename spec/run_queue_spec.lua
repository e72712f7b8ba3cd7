-- #integration specs of the run queue (docs/internals.md, "The run
-- queue"): with one start slot, six client processes of two keys, each
-- running three jobs at once with the others, all get their own results;
-- bad --starts values are refused (the queue's metrics: metrics_spec.lua).
-- The order the queue chooses in is proven by the unit test of
-- ux_share_pick (csrc/tests/server_share_test.c). No timing is asserted;
-- each client process is bounded by `timeout`.
local server = require "spec.helpers.unsandboxd"
local proc = require "spec.helpers.proc"

local CLIENTS, JOBS = 6, 3

describe("the run queue #integration", function()
  local srv

  setup(function()
    srv = server.start { args = { "--starts", "1", "--workers", "3" } }
  end)
  teardown(function()
    if srv then srv.stop() end
  end)

  it("k client processes of two keys at once all get their own results", function()
    local pk, sk = server.add_key(srv)
    local keys = { { srv.public_key, srv.secret_key }, { pk, sk } }
    local cmds = {}
    for i = 1, CLIENTS do
      local key = keys[i % 2 + 1]
      local script = string.format([[
        local u = require "unsandbox"
        local c = u.client{url=%q, public_key=%q, secret_key=%q}
        for j = 1, %d do
          local r = assert(c:execute_code("bash", "echo client-%d-" .. (%d * 10 + j)))
          io.write(r.stdout)
        end]], srv.url, key[1], key[2], JOBS, i, i)
      cmds[i] = proc.env_prefix(proc.LUA_ENV) .. "timeout 60 lua5.4 -e " .. server.sh_quote(script) .. " > "
        .. server.sh_quote(srv.data .. "/client-" .. i .. ".out") .. " 2>&1 </dev/null & pids=\"$pids $!\";"
    end
    local p = assert(io.popen("pids=; " .. table.concat(cmds, " ")
      .. " fail=0; for j in $pids; do wait $j || fail=1; done; echo fail=$fail"))
    local status = p:read("a")
    p:close()
    local outs = {}
    for i = 1, CLIENTS do
      local f = assert(io.open(srv.data .. "/client-" .. i .. ".out"))
      outs[i] = f:read("a")
      f:close()
    end
    assert.matches("fail=0", status, 1, true)
    for i = 1, CLIENTS do
      local want = {}
      for j = 1, JOBS do want[j] = string.format("client-%d-%d", i, i * 10 + j) end
      assert.are.equal(table.concat(want, "\n") .. "\n", outs[i])
    end
  end)

  it("refuses bad --starts values with exit 2, naming the flag", function()
    for _, args in ipairs { "--starts 0", "--starts x", "--starts -3", "--starts 257", "--starts" } do
      local out, rc = server.run(args)
      assert.are.equal(2, rc, out)
      assert.matches("--starts", out, 1, true)
    end
  end)
end)
