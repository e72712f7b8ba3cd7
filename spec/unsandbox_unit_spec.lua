-- #unit specs of the public module: everything that needs no server.
local cjson = require "cjson"
local fs = require "spec.helpers.fs"
local lua = require "spec.helpers.lua"
local read, write = fs.read, fs.write
local function tmpdir() return fs.tmpdir("unsb-unit") end




-- os.getenv is restored after each spec, in case one wraps it
local real_getenv = os.getenv

describe("unsandbox #unit", function()
  local unsandbox
  before_each(function()
    package.loaded["unsandbox"] = nil
    unsandbox = require "unsandbox"
  end)
  after_each(function() os.getenv = real_getenv end)

  describe("sign()", function()
    local vectors = cjson.decode(read("spec/fixtures/signing.json")).cases

    local function expand(gen)
      return gen.prefix .. string.rep(gen.unit, gen.count) .. gen.suffix
    end

    it("reproduces every request case of the signing vectors", function()
      local n = 0
      for _, v in ipairs(vectors) do
        -- v9 is a bare HMAC of "message" (no request parts); the C unit
        -- test of unsb_hmac_hex covers it
        if v.timestamp ~= cjson.null then
          local body = v.body
          if body == cjson.null then body = expand(v.body_generator) end
          assert.are.equal(v.signature, unsandbox.sign(v.secret, v.timestamp, v.method, v.path, body), v.name)
          n = n + 1
        end
      end
      assert.is_true(n >= 13)
    end)

    it("gives 64 lowercase hex characters and treats nil body as empty", function()
      local s = unsandbox.sign("sk", "1700000000", "POST", "/keys/validate", nil)
      assert.matches("^[0-9a-f]+$", s)
      assert.are.equal(64, #s)
      assert.are.equal(unsandbox.sign("sk", "1700000000", "POST", "/keys/validate", ""), s)
    end)

    it("raises naming the argument on wrong types", function()
      assert.has_error(function() unsandbox.sign(nil, "1", "GET", "/", "") end)
      local ok, err = pcall(unsandbox.sign, "sk", {}, "GET", "/", "")
      assert.is_false(ok)
      assert.matches("#2", err)
    end)
  end)

  describe("detect_language()", function()
    local table_ = dofile("spec/fixtures/extensions.lua")

    it("knows every extension of the spec's table, in any case", function()
      local n = 0
      for ext, lang in pairs(table_) do
        n = n + 1
        assert.are.equal(lang, unsandbox.detect_language("prog." .. ext), ext)
        assert.are.equal(lang, unsandbox.detect_language("dir/PROG." .. ext:upper()), ext)
      end
      assert.is_true(n >= 48)
      assert.are.equal("r", unsandbox.detect_language("analysis.R"))
    end)

    it("uses the text after the last dot of the path", function()
      assert.are.equal("python", unsandbox.detect_language("/a.b/c.tar.py"))
      assert.are.equal("bash", unsandbox.detect_language("./x.y.sh"))
    end)

    it("answers nil for no, unknown or empty extension and for nil or empty input", function()
      assert.is_nil(unsandbox.detect_language("Makefile"))
      assert.is_nil(unsandbox.detect_language("file.unknownext"))
      assert.is_nil(unsandbox.detect_language("file."))
      assert.is_nil(unsandbox.detect_language(""))
      assert.is_nil(unsandbox.detect_language(nil))
    end)

    it("raises for a non-string", function()
      local ok, err = pcall(unsandbox.detect_language, 42)
      assert.is_false(ok)
      assert.matches("filename", err)
      ok, err = pcall(unsandbox.detect_language, "x", 42)
      assert.is_false(ok)
      assert.matches("content", err)
    end)

    it("reads the shebang of the content when the extension says nothing", function()
      local cases = {
        ["#!/usr/bin/env python3\nprint(1)"] = "python",
        ["#!/usr/bin/env -S python3 -u\n"] = "python",         -- env's -S, the interpreter's option
        ["#!/usr/bin/env -u PYTHONPATH python3.11"] = "python", -- an env option with its argument
        ["#!/usr/bin/python3.11 -u"] = "python",               -- a version
        ["#!/usr/local/bin/lua5.4"] = "lua",
        ["#!/usr/bin/env LC_ALL=C perl -w"] = "perl",
        ["#! /bin/sh -e\r\n"] = "bash",
        ["#!/usr/bin/env node"] = "javascript",
      }
      for content, lang in pairs(cases) do
        assert.are.equal(lang, unsandbox.detect_language("script", content), content)
        assert.are.equal(lang, unsandbox.detect_language(nil, content), content)
      end
      -- the extension comes first
      assert.are.equal("ruby", unsandbox.detect_language("x.rb", "#!/usr/bin/env python3"))
    end)

    it("answers nil for a first line that is no shebang", function()
      for _, content in ipairs { "print(1)", "", "# !/bin/bash", "\n#!/bin/bash", "#!/usr/bin/env",
                                 "#!/usr/bin/unknown-thing", "#!" } do
        assert.is_nil(unsandbox.detect_language("script", content), content)
      end
    end)

    it("reads the first line of the file when no content is given, and never waits on a FIFO", function()
      local dir = tmpdir()
      local f = assert(io.open(dir .. "/tool", "w"))
      f:write("#!/usr/bin/env ruby\n", string.rep("x", 100000), "\n")
      f:close()
      assert.are.equal("ruby", unsandbox.detect_language(dir .. "/tool"))
      assert.are.equal("python", unsandbox.detect_language(dir .. "/tool", "#!/usr/bin/python3"))
      assert.is_nil(unsandbox.detect_language(dir .. "/missing"))
      assert.is_nil(unsandbox.detect_language(dir))                 -- a directory
      assert(lua.sh("mkfifo " .. dir .. "/fifo"))
      assert.is_nil(unsandbox.detect_language(dir .. "/fifo"))      -- nobody writes to it
      os.execute("rm -rf " .. dir)
    end)
  end)

  describe("credentials()", function()
    local home, cwd
    before_each(function()
      home = tmpdir()
      cwd = tmpdir()
      os.execute("mkdir -p " .. home .. "/.unsandbox")
    end)
    after_each(function() os.execute("rm -rf " .. home .. " " .. cwd) end)

    it("prefers explicit keys and never returns the secret", function()
      local c = assert(unsandbox.credentials { public_key = "unsb-pk-a", secret_key = "unsb-sk-b", home = home,
        cwd = cwd })
      assert.are.equal("unsb-pk-a", c.public_key)
      assert.are.equal("arguments", c.source)
      for _, v in pairs(c) do assert.not_matches("unsb%-sk", tostring(v)) end
    end)

    it("reads a CSV with CRLF, comments, blank lines and a third column", function()
      write(home .. "/.unsandbox/accounts.csv",
        "# my accounts\r\n\r\n  unsb-pk-zero , unsb-sk-zero ,work laptop\r\n\nunsb-pk-one,unsb-sk-one\r\n")
      local c = assert(unsandbox.credentials { account = 1, home = home, cwd = cwd })
      assert.are.equal("unsb-pk-one", c.public_key)
      assert.matches("accounts.csv", c.source)
      c = assert(unsandbox.credentials { account = 0, home = home, cwd = cwd })
      assert.are.equal("unsb-pk-zero", c.public_key)
    end)

    it("names the file and index for a missing row", function()
      write(home .. "/.unsandbox/accounts.csv", "unsb-pk-zero,unsb-sk-zero\n")
      local c, err = unsandbox.credentials { account = 3, home = home, cwd = cwd }
      assert.is_nil(c)
      assert.are.equal("credentials", err.kind)
      assert.matches("3", err.message)
      assert.matches("accounts.csv", err.message)
    end)

    it("falls back to ./accounts.csv", function()
      write(cwd .. "/accounts.csv", "unsb-pk-local,unsb-sk-local\n")
      local c = assert(unsandbox.credentials { account = 0, home = home, cwd = cwd })
      assert.are.equal("unsb-pk-local", c.public_key)
    end)
  end)

  describe("client()", function()
    it("raises on unknown options and wrong types", function()
      assert.has_error(function() unsandbox.client { urll = "x" } end)
      assert.has_error(function() unsandbox.client { timeout = "fast" } end)
      assert.has_error(function() unsandbox.client "x" end)
    end)

    it("never shows a key in tostring", function()
      local c = unsandbox.client { url = "http://127.0.0.1:9", public_key = "unsb-pk-p", secret_key = "unsb-sk-secret" }
      assert.not_matches("secret", tostring(c))
      c:close()
      assert.has_error(function() c:execute_code("python", "") end)
    end)
  end)

  describe("argument checks", function()
    local function many_vars(n)
      local t = {}
      for i = 1, n do t["V" .. i] = "x" end
      return t
    end
    local c
    before_each(function() c = unsandbox.client { url = "http://127.0.0.1:9", public_key = "p", secret_key = "s" } end)
    after_each(function() c:close() end)

    local cases = {
      { "execute_code", { nil, "x" }, "language" },
      { "execute_code", { "python", 42 }, "code" },
      { "execute_code", { "python", "x", { ttl = 0 } }, "ttl" },
      { "execute_code", { "python", "x", { ttl = 901 } }, "ttl" },
      { "execute_code", { "python", "x", { vcpu = 9 } }, "vcpu" },
      { "execute_code", { "python", "x", { network_mode = "open" } }, "network_mode" },
      { "execute_code", { "python", "x", { env = { ["1BAD"] = "x" } } }, "env" },
      { "execute_code", { "python", "x", { input_files = { "/etc/hostname", 5 } } }, "input_files" },
      -- the rules of core/validate.h, the same unsandboxd applies
      { "execute_code", { "python", "x", { env = many_vars(257) } }, "too many variables" },
      { "execute_code", { "python", "x", { env = { A = string.rep("x", 131070) } } }, "128 KiB" },
      { "execute_code", { "python", "x", { env = { A = string.rep("x", 100000), B = string.rep("x", 100000),
                                                   C = string.rep("x", 100000) } } }, "256 KiB" },
      { "execute_code", { "python", "x", { env = { A = "x\0y" } } }, "NUL" },
      { "execute_code", { "python", "x", { input_files = { { filename = "a", content = "" },
                                                           { filename = "a/b", content = "" } } } },
        "input_files[1] and [2]" },
      { "execute_code", { "python", "x", { input_files = { { filename = "a/../b", content = "" } } } }, "'..'" },
      { "execute_code", { "python", "x", { input_files = { { filename = string.rep("d/", 64) .. "f",
        content = "" } } } },
        "nested too deeply" },
      { "create_session", { { input_files = { { filename = "x", content = "" }, { filename = "x", content = "" } } } },
        "twice" },
      { "execute_code", { "python", "x", { bogus = 1 } }, "bogus" },
      -- a Client has its own connection: a per-call url would be ignored
      { "execute_code", { "python", "x", { url = "http://elsewhere" } }, "url" },
      { "get_job", { "../etc" }, "job_id" },
      { "get_job", { 5 }, "job_id" },
      { "wait_for_job", { "job_1", { timeout = -1 } }, "timeout" },
      { "session_execute", { "s/1", "ls" }, "id" },
      { "create_service", { { name = "x" } }, "bootstrap" },
      { "session_snapshot", { "unsb-session-1", { hot = "yes" } }, "hot" },
      { "get_languages", { { fresh = true } }, "fresh" },
      { "delete_snapshot", { "unsb-snapshot-1", { otp = "123456" } }, "challenge_id" },
      { "unlock_snapshot", { "unsb-snapshot-1", { on_sudo = "123456" } }, "on_sudo" },
    }
    for _, case in ipairs(cases) do
      it(case[1] .. " raises naming '" .. case[3] .. "'", function()
        local ok, err = pcall(c[case[1]], c, lua.unpack(case[2], 1, 3))
        assert.is_false(ok)
        assert.matches(case[3], err, 1, true)
        assert.matches(case[1], err, 1, true)
      end)
    end

    it("returns a validation error for an unreadable input file", function()
      local missing = { input_files = { "/nonexistent/file.txt" } }
      local calls = {
        function() return c:execute_code("python", "x", missing) end,
        function() return c:execute_async("python", "x", missing) end,
        function() return c:create_session(missing) end,
        function() return c:create_service { name = "s", bootstrap = "true", input_files = missing.input_files } end,
      }
      for _, call in ipairs(calls) do
        local r, err = call()
        assert.is_nil(r)
        assert.are.equal("validation", err.kind)
        assert.matches("/nonexistent/file.txt", err.message, 1, true)
      end
    end)
  end)
end)
