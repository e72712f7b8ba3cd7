-- #unit specs of the facade's shape, the things a new user trips over
-- first: one option checker behind every public function, one
-- declared list of module functions, errors that point at the caller's
-- line and read well when concatenated, timeouts in seconds. No server:
-- the client points at a closed loopback port and every check here fails
-- before anything is sent.
local unsandbox = require "unsandbox"
local proc = require "spec.helpers.proc"
local lua = require "spec.helpers.lua"

local KEYS = { public_key = "unsb-pk-aaaa-bbbb-cccc-dddd", secret_key = "unsb-sk-aaaa-bbbb-cccc-dddd-eeee",
               url = "http://127.0.0.1:9" }

-- The message of the error fn raises, and whether it points at this file.
-- (calls under test are never tail calls: a tail call leaves no frame of
-- the caller for the position to point at)
local function raised(fn)
  local ok, msg = pcall(fn)
  assert.is_false(ok, "expected an error")
  return tostring(msg)
end

local THIS = "facade_unit_spec%.lua:%d+: "

describe("facade #unit", function()
  local c
  before_each(function() c = unsandbox.client(KEYS) end)
  after_each(function() c:close() end)

  describe("options", function()
    -- every public function that takes an options table, with a call that
    -- passes a misspelt option
    local calls = {
      execute_code = function(x) local r = x:execute_code("python", "print(1)", { ttl = 5, timout = 1 }); return r end,
      execute_async = function(x) local r = x:execute_async("python", "print(1)", { bogus = 1 }); return r end,
      wait_for_job = function(x) local r = x:wait_for_job("job1", { bogus = 1 }); return r end,
      execute_many = function(x) local r = x:execute_many({}, { bogus = 1 }); return r end,
      get_languages = function(x) local r = x:get_languages { bogus = 1 }; return r end,
      call = function(x) local r = x:call("GET", "/health", nil, { timout = 1 }); return r end,
      create_session = function(x) local r = x:create_session { bogus = 1 }; return r end,
      session_execute = function(x) local r = x:session_execute("s1", "ls", { timout = 1 }); return r end,
      create_service = function(x) local r = x:create_service { name = "a", bootstrap = "b", bogus = 1 }; return r end,
      service_execute = function(x) local r = x:service_execute("s1", "ls", { timout = 1 }); return r end,
      delete_session = function(x) local r = x:delete_session("s1", { bogus = 1 }); return r end,
      session_snapshot = function(x) local r = x:session_snapshot("s1", { bogus = 1 }); return r end,
      unlock_snapshot = function(x) local r = x:unlock_snapshot("s1", { bogus = 1 }); return r end,
    }
    for name, call in pairs(calls) do
      it(name .. "() raises for an unknown option, at the caller's line", function()
        local msg = raised(function() local r = call(c); return r end)
        assert.matches(THIS, msg)
        assert.matches("bad argument 'opts' to '" .. name .. "' %(unknown option '", msg)
      end)
    end

    it("a non-table options argument raises", function()
      assert.matches("table expected, got string", raised(function() return c:session_execute("s1", "ls", "x") end))
      assert.matches("table expected, got number", raised(function() return c:call("GET", "/", nil, 5) end))
      assert.matches("table expected, got no value", raised(function() return c:create_service() end))
    end)

    it("module functions refuse unknown options too", function()
      assert.matches(THIS, raised(function() local r = unsandbox.session_execute("s1", "ls",
        { bogus = 1 }); return r end))
      assert.matches("unknown option 'bogus'",
        raised(function() return unsandbox.execute_code("python", "1", { url = KEYS.url, bogus = 1 }) end))
    end)
  end)

  describe("the declared public table", function()
    local public = require "unsandbox.public"
    -- valid arguments of each public function before its options table
    local ARGS = {
      execute_code = { "bash", "true" }, execute_async = { "bash", "true" }, get_job = { "j1" },
      wait_for_job = { "j1" }, cancel_job = { "j1" }, list_jobs = {}, get_languages = {},
      validate_keys = {}, health = {}, warm_up = {}, call = { "GET", "/x", false },
      create_session = {}, list_sessions = {}, get_session = { "s1" }, delete_session = { "s1" },
      session_execute = { "s1", "ls" }, create_service = {}, list_services = {},
      get_service = { "s1" }, delete_service = { "s1" }, service_logs = { "s1" },
      service_execute = { "s1", "ls" }, session_snapshot = { "s1" }, service_snapshot = { "s1" },
      list_snapshots = {}, get_snapshot = { "s1" }, delete_snapshot = { "s1" },
      restore_snapshot = { "s1" }, lock_snapshot = { "s1" }, unlock_snapshot = { "s1" },
      execute_many = { {} }, map = { "bash", {}, print }, execute_each = { {} },
      map_each = { "bash", {}, print },
      freeze_session = { "s1" }, unfreeze_session = { "s1" }, boost_session = { "s1", 2 },
      unboost_session = { "s1" }, freeze_service = { "s1" }, unfreeze_service = { "s1" },
      lock_service = { "s1" }, unlock_service = { "s1" }, update_service = { "s1" },
      resize_service = { "s1", 2 }, set_service_domains = { "s1" }, redeploy_service = { "s1" },
      get_service_env = { "s1" }, set_service_env = { "s1", "A=1\n" }, export_service_env = { "s1" },
      delete_service_env = { "s1" }, create_snapshot = {}, clone_snapshot = { "s1" },
      publish_image = {}, list_images = { "all" }, get_image = { "i1" }, delete_image = { "i1" },
      lock_image = { "i1" }, unlock_image = { "i1" }, set_image_visibility = { "i1", "public" },
      grant_image_access = { "i1", "k1" }, revoke_image_access = { "i1", "k1" },
      transfer_image = { "i1", "k1" }, image_trusted = { "i1" }, spawn_image = { "i1" },
      clone_image = { "i1" }, session_attach = { "s1" }, session_shell = { "s1", "exit\n" },
    }

    -- args with opts at the options' position (false in ARGS stands for nil)
    local function with_opts(name, opts)
      local pos = math.abs(public.PUBLIC[name])
      local args = {}
      for i = 1, pos - 1 do
        local v = ARGS[name][i]
        if v ~= false then args[i] = v end
      end
      args[pos] = opts
      return args, pos
    end

    it("names every public function here, and each takes an options table", function()
      for name, pos in pairs(public.PUBLIC) do
        assert.is_table(ARGS[name], name .. " needs its arguments in this spec")
        assert.is_true(pos ~= 0, name .. " declares no options table")
      end
    end)

    it("every public function refuses an unknown option at the caller's line", function()
      for name in pairs(public.PUBLIC) do
        local args, pos = with_opts(name, { bogus = 1 })
        local msg = raised(function() local r = c[name](c, lua.unpack(args, 1, pos)); return r end)
        assert.matches(THIS, msg, name)
        assert.matches("'" .. name .. "' %(unknown option 'bogus'", msg, name)
        msg = raised(function() local r = unsandbox[name](lua.unpack(args, 1, pos)); return r end)
        assert.matches(THIS, msg, name)
        assert.matches("unknown option 'bogus'", msg, name)
      end
    end)

    it("a Client's method refuses connection options: they would be ignored there", function()
      for name, pos in pairs(public.PUBLIC) do
        local args, n = with_opts(name, { url = KEYS.url })
        local msg = raised(function() local r = c[name](c, lua.unpack(args, 1, n)); return r end)
        assert.matches("unknown option 'url'", msg, name)
        if pos < 0 then   -- the module function always uses the default client
          msg = raised(function() local r = unsandbox[name](lua.unpack(args, 1, n)); return r end)
          assert.matches("unknown option 'url'", msg, name)
        end
      end
    end)

    it("every public function of the module raises at once on misuse", function()
      -- a boolean is the wrong type for every first argument there is
      -- (debug(on) takes any value: it is left out, as are functions
      -- without arguments)
      local no_args = { pollfds = true, current_task = true, new_trace_id = true,
        current_trace = true, default_client = true }
      local names = {}
      for name in pairs(public.PUBLIC) do names[#names + 1] = name end
      for name in pairs(public.LAZY_FIELDS) do names[#names + 1] = name end
      for _, name in ipairs { "client", "sign", "credentials", "detect_language", "on_request",
          "debug" } do names[#names + 1] = name end
      for _, name in ipairs(names) do
        local f = unsandbox[name]
        if type(f) == "function" and not no_args[name] and name ~= "debug" then
          local ok, msg = pcall(function() local r = f(true); return r end)
          assert.is_false(ok, name .. " did not raise")
          assert.matches(THIS, tostring(msg), name)
        end
      end
      assert.matches(THIS .. "bad argument #1 to 'spawn' %(function expected, got string%)",
        raised(function() local t = unsandbox.spawn("notfn"); return t end))
    end)
  end)

  describe("timeouts", function()
    it("are seconds in and out, never rounded down to nothing", function()
      local quick = unsandbox.client { url = KEYS.url, public_key = KEYS.public_key,
        secret_key = KEYS.secret_key, timeout = 0.0001 }
      assert.equal(0.001, quick:info().timeout)      -- 1 ms, the core's unit
      quick:close()
      local slow = unsandbox.client { url = KEYS.url, public_key = KEYS.public_key,
        secret_key = KEYS.secret_key, timeout = 2.5 }
      assert.equal(2.5, slow:info().timeout)
      slow:close()
      assert.equal(120, c:info().timeout)            -- the default
    end)

    it("refuse zero, negative, NaN and non-numbers at the caller's line", function()
      for _, bad in ipairs { 0, -1, 0 / 0, "5", true } do
        local msg = raised(function() local x = unsandbox.client { url = KEYS.url, timeout = bad }; return x end)
        assert.matches(THIS .. "bad argument 'timeout' to 'client'", msg)
      end
    end)
  end)

  describe("errors", function()
    it("a bad URL raises at the caller's line, without the library's paths", function()
      local msg = raised(function() local x = unsandbox.client { url = "ftp://x" }; return x end)
      assert.matches(THIS .. "bad argument 'opts' to 'client' %(url must start with http", msg)
      assert.not_matches("init%.lua", msg)
    end)

    it("a bad UNSANDBOX_URL raises at the caller's line of a module function", function()
      local out, code = proc.lua("local u = require 'unsandbox'\nlocal r = u.list_jobs()\n",
        { UNSANDBOX_URL = "gopher://x" })
      assert.equal(1, code)
      assert.matches("%(command line%):2: UNSANDBOX_URL: url must start with http", out)
      assert.not_matches("init%.lua:", out:match("^[^\n]*"))
    end)

    it("the core's refusals of call(), its body and sign() point at the caller's line", function()
      local msg = raised(function() local r = c:call("GET", "/x", nil, { headers = { ["X-A"] = {} } }); return r end)
      assert.matches(THIS .. "bad argument #4 to 'call' %(headers: value of X%-A must be a string%)", msg)
      msg = raised(function() local r = c:call("GET", "no-slash"); return r end)
      assert.matches(THIS .. "bad argument #2 to 'call' %(path: must start with '/'%)", msg)
      msg = raised(function() local r = c:call("POST", "/x", { f = print }); return r end)
      assert.matches(THIS .. "cannot encode request body as JSON", msg)
      msg = raised(function() local r = unsandbox.sign(1); return r end)
      assert.matches(THIS .. "bad argument #1 to 'sign' %(secret: string expected", msg)
      for _, m in ipairs { msg } do assert.not_matches("unsandbox/[%w_]+%.lua", m) end
    end)

    it("info() with no credentials is nil and an Error, not a C triple", function()
      local bare = unsandbox.client { url = KEYS.url }
      local real = os.getenv
      local n, t, err
      os.getenv = function(k) if k == "HOME" then return "/nonexistent-unsb" end return nil end
      n, t, err = select("#", bare:info()), bare:info()
      os.getenv = real
      bare:close()
      assert.equal(2, n)
      assert.is_nil(t)
      assert.is_true(unsandbox.Error.is(err))
      assert.equal("credentials", err.kind)
    end)
  end)

  describe("module functions", function()
    it("are exactly the declared public functions, nothing of the Client's plumbing", function()
      for _, name in ipairs { "info", "request", "url", "close" } do
        assert.is_nil(unsandbox[name], name)
      end
      for _, name in ipairs { "execute_code", "execute_async", "get_job", "wait_for_job", "execute_many",
          "cancel_job", "list_jobs", "get_languages", "validate_keys", "health", "call",
          "create_session", "list_sessions", "get_session", "delete_session", "session_execute",
          "create_service", "list_services", "get_service", "delete_service", "service_logs",
          "service_execute", "session_snapshot", "service_snapshot", "list_snapshots", "get_snapshot",
          "delete_snapshot", "restore_snapshot", "lock_snapshot", "unlock_snapshot",
          "detect_language", "client", "default_client", "sign", "credentials" } do
        assert.equal("function", type(unsandbox[name]), name)
      end
    end)
  end)

  describe("methods", function()
    -- every Client, Manager and Sandbox method comes from one module by
    -- one way (methods.lua): a second module defining a name is refused
    it("a method name is defined by one module only", function()
      local methods = require "unsandbox.methods"
      local core = require "unsandbox.core"
      assert(c.get_session)                  -- the sessions group, loaded on first use
      local msg = raised(function()
        methods.add(core.Client, { get_session = function() end }, {}, "a.module")
      end)
      assert.matches("'get_session' of a.module is defined by unsandbox.exec.sessions already", msg)
      msg = raised(function() methods.add(core.Client, { url = function() end }, {}, "a.module") end)
      assert.matches("'url' of a.module is defined by the C module already", msg)
      -- the module that defines it may add it again (the facade loaded twice)
      methods.add(core.Client, require "unsandbox.exec.sessions", { trace = true }, "unsandbox.exec.sessions")
      assert.equal("function", type(c.get_session))
    end)
  end)
end)
