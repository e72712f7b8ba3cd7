-- #unit specs of the Control Plane client (unsandbox.manager, Sandbox,
-- acting subject and trace bindings): construction, argument checks and
-- every local error of spec §7, each proven to send nothing by a
-- listener that counts connections; the lease rules through the
-- Manager's own lease operations on a fake clock. No server.
local cjson = require "cjson"
local fs = require "spec.helpers.fs"
local listener = require "spec.helpers.listener"
local lua = require "spec.helpers.lua"

local SUBJ = "0645ca35688bd5af1135ecc65edaa4ce"
local OTHER = "fb2d3e7e2d1a7b0f6b8c1e2d3a4b5c6d"

local function raised(f, ...)
  local ok, err = pcall(f, ...)
  assert(not ok, "expected an error")
  return tostring(err)
end

describe("unsandbox Control Plane #unit", function()
  local unsandbox, l

  before_each(function()
    unsandbox = require "unsandbox"
    l = listener.start()
  end)
  after_each(function() l.close() end)

  -- a Manager pointed at the counting listener, with no environment
  local function manager(extra)
    local o = { url = l.url, token = "tok", session = "demo", env = {}, timeout = 1 }
    for k, v in pairs(extra or {}) do
      if v == false then o[k] = nil else o[k] = v end
    end
    return unsandbox.manager(o)
  end

  describe("manager{}", function()
    it("takes its defaults from the environment table", function()
      local m = unsandbox.manager { env = { SANDBOX_CONTROL_PLANE_URL = l.url .. "/",
        SANDBOX_TOKEN = "t", SANDBOX_SESSION_ID = "demo", SANDBOX_LIFECYCLE_REFRESH_SECONDS = "7" } }
      assert.equal(l.url, m:url())
      assert.is_true(m:is_configured())
      assert.equal("2a97516c354b68848cdbd8f54a226a0a", m:session_id())
      assert.equal(7, m:_config().refresh)
      local d = unsandbox.manager { env = {} }
      assert.equal("http://127.0.0.1:18080", d:url())
      assert.is_false(d:is_configured())
      assert.is_nil(d:session_id())
      assert.equal(60, d:_config().refresh)
    end)

    it("lets explicit options win and raises on bad ones", function()
      local m = unsandbox.manager { url = l.url, token = "x", env = { SANDBOX_CONTROL_PLANE_URL = "http://other" } }
      assert.equal(l.url, m:url())
      assert.matches("unknown option 'tokn'", raised(unsandbox.manager, { tokn = "x" }))
      assert.matches("url: url must start with http", raised(unsandbox.manager, { url = "ftp://x", env = {} }))
      assert.matches("SANDBOX_CONTROL_PLANE_URL", raised(unsandbox.manager,
        { env = { SANDBOX_CONTROL_PLANE_URL = "http://a b" } }))
      assert.matches("refresh", raised(unsandbox.manager, { refresh = 1.5, env = {} }))
      assert.matches("SANDBOX_LIFECYCLE_REFRESH_SECONDS", raised(unsandbox.manager,
        { env = { SANDBOX_LIFECYCLE_REFRESH_SECONDS = "soon" } }))
      assert.matches("tenant", raised(unsandbox.manager, { tenant = "Not_A_Tenant", env = {} }))
      assert.matches("timeout", raised(unsandbox.manager, { timeout = 0, env = {} }))
      assert.matches("token", raised(unsandbox.manager, { token = 42, env = {} }))
      assert.matches("opts", raised(unsandbox.manager, "x"))
    end)

    it("never shows the token, and closes once", function()
      local m = manager { token = "s3cr3t-token" }
      assert.equal("unsandbox.Manager (" .. l.url .. ")", tostring(m))
      assert.not_matches("s3cr3t", tostring(m))
      lua.scope(m, function() end)
      assert.equal("unsandbox.Manager (closed)", tostring(m))
      m:close()
      assert.matches("attempt to use a closed Manager", raised(m.whoami, m))
    end)
  end)

  describe("fails closed (§7.3)", function()
    it("returns a credentials error before any I/O from every kind of call", function()
      local m = manager { token = false }
      local calls = {
        function() return m:whoami() end,
        function() return m:ping() end,
        function() return m:ensure_workspace() end,
        function() return m:ensure_runtime() end,
        function() return m:resolve_workspace() end,
        function() return m:lookup_runtime() end,
        function() return m:read_file("src/a.py") end,
        function() return m:shell_stream("echo hi", 5, function() end) end,
        function() return m:list_workspaces() end,
        function() return m:each("list_workspaces") end,
        function() return m:list_tenants() end,
        function() return m:call("GET", "/livez") end,
        function() return m:with_subject(SUBJ, m.list_objects, m, { scope = "upload", upload_id = "u1" }) end,
      }
      for i, f in ipairs(calls) do
        local r, err = f()
        assert.is_nil(r, "call " .. i)
        assert.equal("credentials", err.kind, "call " .. i)
        assert.matches("SANDBOX_TOKEN", err.message)
      end
      assert.equal(0, l.count(), "nothing reached the network")
    end)

    it("says where the URL was when it cannot connect: 502", function()
      local m = unsandbox.manager { url = "http://127.0.0.1:1", token = "t", env = {} }
      local r, err = m:whoami()
      assert.is_nil(r)
      assert.equal(502, err.status)
      assert.equal("transport", err.kind)
      assert.matches("^Sandbox Control Plane unavailable at http://127.0.0.1:1: ", err.message)
    end)
  end)

  describe("object calls (§7.4)", function()
    local loc = { scope = "upload", upload_id = "u1", path = "source/a.txt" }

    it("raise, naming the path, without a subject or an owner", function()
      local m = manager()
      local cases = {
        { "stat_object", "/v1/storage/objects/stat", function() return m:stat_object(loc) end },
        { "list_objects", "/v1/storage/objects/list", function() return m:list_objects(loc) end },
        { "delete_object", "/v1/storage/objects", function() return m:delete_object(loc) end },
        { "get_object", "/v1/storage/objects", function() return m:get_object(loc) end },
        { "put_object", "/v1/storage/objects", function() return m:put_object(loc, "x") end },
        { "object_versions", "/v1/storage/objects/versions", function() return m:object_versions(loc) end },
        { "issue_object_ticket", "/v1/storage/tickets", function() return m:issue_object_ticket(loc, "download") end },
        { "put_agent_blob", "/v1/storage/tickets", function() return m:put_agent_blob("a", "r", "outputs/x",
          "data") end },
        { "open_object", "/v1/storage/tickets", function() return m:open_object(loc) end },
        { "call", "/v1/storage/objects", function() return m:call("GET", "/v1/storage/objects?scope=upload") end },
      }
      for _, c in ipairs(cases) do
        local msg = raised(c[3])
        assert.matches("to '" .. c[1] .. "'", msg, 1, true)
        assert.matches(c[2] .. " is an object call", msg, 1, true)
      end
      assert.equal(0, l.count())
    end)

    it("go out with a bound subject, or with an owner in the locator", function()
      local m = manager()
      local r, err = m:with_subject(SUBJ, function() return m:stat_object(loc) end)
      assert.is_nil(r)
      assert.equal(502, err.status)   -- the listener never answers: a timeout
      local owned = { scope = "agent", agent_id = "A", run_id = "R 1", path = "outputs/x", owner = "t/alice" }
      r, err = m:stat_object(owned)
      assert.is_nil(r)
      assert.equal("timeout", err.kind)
      assert.equal(2, l.count())
    end)

    it("check locators before sending", function()
      local m = manager()
      m:with_subject(SUBJ, function()
        assert.matches("scope must be", raised(m.stat_object, m, { scope = "x" }))
        assert.matches("unknown field 'run_id'", raised(m.stat_object, m, { scope = "upload", upload_id = "u",
          run_id = "r" }))
        assert.matches("upload_id", raised(m.stat_object, m, { scope = "upload", upload_id = "" }))
        assert.matches("locator.path", raised(m.stat_object, m, { scope = "upload", upload_id = "u", path = 3 }))
        assert.matches("operation", raised(m.issue_object_ticket, m, loc, "delete"))
        assert.matches("expires_in", raised(m.issue_object_ticket, m, loc, "upload", 1, nil, nil, 901))
        assert.matches("content_type", raised(m.issue_object_ticket, m, loc, "upload", 1, "Text/HTML"))
        assert.matches("max_bytes", raised(m.issue_object_ticket, m, loc, "upload", 0))
      end)
      assert.equal(0, l.count())
    end)
  end)

  describe("acting subject per coroutine (§3, §7.1)", function()
    it("refuses a malformed subject at once", function()
      local m = manager()
      for _, bad in ipairs { "ABCDEF0123456789ABCDEF0123456789", SUBJ .. "\n", SUBJ:sub(2), "", 42 } do
        assert.matches("bad argument 'subject'", raised(m.with_subject, m, bad, function() end))
        assert.matches("bad argument 'subject'", raised(m.bind_subject, m, bad))
      end
      assert.is_nil(m:acting_subject())
    end)

    it("binds for the running coroutine only, and nests", function()
      local m = manager()
      local seen = {}
      local a = coroutine.wrap(function()
        m:with_subject(SUBJ, function()
          seen[#seen + 1] = "a1:" .. tostring(m:acting_subject())
          coroutine.yield()
          seen[#seen + 1] = "a2:" .. tostring(m:acting_subject())
          m:with_subject(OTHER, function() seen[#seen + 1] = "a3:" .. m:acting_subject() end)
          seen[#seen + 1] = "a4:" .. tostring(m:acting_subject())
        end)
        seen[#seen + 1] = "a5:" .. tostring(m:acting_subject())
      end)
      local b = coroutine.wrap(function()
        seen[#seen + 1] = "b1:" .. tostring(m:acting_subject())
        local bind = m:bind_subject(OTHER)
        finally(function() bind:close() end)
        seen[#seen + 1] = "b2:" .. m:acting_subject()
        coroutine.yield()
        seen[#seen + 1] = "b3:" .. m:acting_subject()
      end)
      a() b() a() b()
      assert.same({ "a1:" .. SUBJ, "b1:nil", "b2:" .. OTHER, "a2:" .. SUBJ, "a3:" .. OTHER,
        "a4:" .. SUBJ, "a5:nil", "b3:" .. OTHER }, seen)
      assert.is_nil(m:acting_subject(), "the main thread never had one")
    end)

    it("is unbound when fn raises, and is per Manager", function()
      local m, m2 = manager(), manager()
      assert.has_error(function() m:with_subject(SUBJ, error, "boom") end, "boom")
      assert.is_nil(m:acting_subject())
      m:with_subject(SUBJ, function() assert.is_nil(m2:acting_subject()) end)
      assert.equal(7, m:with_subject(SUBJ, function(x) return x + 1 end, 6))
      assert.equal(m.with_subject, m.acting_subject_context, "§8's name for it")
    end)

    it("cannot be overridden per call", function()
      local m = manager()
      assert.matches("cannot be set per call", raised(m.call, m, "GET", "/v1/whoami",
        { headers = { ["X-Acting-Subject"] = SUBJ } }))
      assert.matches("cannot be set per call", raised(m.call, m, "GET", "/v1/whoami", { subject = SUBJ }))
      assert.matches("cannot be set per call", raised(m.call, m, "GET", "/v1/whoami", { authorization = "Bearer x" }))
      assert.matches("cannot be set per call", raised(m.call, m, "GET", "/v1/whoami", { token = "other" }))
      assert.equal(0, l.count())
    end)

    it("derives the published pseudonyms", function()
      local v = cjson.decode(fs.read("spec/fixtures/acting-subject.json"))
      for i, c in ipairs(v.cases) do
        assert.equal(c.expected, unsandbox.acting_subject(c.salt, c.tenant_id, c.subject_id), "case " .. i)
      end
      assert.matches("bad argument 'salt' to 'acting_subject'", raised(unsandbox.acting_subject, "short", "t", "s"))
      assert.matches("bad argument 'tenant'", raised(unsandbox.acting_subject, string.rep("A", 32), "", "s"))
      assert.matches("bad argument 'subject'", raised(unsandbox.acting_subject, string.rep("A", 32), "t", 1))
      local ok, err = pcall(unsandbox.acting_subject, string.rep("S", 31) .. "x", "t", "s")
      assert.is_true(ok, err)
      assert.not_matches("SSSS", raised(unsandbox.acting_subject, string.rep("S", 31), "t", "s"))
    end)
  end)

  describe("trace()", function()
    it("binds a trace id or adopts a traceparent, per coroutine", function()
      local id = unsandbox.new_trace_id()
      assert.matches("^%x+$", id)
      assert.equal(32, #id)
      assert.is_nil(unsandbox.current_trace())
      unsandbox.trace(id, function()
        assert.same({ id, "01" }, { unsandbox.current_trace() })
        coroutine.wrap(function() assert.is_nil(unsandbox.current_trace()) end)()
      end)
      local tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
      lua.scope(unsandbox.trace(tp), function()
        assert.same({ "4bf92f3577b34da6a3ce929d0e0e4736", "00" }, { unsandbox.current_trace() })
      end)
      assert.is_nil(unsandbox.current_trace())
      for _, bad in ipairs { "xyz", string.rep("0", 32), string.rep("A", 32), "00-" .. string.rep("0",
        32) .. "-00f067aa0ba902b7-01" } do
        assert.matches("bad argument 'trace'", raised(unsandbox.trace, bad))
      end
    end)
  end)

  describe("local checks before I/O", function()
    it("refuses paths outside /workspace (§7.5)", function()
      local m = manager()
      for _, p in ipairs { "/etc/passwd", "~", "~/x", "", "/workspacex/a", "a\0b" } do
        assert.matches("bad argument 'path' to 'read_file'", raised(m.read_file, m, p), nil, true)
        assert.matches("bad argument 'path' to 'write_file'", raised(m.write_file, m, p, "x"))
        assert.matches("bad argument 'path' to 'upload_file'", raised(m.upload_file, m, p, "x"))
      end
      assert.equal(0, l.count())
    end)

    it("checks the tools' arguments", function()
      local m = manager()
      assert.matches("'offset'", raised(m.read_file, m, "a", 0))
      assert.matches("'limit'", raised(m.read_file, m, "a", 1, -1))
      assert.matches("'content'", raised(m.write_file, m, "a", 5))
      assert.matches("'old'", raised(m.edit_file, m, "a", "", "x"))
      assert.matches("'mode'", raised(m.grep_files, m, "x", { mode = "lines" }))
      assert.matches("'context'", raised(m.grep_files, m, "x", "", "", nil, false, 6))
      assert.matches("unknown option 'regexp'", raised(m.grep_files, m, "x", { regexp = true }))
      assert.matches("bad argument 'method' to 'each'.*one of .*list_workspaces.* expected, got 'whoami'",
        raised(m.each, m, "whoami"))
      assert.matches("bad argument 'method' to 'each'", raised(m.each, m, 42))
      -- every options table refuses what it does not take
      local ticket = { access_token = "t", url = "/v1/storage/content" }
      assert.matches("unknown option 'bogus'", raised(m.download_with_ticket, m, ticket, { bogus = 1 }))
      assert.matches("unknown option 'bogus'", raised(m.open_object, m,
        { scope = "upload", upload_id = "u", owner = "t/s" }, nil, nil, nil, { bogus = 1 }))
      assert.matches("unknown option 'bogus'", raised(m.ensure_workspace, m, "k", nil, nil, { bogus = 1 }))
      assert.matches("'timeout'", raised(m.shell, m, "ls", 0))
      assert.matches("'timeout'", raised(m.shell, m, "ls", 31))
      assert.matches("'command'", raised(m.shell, m, string.rep("x", 8193)))
      assert.matches("'command'", raised(m.shell, m, "a\0b"))
      assert.matches("'on_chunk'", raised(m.shell_stream, m, "ls", 5, "not a function"))
      assert.matches("'action'", raised(m.shell_session, m, "run", "s1"))
      assert.matches("'session_id'", raised(m.shell_session, m, "exec", "-bad"))
      assert.matches("'session_id'", raised(m.shell_session, m, "exec", string.rep("a", 65)))
      assert.matches("'timeout'", raised(m.shell_session, m, "exec", "s1", { timeout = 31 }))
      assert.matches("'input'", raised(m.shell_session, m, "input", "s1", { input = string.rep("x", 8193) }))
      assert.matches("'key'", raised(m.status, m, ""))
      assert.matches("'template'", raised(m.ensure_runtime, m, nil, "Bad"))
      assert.matches("'checkpoint_id'", raised(m.restore_workspace, m, "../x"))
      assert.matches("'sandbox_id'", raised(m.get_runtime, m, "sb-../x"))
      assert.matches("'tenant'", raised(m.list_tenant_keys, m, "../admin"))
      assert.matches("'key_id'", raised(m.revoke_key, m, "zz"))
      assert.matches("'limit'", raised(m.audit, m, 0))
      assert.equal(0, l.count())
    end)

    it("needs a session key when the Manager has none", function()
      local m = manager { session = false }
      assert.matches("no session key", raised(m.ensure_workspace, m))
      assert.matches("no session key", raised(m.read_file, m, "a"))
      assert.equal("fa57a52dbf08190218529730a3e99db6", m:status("session-a").session_id)
    end)

    it("releases nothing when no runtime is cached, and says so", function()
      local m = manager()
      assert.same({ released = false, reason = "no active Runtime" }, m:release_runtime())
      assert.equal(0, l.count())
    end)
  end)

  describe("leases on a fake clock (§7.6-§7.8)", function()
    local WS = { workspace_id = "ws-0123456789ab", access_token = "ws-token", access_token_expires_in = 900,
                 created = true, owner = cjson.null }
    local SB = { id = "sb-00112233aabb", access_token = "sb-token", access_token_expires_in = 900,
                 template = "default" }
    local now, m, sid

    before_each(function()
      now = 1000
      m = manager { clock = function() return now end }
      sid = m:session_id()
    end)

    it("reuses a fresh workspace lease without a request, until the refresh period ends", function()
      assert.is_true(m:_ws_apply(sid, WS, now))
      local ws = assert(m:ensure_workspace())
      assert.equal("ws-0123456789ab", ws.workspace_id)
      assert.equal("ws-token", ws.access_token)
      assert.is_true(ws.created)
      now = now + 59
      assert(m:ensure_workspace())
      assert.equal(0, l.count())
      now = now + 1                                   -- checked 60 s ago: ask again
      local r, err = m:ensure_workspace()
      assert.is_nil(r)
      assert.equal(502, err.status)
      assert.equal(1, l.count())
    end)

    it("asks again when the token expires within 60 s, the owner differs, or refresh is asked", function()
      m = manager { clock = function() return now end, refresh = 86400 }
      local short = {}
      for k, v in pairs(WS) do short[k] = v end
      short.access_token_expires_in = 100
      m:_ws_apply(sid, short, now)
      now = now + 39
      assert(m:ensure_workspace())
      assert.equal(0, l.count())
      now = now + 1                                   -- expires at +100 <= now + 60
      assert.is_nil(m:ensure_workspace())
      assert.equal(1, l.count())
      local owned = {}
      for k, v in pairs(WS) do owned[k] = v end
      owned.owner = "acme/alice"
      m:_ws_apply(sid, owned, now)
      assert(m:ensure_workspace(nil, "acme/alice"))
      assert(m:ensure_workspace(nil))                 -- no owner asked: any cached one
      assert.equal(1, l.count())
      assert.is_nil(m:ensure_workspace(nil, "acme/bob"))
      assert.is_nil(m:ensure_workspace(nil, nil, true))
      assert.equal(3, l.count())
    end)

    it("assumes 600 s when the lifetime is missing", function()
      m = manager { clock = function() return now end, refresh = 86400 }
      local noexp = {}
      for k, v in pairs(WS) do noexp[k] = v end
      noexp.access_token_expires_in = nil
      m:_ws_apply(sid, noexp, now)
      now = now + 539
      assert(m:ensure_workspace())
      now = now + 1
      assert.is_nil(m:ensure_workspace())
      assert.equal(1, l.count())
    end)

    it("reuses a runtime, refuses another template locally (409) and refreshes an expiring token", function()
      m:_ws_apply(sid, WS, now)
      assert.is_true(m:_rt_apply(sid, SB, now))
      local rt = assert(m:ensure_runtime())
      assert.same({ "sb-00112233aabb", "sb-token", "default", "ws-0123456789ab" },
        { rt.id, rt.access_token, rt.template, rt.workspace_id })
      assert(m:ensure_runtime(nil, "default"))
      local r, err = m:ensure_runtime(nil, "gpu")
      assert.is_nil(r)
      assert.equal(409, err.status)
      assert.matches("runs template 'default', not 'gpu'", err.message)
      assert.equal(0, l.count(), "reuse and the 409 sent nothing")
      local st = m:status()
      assert.is_true(st.workspace_ready and st.runtime_ready)
      assert.equal("sb-00112233aabb", st.sandbox_id)
      now = now + 30                                  -- still fresh for the workspace (period 60)
      local short = {}
      for k, v in pairs(SB) do short[k] = v end
      short.access_token_expires_in = 80
      m:_rt_apply(sid, short, now)
      now = now + 21                                  -- expires at +80 <= now + 60: refresh
      assert.equal("refresh", (m:_rt_decide(sid, nil, now)))
    end)

    it("counts an unreported template as default, and forgets a runtime on request", function()
      m:_ws_apply(sid, WS, now)
      local untemplated = { id = SB.id, access_token = "t" }
      m:_rt_apply(sid, untemplated, now)
      assert(m:ensure_runtime(nil, "default"))
      m:_rt_forget(sid)
      assert.equal("create", (m:_rt_decide(sid, nil, now)))
      assert.is_nil(m:status().sandbox_id)
    end)

    it("keeps a lease unchanged when a reply is malformed", function()
      m:_ws_apply(sid, WS, now)
      for _, bad in ipairs {
        { workspace_id = "ws-XYZ", access_token = "t" },
        { workspace_id = "ws-0123456789ab", access_token = "bad token" },
        { workspace_id = "ws-0123456789ab", access_token = 5 },
        { workspace_id = "ws-0123456789ab", access_token = "t", owner = "no-slash" },
      } do
        local ok, kind = m:_ws_apply(sid, bad, now)
        assert.is_nil(ok)
        assert.equal("protocol", kind)
      end
      assert.is_nil((m:_rt_apply(sid, { id = "sb-1", access_token = "t" }, now)))
      assert.is_nil((m:_rt_apply(sid, { id = SB.id, access_token = "t", template = "UPPER" }, now)))
      assert.equal("ws-token", assert(m:ensure_workspace()).access_token)
    end)

    it("keeps one lease per session and acting subject", function()
      -- the server gives each subject its own workspace for a session id:
      -- a lease (and its token) made under one subject never serves another
      local sa = m:with_subject(SUBJ, function() return select(2, m:_session("t")) end)
      local sb = m:with_subject(OTHER, function() return select(2, m:_session("t")) end)
      assert.are_not.equal(sa, sb)
      assert.are_not.equal(sid, sa)
      m:with_subject(SUBJ, function() assert.is_true(m:_ws_apply(sa, WS, now)) end)
      m:with_subject(SUBJ, function() assert.equal("ws-token", assert(m:ensure_workspace()).access_token) end)
      assert.equal(0, l.count())
      assert.equal("ws-0123456789ab", m:with_subject(SUBJ, function() return m:status().workspace_id end))
      assert.is_nil(m:with_subject(OTHER, function() return m:status().workspace_id end))
      assert.is_nil(m:status().workspace_id)
      assert.equal(sid, m:with_subject(SUBJ, function() return m:status().session_id end),
        "the session id sent stays the session's")
      assert.is_nil(m:with_subject(OTHER, function() return m:ensure_workspace() end))
      assert.equal(1, l.count(), "another subject asks the server")
    end)

    it("is bounded per Manager, least recently used first", function()
      m = manager { clock = function() return now end, lease_capacity = 2 }
      for _, key in ipairs { "a", "b", "c" } do
        m:_ws_apply(m:status(key).session_id, WS, now)
      end
      local n, cap = m:_lease_count()
      assert.same({ 2, 2 }, { n, cap })
      assert.is_nil(m:status("a").workspace_id, "the oldest was evicted")
      assert.equal("ws-0123456789ab", m:status("c").workspace_id)
      assert.is_true(m:forget("c"))
      assert.is_nil(m:status("c").workspace_id)
    end)
  end)

  describe("Sandbox", function()
    local core = require "unsandbox.core"

    it("checks names and options before anything is sent", function()
      local m = manager()
      assert.matches("'name'", raised(unsandbox.Sandbox.create, { name = "  ", manager = m }))
      assert.matches("'name'", raised(unsandbox.Sandbox.create, { name = string.rep("n", 129), manager = m }))
      assert.matches("'name'", raised(unsandbox.Sandbox.get, { manager = m }))
      assert.matches("'manager'", raised(unsandbox.Sandbox.create, { name = "x", manager = {} }))
      assert.matches("unknown option 'size'", raised(unsandbox.Sandbox.create, { size = 1, manager = m }))
      assert.equal(0, l.count())
      local none = manager { token = false }
      local sb, err = unsandbox.Sandbox.create { manager = none }
      assert.is_nil(sb)
      assert.equal("credentials", err.kind)
      assert.equal(0, l.count())
    end)

    it("quotes run_command's argv and checks write_files items", function()
      local m = manager { token = false }
      local sb = core.sandbox(m, "unit-box")
      assert.equal("unsandbox.Sandbox (unit-box)", tostring(sb))
      assert.equal(m, sb:manager())
      assert.equal(core.session_id("unit-box"), sb:session_id())
      assert.matches("'args%[2%]'", raised(sb.run_command, sb, "printf", { "%s", 5 }))
      assert.matches("'args'", raised(sb.run_command, sb, "printf", { x = "y" }))
      assert.matches("'args'", raised(sb.run_command, sb, "printf", { "a\0b" }))
      assert.matches("'command'", raised(sb.run_command, sb, ""))
      local r, err = sb:run_command("printf", { "%s", "a; echo unsafe" })
      assert.is_nil(r)
      assert.equal("credentials", err.kind)
      assert.matches("exactly path and content", raised(sb.write_files, sb, { { path = "a", content = "b",
        mode = 1 } }))
      assert.matches("items%[2%]", raised(sb.write_files, sb, { { path = "a", content = "b" }, "c" }))
      assert.matches("items%[1%]%.content", raised(sb.write_files, sb, { { path = "a" } }))
      assert.equal(0, l.count())
    end)

    it("<close> (5.4), or unsandbox.with, closes also when the block fails, without hiding the error", function()
      local m = manager { token = false }
      local sb = core.sandbox(m, "closing")
      local ok, err = pcall(lua.scope, sb, function()
        error("the block's own error")
      end)
      assert.is_false(ok)
      assert.matches("the block's own error", err)
      assert.equal("unsandbox.Sandbox (closed)", tostring(sb))
      assert.matches("attempt to use a closed Sandbox", raised(sb.read_file, sb, "a"))
      -- a normal end whose release fails raises that failure
      local sb2 = core.sandbox(m, "closing-2")
      ok, err = pcall(lua.scope, sb2, function() end)
      assert.is_false(ok)
      assert.equal("credentials", err.kind)
      assert.equal(0, l.count())
    end)

    it("makes PTY shell objects with checked ids", function()
      local sb = core.sandbox(manager(), "pty")
      local sh = sb:shell()
      assert.matches("^shell%-%x+$", sh.id)
      assert.equal("mine.1", sb:shell { id = "mine.1" }.id)
      assert.matches("'id'", raised(sb.shell, sb, { id = "-x" }))
      assert.matches("unknown option", raised(sh.exec, sh, "ls", { sync = true }))
      assert.matches("'timeout'", raised(sh.wait, sh, 121))
    end)
  end)

  describe("errors", function()
    it("know the Control Plane's kinds", function()
      local Error = unsandbox.Error
      local e = Error.new { kind = "rpc", status = 502, rpc_code = -32602, message = "MCP -32602: bad path" }
      assert.equal("unsandbox: rpc 502: MCP -32602: bad path", tostring(e))
      assert.equal("cancelled", Error.new { kind = "cancelled", status = 499, message = "x" }.kind)
    end)
  end)
end)
