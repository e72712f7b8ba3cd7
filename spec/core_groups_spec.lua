-- #unit specs of how unsandbox.core is laid out: every function and
-- constant in one group by concern, and each group's returning forms,
-- which give nil, reason, arg for a refused value where the flat function
-- raises it (the facade raises those at its own caller's line). Which
-- argument it was comes from the core, not from the message. No server.
local core = require "unsandbox.core"

local GROUPS = { "exec", "cp", "trace", "rules", "files", "codec", "loop", "term" }

local function raised(f, ...)
  local ok, err = pcall(f, ...)
  assert(not ok, "expected an error")
  return tostring(err)
end

describe("unsandbox.core groups #unit", function()
  it("hold every name of the module exactly once", function()
    local seen = {}
    for _, g in ipairs(GROUPS) do
      assert.is_table(core[g], g)
      for name in pairs(core[g]) do
        assert.is_nil(seen[name], name .. " is in " .. tostring(seen[name]) .. " and " .. g)
        seen[name] = g
        assert.is_not_nil(core[name], g .. "." .. name .. " has no flat name")
      end
    end
    local is_group = {}
    for _, g in ipairs(GROUPS) do is_group[g] = true end
    for name in pairs(core) do
      if not is_group[name] and name ~= "VERSION" then assert.is_string(seen[name], name .. " is in no group") end
    end
  end)

  it("share the functions that refuse no value with the flat names", function()
    assert.equal(core.sign, core.exec.sign)
    assert.equal(core.monotonic_ms, core.loop.monotonic_ms)
    assert.equal(core.Manager, core.cp.Manager)
    assert.equal(core.valid_id, core.rules.valid_id)
  end)

  describe("returning forms", function()
    local salt = string.rep("s", 32)

    it("give the value as the flat form does", function()
      assert.equal(core.acting_subject(salt, "t", "s"), core.cp.acting_subject(salt, "t", "s"))
      assert.equal("src/a.lua", core.cp.workspace_path("/workspace/src/a.lua"))
      assert.equal("a=1&b=x", core.cp.form_encode { b = "x", a = 1 })
      assert.equal("'a b' c", core.cp.shell_quote { "a b", "c" })
      assert.matches("^00%-" .. string.rep("a", 32), core.trace.new_traceparent(string.rep("a", 32)))
    end)

    it("return the reason and the argument the core names", function()
      local function refused(want_arg, pattern, ...)
        local n = select("#", ...)
        local v, why, arg = ...
        assert.equal(3, n)
        assert.is_nil(v)
        assert.matches(pattern, why)
        assert.equal(want_arg, arg)
      end
      refused(1, "salt must be at least 32 bytes", core.cp.acting_subject("short", "t", "s"))
      refused(2, "tenant must not be empty", core.cp.acting_subject(salt, "", "s"))
      refused(3, "subject must be valid UTF%-8", core.cp.acting_subject(salt, "t", "\255"))
      refused(1, "session key must not be empty", core.cp.session_id(""))
      refused(1, "outside /workspace", core.cp.workspace_path("/etc/passwd"))
      refused(1, "NUL", core.cp.shell_quote { "a\0b" })
      refused(2, "longer than 3", core.cp.shell_quote({ "abcdef" }, 3))
      refused(1, "query%.a: an integer expected", core.cp.form_encode { a = 1.5 })
      refused(2, "longer than 2", core.cp.form_encode({ a = "bcd" }, 2))
      refused(1, "trace id must be 32 lowercase hex", core.trace.new_traceparent("xyz"))
      refused(2, "trace flags must be 2 lowercase hex", core.trace.new_traceparent(nil, "1"))
      refused(1, "url must start with http", core.exec.client { url = "ftp://x", home = false, env = {} })
      refused(1, "url: url must start with http", core.cp.manager { url = "ftp://x", env = {} })
      refused("env", "^SANDBOX_CONTROL_PLANE_URL: url must start with http",
        core.cp.manager { env = { SANDBOX_CONTROL_PLANE_URL = "gopher://x" } })
      refused("env", "^SANDBOX_LIFECYCLE_REFRESH_SECONDS: an integer",
        core.cp.manager { env = { SANDBOX_LIFECYCLE_REFRESH_SECONDS = "soon" } })
      refused(1, "^refresh: at most", core.cp.manager { refresh = 100000, env = {} })
      local m = core.manager { env = {} }
      refused(2, "name: must not be blank", core.cp.sandbox(m, " \t"))
      refused(2, "name: at most 128 bytes", core.cp.sandbox(m, string.rep("n", 129)))
      m:close()
    end)

    it("still raise a wrong type, as the flat forms do", function()
      assert.matches("salt: string expected, got number", raised(core.cp.acting_subject, 1, "t", "s"))
      assert.matches("argv: table expected", raised(core.cp.shell_quote, "ls"))
    end)

    it("leave the flat forms raising with lauxlib's message", function()
      assert.matches("bad argument #2 to 'acting_subject' %(tenant must not be empty%)",
        -- (no tail call: LuaJIT and 5.1 name no function a tail call reached)
        raised(function() local s = core.acting_subject(salt, "", "s"); return s end))
      assert.matches("^SANDBOX_CONTROL_PLANE_URL: url must start with http",
        raised(core.manager, { env = { SANDBOX_CONTROL_PLANE_URL = "gopher://x" } }))
    end)
  end)

  describe("a Client's _request", function()
    it("returns a refused method, path or header as validation naming its argument", function()
      local c = core.client { url = "http://127.0.0.1:9", public_key = "p", secret_key = "s", env = {} }
      local function refused(want_arg, pattern, ...)
        local r, kind, msg, info = ...
        assert.is_nil(r)
        assert.equal("validation", kind)
        assert.matches(pattern, msg)
        assert.equal(want_arg, info.arg)
      end
      refused(1, "upper%-case letters", c:_request("get", "/x"))
      refused(2, "must start with '/'", c:_request("GET", "x"))
      refused(4, "value of X%-A must be a string", c:_request("GET", "/x", nil, { headers = { ["X-A"] = {} } }))
      refused(4, "X%-Signature is set by the client", c:_request("GET", "/x", nil,
        { headers = { ["X-Signature"] = "1" } }))
      assert.matches("upper%-case letters", raised(c.request, c, "get", "/x"))
      c:close()
    end)
  end)

  describe("rules exported once", function()
    it("id shapes, templates, names, URLs and blanks are the core's", function()
      assert.is_true(core.cp.valid_workspace_id("ws-0123456789ab"))
      assert.is_false(core.cp.valid_workspace_id("ws-0123456789AB"))
      assert.is_false(core.cp.valid_sandbox_id("sb-abc"))
      assert.is_true(core.cp.valid_sandbox_id("sb-0123456789ab"))
      assert.is_true(core.cp.valid_template("python-3"))
      assert.is_false(core.cp.valid_template("-x"))
      assert.is_false(core.cp.valid_template(string.rep("a", 33)))
      assert.is_true(core.cp.valid_checkpoint_id(string.rep("a", 63)))
      assert.is_false(core.cp.valid_checkpoint_id(string.rep("a", 64)))
      assert.is_nil(core.cp.sandbox_name_check("box"))
      assert.equal("must not be blank", core.cp.sandbox_name_check(" \n"))
      assert.equal("must be valid UTF-8", core.cp.sandbox_name_check("b\255x"))
      assert.is_nil(core.rules.url_check("https://api.unsandbox.com"))
      assert.matches("query or fragment", core.rules.url_check("http://x/?a=1"))
      assert.is_true(core.rules.blank(" \t\r\n\v\f"))
      assert.is_true(core.rules.blank(""))
      assert.is_false(core.rules.blank(" x "))
      assert.is_number(core.rules.MAX_CONCURRENCY)
    end)
  end)
end)
