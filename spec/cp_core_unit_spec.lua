-- #unit specs of the Control Plane functions of unsandbox.core: every
-- vector of spec/fixtures/{acting-subject,trace,ids}.json through the
-- binding, the SSE parser object, and the bad inputs of each function.
-- No network, no server.
local cjson = require "cjson"
local core = require "unsandbox.core"
local fs = require "spec.helpers.fs"
local lua = require "spec.helpers.lua"

local function fixture(name) return cjson.decode(fs.read("spec/fixtures/" .. name)) end

-- Runs f and returns the error message it raised.
local function raised(f, ...)
  local okay, err = pcall(f, ...)
  assert(not okay, "expected an error")
  return tostring(err)
end

-- A JSON string with every non-ASCII character escaped as \uXXXX, as the
-- acting-subject fixture's canonical payload needs (no code point there
-- is above U+FFFF, and no string needs another escape).
local function ascii_json(s)
  local out = {}
  for _, cp in ipairs(lua.utf8_codes(s)) do
    assert(cp >= 0x20 and cp <= 0xFFFF and cp ~= 0x22 and cp ~= 0x5C)
    out[#out + 1] = cp < 0x80 and string.char(cp) or string.format("\\u%04x", cp)
  end
  return '"' .. table.concat(out) .. '"'
end

describe("unsandbox.core Control Plane #unit", function()

  describe("acting_subject() and valid_subject()", function()
    local vectors = fixture("acting-subject.json")

    it("derives every published pseudonym", function()
      for i, c in ipairs(vectors.cases) do
        local got = core.acting_subject(c.salt, c.tenant_id, c.subject_id)
        assert.equal(c.expected, got, "case " .. i)
        assert.is_true(core.valid_subject(got))
      end
      assert.equal(8, #vectors.cases)
    end)

    it("has the published vector set (payload digest)", function()
      local parts = {}
      for _, c in ipairs(vectors.cases) do
        parts[#parts + 1] = "{" .. table.concat({
          '"expected":' .. ascii_json(c.expected), '"salt":' .. ascii_json(c.salt),
          '"subject_id":' .. ascii_json(c.subject_id), '"tenant_id":' .. ascii_json(c.tenant_id),
        }, ",") .. "}"
      end
      local payload = '{"header":' .. ascii_json(vectors.header) ..
        ',"min_salt_bytes":' .. lua.tointeger(vectors.min_salt_bytes) ..
        ',"pseudonym_pattern":' .. ascii_json(vectors.pseudonym_pattern) ..
        ',"vectors":[' .. table.concat(parts, ",") .. "]}"
      -- session_id is the first half of the payload's SHA-256
      assert.equal(vectors.payload_sha256:sub(1, 32), core.session_id(payload))
    end)

    it("refuses every invalid pseudonym of the fixture", function()
      for _, bad in ipairs(vectors.invalid_pseudonyms) do
        assert.is_false(core.valid_subject(bad.value), bad.reason)
      end
      assert.equal(12, #vectors.invalid_pseudonyms)
    end)

    it("raises on a short salt without quoting it", function()
      local msg = raised(core.acting_subject, "secret-salt-of-31-bytes-xxxxxxx", "t", "s")
      assert.matches("bad argument #1 .*salt must be at least 32 bytes, got 31", msg)
      assert.not_matches("secret%-salt", msg)
    end)

    it("raises on empty, NUL or invalid UTF-8 halves", function()
      local salt = ("A"):rep(32)
      assert.matches("#2 .*tenant must not be empty", raised(core.acting_subject, salt, "", "s"))
      assert.matches("#3 .*subject must not be empty", raised(core.acting_subject, salt, "t", ""))
      assert.matches("#2 .*NUL", raised(core.acting_subject, salt, "a\0b", "s"))
      assert.matches("#3 .*UTF%-8", raised(core.acting_subject, salt, "t", "j\252rgen"))
    end)

    it("raises on wrong types", function()
      assert.matches("salt: string expected, got number", raised(core.acting_subject, 1, "t", "s"))
      assert.matches("tenant: string expected, got nil", raised(core.acting_subject, ("A"):rep(32), nil, "s"))
      assert.matches("subject: string expected, got table",
        raised(core.acting_subject, ("A"):rep(32), "t", {}))
      assert.matches("subject: string expected, got nil", raised(core.valid_subject, nil))
    end)
  end)

  describe("trace context", function()
    local cases = fixture("trace.json").cases
    local function opt(v) if v ~= cjson.null then return v end end

    it("passes every vector", function()
      local counts = { request_id = 0, traceparent = 0, resolution = 0 }
      for i, c in ipairs(cases) do
        local want = c.expected
        if c.kind == "request_id" then
          assert.equal(want.trace_id, core.trace_from_request_id(c.x_request_id), "case " .. i)
        elseif c.kind == "traceparent" then
          local tp = core.parse_traceparent(c.traceparent)
          if want.valid then
            assert.same({ trace_id = want.trace_id, span_id = "00f067aa0ba902b7", flags = want.flags }, tp)
          else
            assert.is_nil(tp, "case " .. i)
          end
        else
          local trace, flags, source = core.resolve_trace(opt(c.headers.traceparent), opt(c.headers.x_request_id))
          assert.equal(want.source, source, "case " .. i)
          assert.equal(want.flags, flags)
          if want.trace_id ~= cjson.null then
            assert.equal(want.trace_id, trace)
          else
            assert.matches("^[0-9a-f]+$", trace)
            assert.equal(32, #trace)
            assert.not_equal(("0"):rep(32), trace)
          end
        end
        counts[c.kind] = counts[c.kind] + 1
      end
      assert.same({ request_id = 6, traceparent = 15, resolution = 5 }, counts)
    end)

    it("gives nil for a blank request id", function()
      assert.is_nil(core.trace_from_request_id(" \t "))
      assert.matches("request_id: string expected, got nil", raised(core.trace_from_request_id, nil))
    end)

    it("makes outbound headers with a fresh span each time", function()
      local a = core.new_traceparent("4bf92f3577b34da6a3ce929d0e0e4736", "00")
      local b = core.new_traceparent("4bf92f3577b34da6a3ce929d0e0e4736", "00")
      local pa, pb = core.parse_traceparent(a), core.parse_traceparent(b)
      assert.equal("4bf92f3577b34da6a3ce929d0e0e4736", pa.trace_id)
      assert.equal("00", pa.flags)
      assert.not_equal(pa.span_id, pb.span_id)
      local r = core.parse_traceparent(core.new_traceparent())
      assert.equal("01", r.flags)
      assert.not_equal("4bf92f3577b34da6a3ce929d0e0e4736", r.trace_id)
    end)

    it("raises on a bad trace id or flags", function()
      assert.matches("#1 .*32 lowercase hex", raised(core.new_traceparent, "4BF92F3577B34DA6A3CE929D0E0E4736"))
      assert.matches("#1 .*not all zero", raised(core.new_traceparent, ("0"):rep(32)))
      assert.matches("#2 .*2 lowercase hex", raised(core.new_traceparent, nil, "1"))
      assert.matches("#2 .*2 lowercase hex", raised(core.new_traceparent, nil, "01\r\nX: y"))
      assert.matches("trace_id: string expected, got number", raised(core.new_traceparent, 1))
    end)
  end)

  describe("identifiers and quoting", function()
    local cases = fixture("ids.json").cases

    it("passes every session_id, object_id and argv_quoting vector", function()
      local n = { session_id = 0, object_id = 0, argv_quoting = 0 }
      for i, c in ipairs(cases) do
        if c.kind == "session_id" then
          assert.equal(c.expected, core.session_id(c.session_key), "case " .. i)
        elseif c.kind == "object_id" then
          assert.equal(c.expected, core.object_id(c.input), "case " .. i)
        elseif c.kind == "argv_quoting" then
          assert.equal(c.expected, core.shell_quote(c.argv), "case " .. i)
        end
        if n[c.kind] then n[c.kind] = n[c.kind] + 1 end
      end
      -- workspace_id and scoped_token are server-side derivations
      assert.same({ session_id = 5, object_id = 14, argv_quoting = 7 }, n)
    end)

    it("refuses bad session keys", function()
      assert.matches("#1 .*must not be empty", raised(core.session_id, ""))
      assert.matches("#1 .*UTF%-8", raised(core.session_id, "k\255"))
      assert.matches("key: string expected, got number", raised(core.session_id, 7))
    end)

    it("normalises invalid UTF-8 deterministically", function()
      assert.equal("ab-cd", core.object_id("Ab\255\254cd"))
      assert.equal(core.object_id("\255"), core.object_id("\255"))
      assert.matches("^id%-", core.object_id("\255"))
      assert.matches("id: string expected, got nil", raised(core.object_id, nil))
    end)

    it("quotes with an optional length cap", function()
      assert.equal("echo 'a b'", core.shell_quote({ "echo", "a b" }, 10))
      assert.matches("#2 .*longer than 9", raised(core.shell_quote, { "echo", "a b" }, 9))
    end)

    it("refuses anything but a non-empty list of strings", function()
      assert.matches("argv: table expected, got string", raised(core.shell_quote, "ls -la"))
      assert.matches("at least the command", raised(core.shell_quote, {}))
      assert.matches("argv%[2%]: string expected, got number", raised(core.shell_quote, { "ls", 1 }))
      assert.matches("a list", raised(core.shell_quote, { "ls", nil, "x" }))
      assert.matches("a list", raised(core.shell_quote, { "ls", flag = "x" }))
      assert.matches("argument 2 contains a NUL", raised(core.shell_quote, { "ls", "a\0b" }))
      assert.matches("max_len: must not be negative", raised(core.shell_quote, { "ls" }, -1))
    end)
  end)

  describe("workspace_path()", function()
    it("maps /workspace paths and keeps relative ones", function()
      assert.equal("", core.workspace_path("/workspace"))
      assert.equal("", core.workspace_path("/workspace/"))
      assert.equal("src/a.py", core.workspace_path("/workspace/src/a.py"))
      assert.equal("src/a.py", core.workspace_path("src/a.py"))
    end)

    it("raises for other absolute paths, ~, empty and NUL", function()
      for _, bad in ipairs { "/etc/passwd", "/workspacex", "~", "~/x", "" } do
        assert.matches("bad argument #1", raised(core.workspace_path, bad), bad)
      end
      assert.matches("outside /workspace", raised(core.workspace_path, "/tmp/x"))
      assert.matches("NUL", raised(core.workspace_path, "a\0b"))
      assert.matches("path: string expected, got nil", raised(core.workspace_path, nil))
    end)
  end)

  describe("form_encode()", function()
    it("encodes as urlencode, sorted by name, dropping empty values", function()
      assert.equal("agent_id=my-agent&path=outputs%2Fa+b%2Fr%C3%A9sum%C3%A9.txt&scope=agent",
        core.form_encode { scope = "agent", path = "outputs/a b/résumé.txt", agent_id = "my-agent", owner = "" })
      assert.equal("a=true&b=false&n=3&x=2", core.form_encode { a = true, b = false, n = 3, x = 2.0 })
      assert.equal("", core.form_encode {})
      assert.equal("k=%2B%25%26%3D~", core.form_encode { k = "+%&=~" })
    end)

    it("raises on names and values it cannot encode", function()
      assert.matches("query: table expected, got string", raised(core.form_encode, "a=1"))
      assert.matches("names must be strings", raised(core.form_encode, { "x" }))
      assert.matches("query.a: an integer expected, got 1.5", raised(core.form_encode, { a = 1.5 }))
      assert.matches("query.a: string, integer or boolean expected, got table",
        raised(core.form_encode, { a = {} }))
      assert.matches("empty name", raised(core.form_encode, { [""] = "x" }))
      assert.matches("#2 .*longer than 4", raised(core.form_encode, { a = "bcd" }, 4))
    end)
  end)

  describe("request rules", function()
    it("knows the object calls of spec 7.4", function()
      assert.is_true(core.is_object_call("/v1/storage/objects?scope=agent"))
      assert.is_true(core.is_object_call("/v1/workspaces/ws-0123456789ab/objects/export"))
      assert.is_false(core.is_object_call("/v1/workspaces"))
      assert.is_false(core.is_object_call("/v1/storagex"))
    end)

    it("numbers MCP request ids", function()
      assert.matches("^sandbox%-client%-7%-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]$",
        core.mcp_request_id(7))
      assert.matches("n: must be at least 1", raised(core.mcp_request_id, 0))
      assert.matches("n: integer expected, got number", raised(core.mcp_request_id, 1.5))
      assert.same({ protocol_version = "2026-07-28", client_name = "sandbox-client", client_version = "0.1.0" },
        core.MCP)
    end)

    it("reads SANDBOX_LIFECYCLE_REFRESH_SECONDS", function()
      assert.equal(60, core.refresh_period(nil))
      assert.equal(60, core.refresh_period(""))
      assert.equal(90, core.refresh_period(" 90 "))
      assert.equal(5, core.refresh_period("1"))
      assert.matches("an integer number of seconds", raised(core.refresh_period, "1.5"))
      assert.matches("at most 86400", raised(core.refresh_period, "86401"))
    end)
  end)

  describe("sse_parser()", function()
    local stream = "event: message\r\ndata: {\"seq\":1}\r\n\r\n: keep-alive\n\n" ..
                   "data: a\rdata: b\r\rid: 9\nretry: 250\ndata: last"
    local want = {
      { event = "message", data = '{"seq":1}' },
      { event = "message", data = "a\nb" },
      { event = "message", data = "last", id = "9" },
    }

    local function run(cuts)
      local p = core.sse_parser()
      finally(function() p:close() end)
      local got, from = {}, 1
      cuts[#cuts + 1] = #stream + 1
      for _, to in ipairs(cuts) do
        for _, ev in ipairs(assert(p:feed(stream:sub(from, to - 1)))) do got[#got + 1] = ev end
        from = to
      end
      for _, ev in ipairs(assert(p:finish())) do got[#got + 1] = ev end
      return got, p:retry()
    end

    it("gives the same events for every split point and byte by byte", function()
      for cut = 1, #stream + 1 do
        local got, retry = run { cut }
        assert.same(want, got, "cut at " .. cut)
        assert.equal(250, retry)
      end
      local bytes = {}
      for i = 2, #stream do bytes[#bytes + 1] = i end
      assert.same(want, (run(bytes)))
    end)

    it("returns nil, protocol, message past its caps and stays failed", function()
      local p = core.sse_parser { max_line = 8, max_event = 4 }
      assert.same({}, p:feed("data: 12"))
      local ev, kind, msg = p:feed("3\n")
      assert.is_nil(ev)
      assert.equal("protocol", kind)
      assert.matches("SSE line longer than 8 bytes", msg)
      assert.is_nil((p:feed("\n")))
      local q = core.sse_parser { max_event = 4 }
      local _, k2, m2 = q:feed("data: 12345\n")
      assert.equal("protocol", k2)
      assert.matches("event data longer than 4 bytes", m2)
    end)

    it("raises on misuse", function()
      local p = core.sse_parser()
      assert.same({}, p:finish())
      assert.matches("already finished", raised(p.feed, p, "data: x\n\n"))
      p:close()
      p:close()
      assert.matches("attempt to use a closed SseParser", raised(p.feed, p, "x"))
      assert.equal("unsandbox.SseParser (closed)", tostring(p))
      assert.matches("bytes: string expected, got number", raised(core.sse_parser().feed, core.sse_parser(), 1))
      assert.matches("unknown option 'max'", raised(core.sse_parser, { max = 1 }))
      assert.matches("max_line: must be positive", raised(core.sse_parser, { max_line = 0 }))
      assert.matches("max_event: must not be negative", raised(core.sse_parser, { max_event = -1 }))
      assert.matches("max_line: integer expected, got string", raised(core.sse_parser, { max_line = "8" }))
      assert.matches("opts: table expected, got string", raised(core.sse_parser, "x"))
    end)

    it("keeps bytes as they are (NUL, invalid UTF-8)", function()
      local p = core.sse_parser()
      local ev = p:feed("data: a\0b\255\n\n")
      assert.equal("a\0b\255", ev[1].data)
      assert.is_nil(ev[1].id)
    end)
  end)
end)
