-- #integration specs that play the memory attacks on unsandboxd's
-- transport against a real server and show the defence (docs/internals.md,
-- "Sharing one machine", "Memory"):
--   - 80 unauthenticated connections holding 7 MiB of an 8 MiB body each:
--     no body is buffered before its headers authenticate, so the server's
--     RSS stays flat (it grew by 560 MiB and more when bodies were buffered
--     first), other clients are answered, and every one of them gets the
--     same 401 as a bad signature once its body is in;
--   - a request whose headers cannot authenticate is refused before its
--     body comes, on both APIs;
--   - 30 slow readers of one 20 MB job document and 60 of a 4 MiB inline
--     object: the reply is streamed from the store or the disk, each reader
--     holds a bounded buffer, so RSS stays flat.
-- RSS bounds are generous and independent of speed: they measure memory,
-- never time. Every socket goes to 127.0.0.1; every wait is bounded.
local server = require "spec.helpers.unsandboxd"
local raw = require "spec.helpers.rawhttp"
local cp = require "spec.helpers.cp"
local obj = require "spec.helpers.objects"
local slow = require "spec.helpers.slow"
local core = require "unsandbox.core"
local json = require "cjson"
local socket = require "socket"
local wait = require "spec.helpers.wait"

local MiB = 1024 * 1024
local rss_kb = slow.rss_kb

local function decode(body)
  local ok, v = pcall(json.decode, body or "")
  return ok and v or nil
end

describe("memory of the transport under attack #integration", function()
  local srv, c

  setup(function()
    -- one tenant may take the whole object transfer gate here: the specs
    -- measure memory, not the tenants' shares (fair_shares_cp_spec does)
    srv = server.start { args = { "--cp-tenant-transfers", "64" } }
    c = core.client(srv.client_opts())
  end)
  teardown(function()
    if c then c:close() end
    if srv then srv.stop() end
  end)

  describe("bodies before authentication", function()
    it("80 unauthenticated 8 MiB bodies, 7 MiB in and held: RSS stays flat, others are answered", function()
      for _ = 1, 5 do assert.are.equal(200, assert(c:request("GET", "/languages")).status) end
      local idle = rss_kb(srv.pid)
      local socks = slow.hold_bodies(srv, 80)
      assert.is_true(slow.wait_drained(srv.port), "the server never took the bodies")
      local held = rss_kb(srv.pid)
      -- another client is served while the 80 hold their connections
      local r = assert(c:request("POST", "/execute", json.encode { language = "bash", code = "echo ok" }))
      assert.are.equal(200, r.status)
      assert.are.equal("ok\n", decode(r.body).stdout)
      local probe = raw.connect(srv, 10)
      probe:send(raw.head("GET", "/health", { Connection = "close" }))
      assert.are.equal(200, (raw.read_response(probe)))
      probe:close()
      -- one of them completes its body: the same 401 a bad signature gets
      local last = socks[80]
      for _ = 1, 16 do assert(last:send(slow.PIECE)) end
      local status, _, body = raw.read_response(last)
      slow.close(socks)
      assert.are.equal(401, status)
      assert.are.equal("invalid key or signature", decode(body).message)
      print(("# 80 unauthenticated bodies held: RSS %d KiB idle, %d KiB held"):format(idle, held))
      -- 80 x 7 MiB = 560 MiB were held when bodies were buffered first
      assert.is_true(held - idle < 64 * 1024,
        ("RSS grew by %d KiB (idle %d KiB) while 80 unauthenticated bodies held 560 MiB")
          :format(held - idle, idle))
    end)

    it("headers that cannot authenticate are refused before the body comes, on both APIs", function()
      -- declared bodies that are never sent: the answer cannot wait for them
      local cases = {
        { srv.port, raw.head("POST", "/execute", { ["Content-Length"] = tostring(8 * MiB) }),
          401, "missing Authorization" },
        { srv.port, raw.head("POST", "/execute", { ["Authorization"] = "Bearer unsb-pk-x",
          ["X-Timestamp"] = "12", ["X-Signature"] = "00", ["Content-Length"] = tostring(8 * MiB) }),
          401, "timestamp" },
        { srv.cp_port, raw.head("POST", "/v1/workspaces", { ["Authorization"] = "Bearer not-a-key",
          ["Content-Length"] = tostring(6 * MiB) }), 401, "unauthorized" },
        { srv.cp_port, raw.head("POST", "/v1/nowhere", { ["Content-Length"] = tostring(6 * MiB) }),
          404, "not found" },
      }
      for i, case in ipairs(cases) do
        local s = assert(socket.tcp())
        s:settimeout(20)
        assert(s:connect("127.0.0.1", case[1]))
        assert(s:send(case[2]))
        local status, _, body = raw.read_response(s)
        s:close()
        assert.are.equal(case[3], status, "case " .. i .. ": " .. tostring(body))
        local doc = decode(body) or {}
        assert.matches(case[4], doc.message or doc.error or "", 1, true)
      end
      -- and a valid bearer still gets its body read (the body rules come after)
      local st, doc = cp.request(srv, "POST", "/v1/workspaces", { token = srv.token, body = "{nope" })
      assert.are.equal(400, st)
      assert.are.equal("request body must be valid JSON", doc.error)
    end)

    it("an unknown key and a wrong signature get the same answer, both after their body", function()
      local body = json.encode { language = "bash", code = "echo hidden" }
      local s = raw.connect(srv, 10)
      assert(s:send(slow.unknown_key_head("/execute", #body) .. body))
      local st1, _, b1 = raw.read_response(s)
      s:close()
      local h = raw.signed(srv, "POST", "/execute", "a different body")
      h["Content-Length"] = tostring(#body)
      s = raw.connect(srv, 10)
      assert(s:send(raw.head("POST", "/execute", h) .. body))
      local st2, _, b2 = raw.read_response(s)
      s:close()
      assert.are.same({ 401, "invalid key or signature" }, { st1, decode(b1).message })
      assert.are.same({ 401, "invalid key or signature" }, { st2, decode(b2).message })
      -- a chunked body of an unknown key is thrown away the same way
      s = raw.connect(srv, 10)
      local head = slow.unknown_key_head("/execute", 0):gsub("Content%-Length: 0\r\n", "Transfer-Encoding: chunked\r\n")
      assert(s:send(head .. string.format("%x\r\n%s\r\n0\r\n\r\n", #body, body)))
      local st3, _, b3 = raw.read_response(s)
      s:close()
      assert.are.same({ 401, "invalid key or signature" }, { st3, decode(b3).message })
    end)
  end)
  describe("slow readers", function()
    it("30 slow readers of a 20 MB job document: the reply streams from the store, RSS stays flat", function()
      local path, job = slow.big_job(c, json)
      local whole = assert(c:request("GET", path))
      assert.is_true(#whole.body > 20 * 1000 * 1000, "a document of " .. #whole.body .. " bytes")
      local idle = rss_kb(srv.pid)
      local readers = slow.slow_readers(srv.port, 30, function()
        return raw.head("GET", path, raw.signed(srv, "GET", path, ""))
      end)
      local held = rss_kb(srv.pid)
      -- others are answered meanwhile
      assert.are.equal(200, assert(c:request("GET", "/jobs")).status)
      -- and a slow reader that reads on gets the whole document (the
      -- newest one: the server closes a reply that moved no byte for 30 s,
      -- which the first may reach while the others connect on a busy machine)
      local body = slow.read_rest(readers[#readers])
      slow.close(readers)
      print(("# 30 slow readers of a %d-byte job document: RSS %d KiB idle, %d KiB held")
        :format(#whole.body, idle, held))
      assert.are.equal(#whole.body, #body)
      assert.is_true(body == whole.body, "the streamed document is the stored one")
      assert.are.equal(job.job_id, decode(body).job_id)
      assert.is_true(held - idle < 64 * 1024,
        ("RSS grew by %d KiB while 30 readers held a 20 MB document each"):format(held - idle))
    end)

    it("60 slow readers of a 4 MiB inline object: streamed from its file, RSS stays flat", function()
      local loc = { scope = "upload", upload_id = "slow-1", path = "source/big.bin", owner = "t/slow" }
      local data = string.rep("0123456789abcdef", 4 * MiB / 16)
      local st, put = obj.post(srv, srv.token, loc, data)
      assert.are.equal(201, st, json.encode(put))
      local path = "/v1/storage/objects" .. obj.query(loc)
      local _, whole, _, whole_raw = cp.request(srv, "GET", path, { token = srv.token })
      assert.are.equal(put.sha256, whole.sha256)
      local idle = rss_kb(srv.pid)
      local readers = slow.slow_readers(srv.cp_port, 60, function()
        return raw.head("GET", path, { Authorization = "Bearer " .. srv.token })
      end)
      local held = rss_kb(srv.pid)
      assert.are.equal(200, (cp.request(srv, "GET", "/livez")))
      local body = slow.read_rest(readers[1])
      slow.close(readers)
      print(("# 60 slow readers of a %d-byte inline object reply: RSS %d KiB idle, %d KiB held")
        :format(#whole_raw, idle, held))
      assert.is_true(body == whole_raw, "the streamed reply is the whole one")
      assert.are.equal(core.base64_encode(data), decode(body).content_base64)
      assert.is_true(held - idle < 64 * 1024,
        ("RSS grew by %d KiB while 60 readers held a 4 MiB object each"):format(held - idle))
    end)

    it("a slow reader of an inline object holds its transfer slot until it has read it all", function()
      local gated = server.start { args = { "--cp-object-transfers", "2", "--cp-tenant-transfers", "2" } }
      local ok, err = pcall(function()
        local loc = { scope = "upload", upload_id = "gate-1", path = "source/big.bin", owner = "t/gate" }
        assert.are.equal(201, (obj.post(gated, gated.token, loc, string.rep("z", 4 * MiB))))
        local path = "/v1/storage/objects" .. obj.query(loc)
        local readers = slow.slow_readers(gated.cp_port, 2, function()
          return raw.head("GET", path, { Authorization = "Bearer " .. gated.token })
        end)
        local st, doc = cp.request(gated, "GET", path, { token = gated.token })
        assert.are.same({ 503, "object transfer queue is full; retry later", 2 },
          { st, doc.error, doc.retry_after_seconds })
        slow.close(readers)
        wait.eventually(function()            -- the slots come back once the readers are gone
          st = cp.request(gated, "GET", path, { token = gated.token })
          return st == 200
        end)
        assert.are.equal(200, st)
      end)
      gated.stop()
      assert(ok, err)
    end)
  end)
end)
