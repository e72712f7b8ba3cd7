-- unsandbox.with and unsandbox.pcall: the common-subset ways to close a
-- resource and to protect a call, for the Luas without `<close>` (5.1,
-- LuaJIT, 5.3) and for PUC 5.1's pcall, which a task cannot yield across.
-- The same specs run under every Lua (make test-all-luas).
local unsandbox = require "unsandbox"
local server = require "spec.helpers.unsandboxd"

-- a resource that records how it was closed
local function resource(log)
  return setmetatable({}, { __close = function(_, err)
    log[#log + 1] = err == nil and "closed" or "closed on error"
  end })
end

describe("unsandbox.with #unit", function()
  it("returns what fn returns and closes the resource", function()
    local log = {}
    local r = resource(log)
    local a, b, c = unsandbox.with(r, function(x, y) assert(x == r); return y, nil, 3 end, "one")
    assert.same({ "one", nil, 3 }, { a, b, c })
    assert.same({ "closed" }, log)
  end)

  it("closes on an error and raises it again, the value untouched", function()
    local log = {}
    local boom = { "an error object" }
    local ok, err = pcall(unsandbox.with, resource(log), function() error(boom) end)
    assert.is_false(ok)
    assert.are.equal(boom, err)
    assert.same({ "closed on error" }, log)
  end)

  it("uses a close method where there is no __close", function()
    local closed = 0
    unsandbox.with({ close = function() closed = closed + 1 end }, function() end)
    assert.are.equal(1, closed)
  end)

  it("closes a Client like a <close> variable: the client is closed after", function()
    local c = unsandbox.client { url = "http://127.0.0.1:9", public_key = "pk", secret_key = "sk" }
    unsandbox.with(c, function() end)
    assert.matches("%(closed%)", tostring(c))
  end)

  it("refuses what cannot be closed and what cannot be called, at the caller's line", function()
    local ok, err = pcall(unsandbox.with, 42, function() end)
    assert.is_false(ok)
    assert.matches("bad argument #1 to 'with' %(a resource with close expected, got number%)", err)
    ok, err = pcall(unsandbox.with, {}, function() end)
    assert.is_false(ok)
    assert.matches("bad argument #1 to 'with'", err)
    ok, err = pcall(unsandbox.with, resource({}), "not a function")
    assert.is_false(ok)
    assert.matches("bad argument #2 to 'with' %(function expected, got string%)", err)
    ok, err = pcall(function() local r = unsandbox.with(resource({}), nil); return r end)
    assert.is_false(ok)
    assert.matches("with_spec%.lua:%d+: bad argument #2 to 'with'", err)
  end)
end)

describe("unsandbox.pcall inside a task #integration", function()
  local srv, c

  setup(function()
    srv = server.start()
    c = unsandbox.client(srv.client_opts())
  end)
  teardown(function()
    c:close()
    srv.stop()
  end)

  it("protects calls that wait, and the tasks still run together", function()
    local tasks = {}
    for i = 1, 3 do
      tasks[i] = unsandbox.spawn(function()
        local ok, r = unsandbox.pcall(c.execute_code, c, "bash", "sleep 1; echo " .. i)
        assert(ok, r)
        local ok2, err = unsandbox.pcall(function() error("raised in task " .. i) end)
        return r.stdout, ok2, err
      end)
    end
    local t0 = unsandbox.core.monotonic_ms()
    assert(unsandbox.run(120))
    for i, t in ipairs(tasks) do
      local out, ok2, err = t:result()
      assert.are.equal(i .. "\n", out)
      assert.is_false(ok2)
      assert.matches("raised in task " .. i, err)
    end
    -- three one-second jobs took less than three seconds: they overlapped
    print(string.format("\n# three 1 s jobs, each behind unsandbox.pcall in a task: %d ms",
      unsandbox.core.monotonic_ms() - t0))
  end)
end)
