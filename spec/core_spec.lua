-- #unit specs of unsandbox.core, the C binding: the pure functions, cache
-- files and credential lookup. No network, no server.
local cjson = require "cjson"
local core = require "unsandbox.core"
local fs = require "spec.helpers.fs"
local lua = require "spec.helpers.lua"
local read, write, rm_rf = fs.read, fs.write, fs.rm_rf
local function tmpdir() return fs.tmpdir("unsb-core") end





-- Runs f and returns the error message it raised.
local function raised(f, ...)
  local okay, err = pcall(f, ...)
  assert(not okay, "expected an error")
  return tostring(err)
end

describe("unsandbox.core #unit", function()

  describe("sign()", function()
    local fixtures = cjson.decode(read("spec/fixtures/signing.json")).cases

    for _, case in ipairs(fixtures) do
      if case.timestamp ~= cjson.null then
        it("matches fixture " .. case.name, function()
          local body = case.body
          if body == cjson.null then
            local g = case.body_generator
            body = g.prefix .. g.unit:rep(g.count) .. g.suffix
            assert.equal(case.body_bytes, #body)
          end
          assert.equal(case.signature, core.sign(case.secret, case.timestamp, case.method, case.path, body))
        end)
      end
    end

    it("signs a nil body as the empty body", function()
      assert.equal("2666b2dd806900271147f92a7741c602493bee00bd645b6fce78d0a724c82bc2",
        core.sign("unsb-sk-test0-test1-test2-test3", "1700000000", "GET", "/jobs/job_abc123", nil))
    end)

    it("accepts an integer timestamp", function()
      assert.equal("2666b2dd806900271147f92a7741c602493bee00bd645b6fce78d0a724c82bc2",
        core.sign("unsb-sk-test0-test1-test2-test3", 1700000000, "GET", "/jobs/job_abc123"))
    end)

    it("signs the path as given (the client strips the query)", function()
      assert.equal("73ab63585e2b9eccb8d38e0c122bf00d274dae255f47212a5acaa1c6d0333e3d",
        core.sign("unsb-sk-test0-test1-test2-test3", "1700000000", "GET", "/services/svc1/logs?all=true", ""))
    end)

    it("raises naming the argument on wrong types", function()
      assert.matches("secret: string expected, got number", raised(core.sign, 1, "1", "GET", "/", ""))
      assert.matches("timestamp: string or integer expected, got nil",
        raised(core.sign, "k", nil, "GET", "/", ""))
      assert.matches("method: string expected, got table", raised(core.sign, "k", "1", {}, "/", ""))
      assert.matches("path: string expected, got nil", raised(core.sign, "k", "1", "GET", nil, ""))
      assert.matches("body: string expected, got boolean", raised(core.sign, "k", "1", "GET", "/", true))
    end)
  end)

  describe("valid_id()", function()
    it("accepts [A-Za-z0-9._-] up to 128 bytes", function()
      assert.is_true(core.valid_id("job_abc123"))
      assert.is_true(core.valid_id("unsb-session-1.x"))
      assert.is_true(core.valid_id(("a"):rep(128)))
    end)

    it("refuses everything else", function()
      for _, bad in ipairs { "", ".", "..", "a/b", "a b", "a?b", "a\0b", "caf\195\169", ("a"):rep(129) } do
        assert.is_false(core.valid_id(bad), bad)
      end
    end)

    it("raises on a non-string", function()
      assert.matches("id: string expected, got number", raised(core.valid_id, 12))
    end)
  end)

  describe("detect_language()", function()
    local spec_table = dofile("spec/fixtures/extensions.lua")

    it("knows every extension of the spec table", function()
      local n = 0
      for ext, lang in pairs(spec_table) do
        n = n + 1
        assert.equal(lang, core.detect_language("dir/file." .. ext), ext)
        assert.equal(lang, core.detect_language("FILE." .. ext:upper()), ext:upper())
      end
      assert.equal(48, n)
    end)

    it("adds scala and exports the whole map", function()
      assert.equal("scala", core.detect_language("Main.scala"))
      local map = core.extensions()
      for ext, lang in pairs(spec_table) do assert.equal(lang, map[ext]) end
      assert.equal("scala", map.scala)
    end)

    it("returns nil for no, empty or unknown extensions and dot-files", function()
      for _, name in ipairs { "Makefile", "foo.", ".bashrc", "notes.txt", "", "a.b/README" } do
        assert.is_nil(core.detect_language(name), name)
      end
    end)

    it("raises on a non-string", function()
      assert.matches("filename: string expected, got nil", raised(core.detect_language, nil))
    end)
  end)

  describe("detect_shebang()", function()
    it("reads the interpreter of a #! line", function()
      assert.equal("python", core.detect_shebang("#!/usr/bin/env python3"))
      assert.equal("python", core.detect_shebang("#!/usr/bin/python3\n"))
      assert.equal("bash", core.detect_shebang("#!/bin/bash"))
      assert.equal("bash", core.detect_shebang("#!/bin/sh -e"))
      assert.equal("javascript", core.detect_shebang("#!/usr/bin/env node"))
      assert.equal("lua", core.detect_shebang("#!/usr/bin/lua5.4"))
      assert.equal("ruby", core.detect_shebang("#!/usr/bin/env ruby"))
    end)

    it("returns nil for anything else", function()
      assert.is_nil(core.detect_shebang("print(1)"))
      assert.is_nil(core.detect_shebang("#!/usr/bin/frobnicate"))
    end)
  end)

  describe("poll_delay() and poll_tracker()", function()
    it("follows the schedule and never cycles", function()
      local want = { 300, 450, 700, 900, 650, 1600, 2000, 2000, 2000 }
      for i, ms in ipairs(want) do assert.equal(ms, core.poll_delay(i)) end
      assert.equal(2000, core.poll_delay(500))
    end)

    it("tolerates five 404s, then gives up", function()
      local t = core.poll_tracker()
      for _ = 1, 5 do assert.equal("retry", t:failure(404)) end
      local verdict, why = t:failure(404)
      assert.equal("fatal", verdict)
      assert.is_string(why)
    end)

    it("backs off 2 s after a 5xx and treats a following 404 as fatal", function()
      local t = core.poll_tracker()
      assert.equal("retry", t:failure(503))
      assert.equal(2000, t:delay(2))
      assert.equal("fatal", (t:failure(404)))
    end)

    it("retries 30 consecutive network errors, not 31", function()
      local t = core.poll_tracker()
      for _ = 1, 30 do assert.equal("retry", t:failure("transport")) end
      assert.equal("fatal", (t:failure("timeout")))
    end)

    it("resets the streak on success", function()
      local t = core.poll_tracker()
      t:failure(502)
      t:success()
      assert.same({ not_found = 0, errors = 0, after_5xx = false, backoff_ms = 0 }, t:state())
      assert.equal(700, t:delay(3))
    end)

    it("aborts on other 4xx and on errors that are not transient", function()
      assert.equal("fatal", (core.poll_tracker():failure(401)))
      assert.equal("fatal", (core.poll_tracker():failure(429)))
      assert.equal("fatal", (core.poll_tracker():failure("protocol")))
      assert.equal("fatal", (core.poll_tracker():failure("interrupted")))
    end)

    it("raises on bad arguments", function()
      assert.matches("attempt: integer expected", raised(core.poll_delay, "1"))
      assert.matches("status_or_kind", raised(core.poll_tracker().failure, core.poll_tracker(), {}))
    end)
  end)

  describe("clocks, sleep and interrupt", function()
    it("now() and monotonic_ms() are integers", function()
      assert.is_true(lua.math_type(core.now()) == "integer" and core.now() > 1700000000)
      assert.equal("integer", lua.math_type(core.monotonic_ms()))
    end)

    it("sleep() sleeps and accepts floats", function()
      local t0 = core.monotonic_ms()
      assert.is_true(core.sleep(120.5))
      assert.is_true(core.monotonic_ms() - t0 >= 120)
    end)

    it("sleep() returns nil, 'interrupted' after interrupt()", function()
      core.interrupt()
      local t0 = core.monotonic_ms()
      local okay, why = core.sleep(5000)
      assert.is_nil(okay)
      assert.equal("interrupted", why)
      assert.is_true(core.monotonic_ms() - t0 < 4000)   -- not after its 5 s
      assert.is_true(core.sleep(0))   -- the flag was consumed
    end)

    it("sleep() raises on a non-number", function()
      assert.matches("ms: number expected, got string", raised(core.sleep, "10"))
    end)
  end)

  describe("base64", function()
    it("round-trips bytes", function()
      local bytes = "\0\1\2\255 hello"
      assert.equal(bytes, core.base64_decode(core.base64_encode(bytes)))
      assert.equal("aGk=", core.base64_encode("hi"))
      assert.equal("", core.base64_encode(""))
    end)

    it("returns nil for invalid text", function()
      local v, why = core.base64_decode("a=b")
      assert.is_nil(v)
      assert.equal("invalid base64", why)
    end)
  end)

  describe("the shared rules (core/validate.h) and write_file()", function()
    it("env_name_check() and env_check() give the reason, or nil", function()
      assert.is_nil(core.env_name_check("PATH_2"))
      assert.matches("start", core.env_name_check("2X"))
      assert.is_nil(core.env_check {})
      assert.is_nil(core.env_check { A = "1", B = "" })
      local why, name = core.env_check { GOOD = "x", ["A-B"] = "y" }
      assert.matches("letters, digits", why)
      assert.are.equal("A-B", name)
      assert.matches("strings", core.env_check { A = 5 })
      assert.matches("256 KiB", (core.env_check { A = string.rep("x", 100000), B = string.rep("x", 100000),
                                                  C = string.rep("x", 100000) }))
      assert.matches("table expected", raised(core.env_check, "A=1"))
    end)

    it("relpath_check() and paths_conflict()", function()
      assert.is_nil(core.relpath_check("a/b.txt"))
      for _, bad in ipairs { "", "/a", "a/", "a//b", "../a", "a/./b", "a\nb", "a\0b", string.rep("x", 256) } do
        assert.is_string(core.relpath_check(bad), bad)
      end
      assert.is_nil(core.paths_conflict { "a", "b/c", "b/d" })
      local why, i, j = core.paths_conflict { "z", "a/b", "a" }
      assert.matches("directory", why)
      assert.are.same({ 2, 3 }, { i, j })
      assert.matches("twice", (core.paths_conflict { "x", "x" }))
      assert.matches("string expected", raised(core.paths_conflict, { "a", 5 }))
    end)

    it("LIMITS are the core's numbers", function()
      assert.are.same({ env_vars = 256, env_bytes = 262144, env_one = 131072, input_files = 1000,
                        relpath = 4095, retry_after = 86400 }, core.LIMITS)
    end)

    it("write_file() writes whole files and reports failures without raising", function()
      local dir = tmpdir()
      assert.is_true(core.write_file(dir .. "/f.bin", "a\0b"))
      assert.are.equal("a\0b", read(dir .. "/f.bin"))
      assert.is_true(core.write_file(dir .. "/f.bin", "new", 384))
      assert.are.equal("new", read(dir .. "/f.bin"))
      os.execute("mkdir " .. fs.quote(dir .. "/d"))
      local okay, msg = core.write_file(dir .. "/d", "x")
      assert.is_nil(okay)
      assert.matches("cannot rename", msg)
      okay, msg = core.write_file(dir .. "/missing/f", "x")
      assert.is_nil(okay)
      assert.matches("cannot open directory", msg)
      assert.matches("mode", raised(core.write_file, dir .. "/x", "x", -1))
      local p = io.popen("ls -A " .. fs.quote(dir))
      local names = p:read("*a")
      p:close()
      assert.are.equal("d\nf.bin\n", names)
      rm_rf(dir)
    end)
  end)

  describe("cache_read() and cache_write()", function()
    local dir
    before_each(function() dir = tmpdir() end)
    after_each(function() rm_rf(dir) end)

    it("writes atomically, creating the directory, and reads back fresh", function()
      local path = dir .. "/cache/languages.json"
      assert.same({ nil, "missing" }, { core.cache_read(path, 3600) })
      assert.is_true(core.cache_write(path, '{"languages":["python"]}'))
      local text, state = core.cache_read(path, 3600)
      assert.equal('{"languages":["python"]}', text)
      assert.equal("fresh", state)
      local p = io.popen("stat -c %a '" .. dir .. "/cache' '" .. path .. "'")
      assert.equal("700", p:read("*l"))
      assert.equal("600", p:read("*l"))
      p:close()
    end)

    it("reports stale files by mtime", function()
      local path = dir .. "/c.json"
      assert.is_true(core.cache_write(path, "x"))
      os.execute("touch -d '2 hours ago' '" .. path .. "'")
      local text, state = core.cache_read(path, 3600)
      assert.equal("x", text)
      assert.equal("stale", state)
    end)

    it("counts a file over 1 MiB as missing", function()
      local path = dir .. "/big.json"
      write(path, ("x"):rep(1024 * 1024 + 1))
      assert.same({ nil, "missing" }, { core.cache_read(path, 3600) })
    end)

    it("returns nil, message when it cannot write, and never raises", function()
      local okay, msg = core.cache_write(dir .. "/no/such/dir/c.json", "x")
      assert.is_nil(okay)
      assert.matches("no/such", msg)
    end)
  end)

  describe("credentials()", function()
    local dir, home, cwd
    local NO_ENV = {}
    before_each(function()
      dir = tmpdir()
      home, cwd = dir .. "/home", dir .. "/work"
      os.execute("mkdir -p '" .. home .. "/.unsandbox' '" .. cwd .. "'")
    end)
    after_each(function() rm_rf(dir) end)

    it("prefers explicit keys and never returns the secret", function()
      local c = core.credentials { public_key = "pk", secret_key = "sk", home = home, cwd = cwd, env = NO_ENV }
      assert.same({ public_key = "pk", source = "arguments" }, c)
    end)

    it("reads the home accounts.csv with CRLF, comments, blanks and a third column", function()
      write(home .. "/.unsandbox/accounts.csv",
        "# mine\r\n\r\n pk0 , sk0 \r\npk1,sk1,comment\r\n")
      assert.same({ public_key = "pk0", source = home .. "/.unsandbox/accounts.csv:0" },
        core.credentials { home = home, cwd = cwd, env = NO_ENV })
      assert.same({ public_key = "pk1", source = home .. "/.unsandbox/accounts.csv:1" },
        core.credentials { account = 1, home = home, cwd = cwd, env = NO_ENV })
    end)

    it("uses the environment table before the files, and UNSANDBOX_ACCOUNT for the row", function()
      write(home .. "/.unsandbox/accounts.csv", "pk0,sk0\npk1,sk1\n")
      assert.equal("environment", core.credentials { home = home, cwd = cwd,
        env = { UNSANDBOX_PUBLIC_KEY = "pe", UNSANDBOX_SECRET_KEY = "se" } }.source)
      assert.equal("pk1", core.credentials { home = home, cwd = cwd,
        env = { UNSANDBOX_ACCOUNT = "1" } }.public_key)
    end)

    it("falls back to ./accounts.csv and works without HOME", function()
      write(cwd .. "/accounts.csv", "pkc,skc\n")
      assert.same({ public_key = "pkc", source = cwd .. "/accounts.csv:0" },
        core.credentials { home = false, cwd = cwd, env = NO_ENV })
    end)

    it("names every place looked at when nothing is found", function()
      local c, kind, msg = core.credentials { home = home, cwd = cwd, env = NO_ENV }
      assert.is_nil(c)
      assert.equal("credentials", kind)
      assert.truthy(msg:find(home .. "/.unsandbox/accounts.csv", 1, true))
      assert.truthy(msg:find(cwd .. "/accounts.csv", 1, true))
      assert.truthy(msg:find("UNSANDBOX_PUBLIC_KEY", 1, true))
    end)

    it("names the file and the index for a missing row or a bad UNSANDBOX_ACCOUNT", function()
      write(home .. "/.unsandbox/accounts.csv", "pk0,sk0\n")
      local _, kind, msg = core.credentials { account = 4, home = home, cwd = cwd, env = NO_ENV }
      assert.equal("credentials", kind)
      assert.matches("account 4", msg)
      assert.truthy(msg:find(home .. "/.unsandbox/accounts.csv (1 account, no row 4)", 1, true))
      _, kind, msg = core.credentials { home = home, cwd = cwd, env = { UNSANDBOX_ACCOUNT = "-2" } }
      assert.equal("credentials", kind)
      assert.matches("UNSANDBOX_ACCOUNT='%-2'", msg)
    end)

    it("creates nothing while looking", function()
      os.execute("rmdir '" .. home .. "/.unsandbox'")
      core.credentials { home = home, cwd = cwd, env = NO_ENV }
      assert.is_nil(io.open(home .. "/.unsandbox", "r"))
    end)

    it("raises on bad options", function()
      assert.matches("account: must not be negative", raised(core.credentials, { account = -1 }))
      assert.matches("account: integer expected, got string", raised(core.credentials, { account = "1" }))
      assert.matches("unknown option 'acount'", raised(core.credentials, { acount = 1 }))
      assert.matches("home: string or false expected", raised(core.credentials, { home = 1 }))
      assert.matches("opts: table expected, got string", raised(core.credentials, "x"))
    end)
  end)

  describe("client()", function()
    it("is a unsandbox.Client whose tostring shows the URL and no key", function()
      local c = core.client { url = "http://127.0.0.1:9/", public_key = "pk-visible", secret_key = "sk-secret" }
      assert.equal("unsandbox.Client (http://127.0.0.1:9)", tostring(c))
      assert.equal("http://127.0.0.1:9", c:url())
      assert.is_nil(tostring(c):find("sk-secret", 1, true))
      assert.same({ url = "http://127.0.0.1:9", public_key = "pk-visible", source = "arguments", timeout = 120000 },
        c:_info())
      c:close()
    end)

    it("exposes its method table as core.Client", function()
      local c = core.client { url = "http://127.0.0.1:9" }
      assert.equal(core.Client.request, c.request)
      core.Client.extra_method_for_test = function() return "added" end
      assert.equal("added", c:extra_method_for_test())
      core.Client.extra_method_for_test = nil
    end)

    it("closes idempotently and refuses use afterwards", function()
      local c = core.client { url = "http://127.0.0.1:9" }
      c:close()
      c:close()
      assert.equal("unsandbox.Client (closed)", tostring(c))
      assert.matches("attempt to use a closed Client", raised(c.request, c, "GET", "/health"))
      assert.matches("attempt to use a closed Client", raised(c._info, c))
    end)

    it("is closed by a to-be-closed variable (5.4), or unsandbox.with", function()
      local keep
      lua.scope(core.client { url = "http://127.0.0.1:9" }, function(c) keep = c end)
      assert.equal("unsandbox.Client (closed)", tostring(keep))
    end)

    it("reports a refused connection as a transport error", function()
      local c = core.client { url = "http://127.0.0.1:9", public_key = "pk", secret_key = "sk" }
      local resp, kind, msg = c:request("GET", "/health", nil, { auth = false, timeout = 2000 })
      assert.is_nil(resp)
      assert.equal("transport", kind)
      assert.matches("127.0.0.1", msg)
    end)

    it("returns the credentials error from info() and request() when none resolve", function()
      local dir = tmpdir()
      local c = core.client { url = "http://127.0.0.1:9", home = dir, cwd = dir, env = {} }
      local r, kind = c:request("GET", "/jobs")
      assert.is_nil(r)
      assert.equal("credentials", kind)
      assert.equal("credentials", select(2, c:_info()))
      rm_rf(dir)
    end)

    it("raises on bad options and arguments", function()
      assert.matches("url must start with http", raised(core.client, { url = "ftp://x" }))
      assert.matches("timeout: number expected, got string", raised(core.client, { timeout = "1" }))
      assert.matches("timeout: must be at least 1", raised(core.client, { timeout = 0 }))
      assert.matches("unknown option 'urll'", raised(core.client, { urll = "http://x" }))
      local c = core.client { url = "http://127.0.0.1:9" }
      assert.matches("method: string expected", raised(c.request, c, nil, "/x"))
      assert.matches("upper%-case letters", raised(c.request, c, "get", "/x"))
      assert.matches("path: must start with '/'", raised(c.request, c, "GET", "x"))
      assert.matches("body: string expected, got table", raised(c.request, c, "POST", "/x", {}))
      assert.matches("unknown option 'tiemout'", raised(c.request, c, "GET", "/x", nil, { tiemout = 1 }))
      assert.matches("auth: boolean expected", raised(c.request, c, "GET", "/x", nil, { auth = 1 }))
      assert.matches("X%-Signature is set by the client",
        raised(c.request, c, "GET", "/x", nil, { headers = { ["X-Signature"] = "x" } }))
      assert.matches("malformed header", raised(c.request, c, "GET", "/x", nil, { headers = { ["A"] = "x\r\nB: y" } }))
      local tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
      assert.matches("traceparent: string expected", raised(c.request, c, "GET", "/x", nil, { traceparent = 1 }))
      assert.matches("traceparent: too long", raised(c.request, c, "GET", "/x", nil, { traceparent = tp .. "-" .. tp }))
      assert.matches("malformed header", raised(c.request, c, "GET", "/x", nil, { traceparent = "x\r\nB: y" }))
      assert.matches("traceparent given twice", raised(c.request, c, "GET", "/x", nil,
        { traceparent = tp, headers = { TraceParent = tp } }))
      c:close()
    end)
  end)
end)
