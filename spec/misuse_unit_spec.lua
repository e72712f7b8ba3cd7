-- #unit specs of the one misuse path: whatever check refuses a value (the
-- facade's own, or a rule of the C core that the facade calls through a
-- returning form), the error is raised at the caller's line, never at a
-- line inside lua/unsandbox/, in one format: "bad argument 'name' to
-- 'fname' (why)" or, for a positional argument, "bad argument #n to
-- 'fname' (why)". No server: every call here fails before anything is sent.
local unsandbox = require "unsandbox"

local THIS = "misuse_unit_spec%.lua:%d+: "

-- (never tail calls: a tail call leaves no frame of the caller to point at)
local function raised(fn)
  local ok, msg = pcall(fn)
  assert.is_false(ok, "expected an error")
  msg = tostring(msg)
  assert.not_matches("unsandbox/[%w_/]+%.lua:%d+:", msg)
  return msg
end

describe("misuse #unit", function()
  local c, m
  before_each(function()
    c = unsandbox.client { url = "http://127.0.0.1:9", public_key = "p", secret_key = "s" }
    m = unsandbox.manager { url = "http://127.0.0.1:9", token = "t", env = {} }
  end)
  after_each(function() c:close(); m:close() end)

  it("a query the core cannot encode is the caller's", function()
    local msg = raised(function() local r = m:call("GET", "/x", { query = { a = {} } }); return r end)
    assert.matches(THIS .. "bad argument 'query' to 'call' %(query%.a: string, integer or boolean expected", msg)
    msg = raised(function() local r = m:call("GET", "/x", { query = { a = 1.5 } }); return r end)
    assert.matches(THIS .. "bad argument 'query' to 'call' %(query%.a: an integer expected", msg)
  end)

  it("headers that are not a table are the caller's", function()
    local msg = raised(function() local r = c:call("GET", "/x", nil, { headers = "X-A: 1" }); return r end)
    assert.matches(THIS .. "bad argument 'headers' to 'call' %(table expected, got string%)", msg)
  end)

  it("a path the Control Plane client refuses is the caller's, by position", function()
    local msg = raised(function() local r = m:call("GET", "no-slash"); return r end)
    assert.matches(THIS .. "bad argument #2 to 'call' %(path must start with '/'", msg)
    msg = raised(function() local r = m:call("GET", "/a b"); return r end)
    assert.matches(THIS .. "bad argument #2 to 'call' %(path must be printable ASCII", msg)
  end)

  it("a variable of the environment the core refuses is raised by itself", function()
    local msg = raised(function()
      local x = unsandbox.manager { env = { SANDBOX_CONTROL_PLANE_URL = "gopher://x" } }; return x
    end)
    assert.matches(THIS .. "SANDBOX_CONTROL_PLANE_URL: url must start with http", msg)
  end)

  it("the scheduler's misuse has the same format", function()
    assert.matches(THIS .. "bad argument #1 to 'spawn' %(function expected, got number%)",
      raised(function() local t = unsandbox.spawn(42); return t end))
    assert.matches(THIS .. "bad argument #1 to 'step' %(timeout_ms: a number >= 0 expected%)",
      raised(function() local n = unsandbox.step(-1); return n end))
    assert.matches(THIS .. "bad argument #1 to 'completed' %(table of tasks expected",
      raised(function() local it = unsandbox.completed(7); return it end))
  end)

  it("a Sandbox name is checked by the core's rule", function()
    assert.matches(THIS .. "bad argument 'name' to 'create' %(must not be blank%)",
      raised(function() local s = unsandbox.Sandbox.create { name = "\t ", manager = m }; return s end))
    assert.matches(THIS .. "bad argument 'name' to 'create' %(must be valid UTF%-8%)",
      raised(function() local s = unsandbox.Sandbox.create { name = "b\255x", manager = m }; return s end))
  end)
end)
