-- #integration specs of bad input to the Control Plane's object routes
-- (spec §4.3, §5.3, §2): every locator rule with its text, inline content,
-- ticket parameters, bodies, hostile bytes in queries, and the queue-full
-- fault (503 with retry_after_seconds 2). After each group the server
-- still answers.
-- One Lua: the subject is the server's wire (raw HTTP).
local server = require "spec.helpers.unsandboxd"
local cp = require "spec.helpers.cp"
local rawhttp = require "spec.helpers.rawhttp"
local obj = require "spec.helpers.objects"
local json = require "cjson"
local wait = require "spec.helpers.wait"
local lua = require "spec.helpers.lua"

local req = cp.request
local OWNER = "t/alice"

describe("Control Plane object input #integration", function()
  local srv

  setup(function() srv = server.start {} end)
  teardown(function() if srv then srv.stop() end end)

  after_each(function()
    assert.are.equal(200, (req(srv, "GET", "/livez")))
  end)

  local DNS = " must be a lowercase DNS-style identifier"
  local locators = {
    { {}, "scope must be 'upload' or 'agent'" },
    { { scope = "uploads" }, "scope must be 'upload' or 'agent'" },
    { { scope = "upload", path = "source/a" }, "upload_id" .. DNS },
    { { scope = "upload", upload_id = "-x", path = "source/a" }, "upload_id" .. DNS },
    { { scope = "upload", upload_id = "a_b", path = "source/a" }, "upload_id" .. DNS },
    { { scope = "upload", upload_id = string.rep("a", 64), path = "source/a" }, "upload_id" .. DNS },
    { { scope = "agent", run_id = "r", path = "logs/a" }, "agent_id" .. DNS },
    { { scope = "agent", agent_id = "a", path = "logs/a" }, "run_id" .. DNS },
    { { scope = "agent", agent_id = "a", run_id = "r.1", path = "logs/a" }, "run_id" .. DNS },
    { { scope = "upload", upload_id = "u" }, "path is required" },
    { { scope = "upload", upload_id = "u", path = "." }, "path must name an object ('.' is only allowed for list)" },
    { { scope = "upload", upload_id = "u", path = "/source/a" }, "path must be relative" },
    { { scope = "upload", upload_id = "u", path = "source/../../../etc/passwd" }, "path must not contain '..'" },
    { { scope = "upload", upload_id = "u", path = "logs/a" }, "path must start with one of: source, derived, meta" },
    { { scope = "agent", agent_id = "a", run_id = "r", path = "source/a" },
      "path must start with one of: inputs, outputs, artifacts, logs, meta" },
    { { scope = "upload", upload_id = "u", path = "source/" .. string.rep("x", 510) },
      "path must be at most 512 bytes" },
    { { scope = "upload", upload_id = "u", path = "source/\255\254" }, "path must be valid UTF-8" },
  }

  it("refuses malformed locators in queries with the spec's texts", function()
    local wrong = {}
    for _, case in ipairs(locators) do
      local loc = obj.with(case[1], { owner = OWNER })
      for _, route in ipairs { "", "/stat", "/versions" } do
        local st, doc = obj.get(srv, srv.token, route, loc)
        if st ~= 400 or type(doc) ~= "table" or doc.error ~= case[2] then
          wrong[#wrong + 1] = route .. " " .. json.encode(case[1]) .. " -> " .. tostring(st) .. " " .. json.encode(doc)
        end
      end
    end
    assert.same({}, wrong)
    local st = obj.get(srv, srv.token, "", { scope = "upload", upload_id = "u", path = ".", owner = OWNER },
      { method = "DELETE" })
    assert.are.equal(400, st)
    -- list alone takes "." as the whole prefix
    assert.are.equal(200, (obj.get(srv, srv.token, "/list", { scope = "upload", upload_id = "u", path = ".",
      owner = OWNER })))
  end)

  it("refuses malformed locators and wrong types in bodies", function()
    for _, case in ipairs(locators) do
      if not case[1].path or lua.utf8_len(case[1].path) then   -- JSON carries only UTF-8
        local st, doc = obj.post(srv, srv.token, obj.with(case[1], { owner = OWNER }), "x")
        assert.are.equal(400, st, json.encode(case[1]))
        assert.are.equal(case[2], doc.error)
      end
    end
    local typed = {
      { { scope = "upload", upload_id = 7, path = "source/a" }, "upload_id" .. DNS },
      { { scope = "upload", upload_id = "u", path = { "source/a" } }, "path must be a string" },
      { { scope = true, upload_id = "u", path = "source/a" }, "scope must be 'upload' or 'agent'" },
      { { scope = "upload", upload_id = "u", path = "source/a", owner = 5 }, "owner must be a string" },
      { { scope = "upload", upload_id = "u", path = "source/a", owner = "no-slash" }, nil },
      { { scope = "upload", upload_id = "u", path = "source/a", owner = "a/b/c" }, nil },
    }
    for _, case in ipairs(typed) do
      local body = obj.with(case[1], { content_base64 = "eA==" })
      if not body.owner then body.owner = OWNER end
      local st, doc = req(srv, "POST", "/v1/storage/objects", { token = srv.token, body = body })
      assert.are.equal(400, st, json.encode(case[1]))
      if case[2] then assert.are.equal(case[2], doc.error) end
    end
    -- a NUL inside a JSON string: the frame's JSON reader refuses it already
    local st, doc = req(srv, "POST", "/v1/storage/objects", { token = srv.token,
      body = '{"scope":"upload","upload_id":"u","path":"source/a\\u0000b","owner":"t/alice","content_base64":"eA=="}' })
    assert.are.equal(400, st)
    assert.are.equal("request body must be valid JSON", doc.error)
  end)

  it("refuses bad inline content", function()
    local loc = { scope = "upload", upload_id = "u", path = "source/a", owner = OWNER }
    local st, doc = req(srv, "POST", "/v1/storage/objects", { token = srv.token, body = loc })
    assert.are.equal(400, st)
    assert.are.equal("content_base64 is required", doc.error)
    st, doc = req(srv, "POST", "/v1/storage/objects", { token = srv.token, body = obj.with(loc,
      { content_base64 = "!!!" }) })
    assert.are.equal(400, st)
    assert.are.equal("content_base64 must be valid base64", doc.error)
    st = req(srv, "POST", "/v1/storage/objects", { token = srv.token, body = obj.with(loc, { content_base64 = 5 }) })
    assert.are.equal(400, st)
    st = obj.post(srv, srv.token, loc, string.rep("z", 4 * 1024 * 1024 + 1))
    assert.are.equal(400, st)
    st, doc = obj.post(srv, srv.token, loc, "x", { extra = { sha256 = "xyz" } })
    assert.are.equal(400, st)
    assert.are.equal("sha256 must be 64 hexadecimal characters", doc.error)
    st = obj.post(srv, srv.token, loc, "x", { extra = { content_type = "Text/Plain; charset=x" } })
    assert.are.equal(400, st)
    st = obj.post(srv, srv.token, loc, "")
    assert.are.equal(201, st, "an empty object is fine")
    -- the body rules of §2
    st, doc = req(srv, "POST", "/v1/storage/objects", { token = srv.token, body = "{not json" })
    assert.are.equal(400, st)
    assert.are.equal("request body must be valid JSON", doc.error)
    st, doc = req(srv, "POST", "/v1/storage/objects", { token = srv.token, body = "[1]" })
    assert.are.equal(400, st)
    assert.are.equal("request body must be a JSON object", doc.error)
    st = req(srv, "POST", "/v1/storage/objects", { token = srv.token, body = "{}", raw_length = false })
    assert.are.equal(400, st)
  end)

  it("refuses bad ticket requests", function()
    local loc = { scope = "agent", agent_id = "a", run_id = "r", path = "outputs/x", owner = OWNER }
    local cases = {
      { {}, "operation is required" },
      { { operation = "delete" }, "operation must be 'upload' or 'download'" },
      { { operation = "upload", max_bytes = 0 } },
      { { operation = "upload", max_bytes = 64 * 1024 * 1024 + 1 } },
      { { operation = "upload", max_bytes = "10" } },
      { { operation = "upload", expires_in = 0 } },
      { { operation = "upload", expires_in = 901 } },
      { { operation = "upload", content_type = "text" } },
      { { operation = "upload", content_type = "text/plain; charset=utf-8" } },
      { { operation = "upload", sha256 = string.rep("g", 64) }, "sha256 must be 64 hexadecimal characters" },
    }
    for _, case in ipairs(cases) do
      local st, doc = obj.ticket(srv, srv.token, loc, case[1].operation, obj.with(case[1], {}))
      assert.are.equal(400, st, json.encode(case[1]))
      if case[2] then assert.are.equal(case[2], doc.error) end
    end
    local st, t = obj.ticket(srv, srv.token, loc, "upload", { max_bytes = 1, expires_in = 1,
      sha256 = string.rep("A", 64) })
    assert.are.equal(201, st, "the bounds themselves are accepted")
    assert.are.equal(string.rep("a", 64), obj.claims(t.access_token).sha256)
  end)

  it("refuses hostile tickets and bearer values on the content route", function()
    for _, bad in ipairs { "x", "a.b", "a.b.c", string.rep("A", 9000), "eyJ9.eyJ9" } do
      assert.are.equal(401, (obj.download(srv, bad)))
      assert.are.equal(401, (obj.upload(srv, bad, "x")))
    end
    assert.are.equal(401, (req(srv, "GET", "/v1/storage/content")))
    local _, lease = req(srv, "POST", "/v1/workspaces", { token = srv.token, body = { session_id = "tk",
      owner = OWNER } })
    assert.are.equal(401, (obj.download(srv, lease.access_token)))
  end)

  it("answers unknown objects 404 object not found on every route", function()
    local loc = { scope = "upload", upload_id = "none", path = "source/none", owner = OWNER }
    for _, r in ipairs { { "", "GET" }, { "/stat", "GET" }, { "/versions", "GET" }, { "", "DELETE" } } do
      local st, doc = obj.get(srv, srv.token, r[1], loc, { method = r[2] })
      assert.are.equal(404, st, r[2] .. " " .. r[1])
      assert.same({ error = "object not found" }, doc)
    end
    local _, t = obj.ticket(srv, srv.token, loc, "download")
    local st, doc = obj.download(srv, t.access_token)
    assert.are.equal(404, st)
    assert.same({ error = "object not found" }, doc)
  end)

  it("refuses a query argument holding %00", function()
    for _, route in ipairs { "", "/stat", "/versions", "/list" } do
      local st, doc = obj.get(srv, srv.token, route,
        { scope = "upload", upload_id = "u", path = "source/a\0/../../x", owner = OWNER })
      assert.are.equal(400, st, route)
      assert.are.equal("query arguments must not contain NUL", doc.error)
    end
    local st = obj.get(srv, srv.token, "", { scope = "upload", upload_id = "u\0x", path = "source/a", owner = OWNER },
      { method = "DELETE" })
    assert.are.equal(400, st)
  end)
end)

describe("Control Plane object queue #integration", function()
  local srv

  setup(function() srv = server.start { args = { "--cp-object-transfers", "1" } } end)
  teardown(function() if srv then srv.stop() end end)

  it("answers 503 with retry_after_seconds 2 while the queue is full, then recovers", function()
    local loc = { scope = "upload", upload_id = "q", path = "source/q", owner = OWNER }
    assert.are.equal(201, (obj.post(srv, srv.token, loc, "queued")))
    -- an upload that holds the only transfer slot, its body never finished;
    -- a poll may win the slot first (the upload then answers 503 at once),
    -- so each attempt checks that the upload got no answer before polling
    local s, busy
    for _ = 1, 20 do
      local _, t = obj.ticket(srv, srv.token, loc, "upload")
      s = rawhttp.connect({ port = srv.cp_port })
      s:send(rawhttp.head("PUT", "/v1/storage/content", { Authorization = "Bearer " .. t.access_token,
        ["Content-Length"] = "1000" }) .. "partial")
      -- polls until one is refused (the upload holds the slot), or the
      -- upload is answered (a poll held the slot when it came: try again)
      local got = wait.eventually(function()
        s:settimeout(0)
        local answered = s:receive("*l")
        s:settimeout(10)
        if answered then return "lost" end
        local st, doc, h = obj.get(srv, srv.token, "", loc)
        return st == 503 and { doc, h }
      end)
      if type(got) == "table" then busy = got; break end
      s:close()
    end
    assert.is_truthy(busy, "the queue never filled")
    assert.are.equal(2, busy[1].retry_after_seconds)
    assert.is_string(busy[1].error)
    assert.are.equal("2", busy[2]["retry-after"])
    local _, down = obj.ticket(srv, srv.token, loc, "download")
    assert.are.equal(503, (obj.download(srv, down.access_token)))
    assert.are.equal(200, (obj.get(srv, srv.token, "/stat", loc)), "metadata routes do not queue")
    s:close()
    local free = wait.eventually(function() return (obj.get(srv, srv.token, "", loc)) == 200 end)
    assert.is_true(free, "the slot came back")
    -- the slot is given back once a reply has gone out, so the next
    -- request may still meet it held: a spent ticket would never be 200
    local spent = wait.eventually(function()
      local st = obj.download(srv, down.access_token)
      return st ~= 503 and st
    end)
    assert.are.equal(200, spent, "the refused ticket was not spent")
    assert.are.equal(200, (req(srv, "GET", "/livez")))
  end)
end)
