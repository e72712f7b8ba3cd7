-- #integration specs of unsandboxd's own behaviour: authentication, input
-- validation, jobs, sessions, services, snapshots, fault injection,
-- limits, restart and shutdown. Signed requests go through the binding's
-- raw `core.client():request()`; requests whose auth headers must be
-- forged or omitted go over a plain luasocket connection.
-- One Lua: the subject is the server's flags and wire.
local server = require "spec.helpers.unsandboxd"
local core = require "unsandbox.core"
local json = require "cjson"
local socket = require "socket"
local rawhttp = require "spec.helpers.rawhttp"
local fs = require "spec.helpers.fs"
local wait = require "spec.helpers.wait"
local lua = require "spec.helpers.lua"
local read, alive = fs.read, fs.alive

local q = server.sh_quote

local function decode(body)
  local ok, v = pcall(json.decode, body)
  return ok and v or nil
end

local function client(srv, extra)
  return core.client(srv.client_opts(extra))
end

-- One signed request; returns the response and its decoded body.
local function call(c, method, path, body)
  local r, kind, msg = c:request(method, path, body and (type(body) == "string" and body or json.encode(body)))
  assert(r, tostring(kind) .. ": " .. tostring(msg))
  return r, decode(r.body)
end

-- Just the status of a signed request.
local function st(c, method, path, body)
  return (call(c, method, path, body)).status
end

-- A raw HTTP/1.1 exchange. headers: {name = value}; a Content-Length is
-- added for a body unless given. Returns status, headers (lower-case
-- names), body; or nil and the error when the connection broke.
local function raw(srv, method, path, headers, body, raw_head)
  local s = assert(socket.tcp())
  s:settimeout(10)
  assert(s:connect("127.0.0.1", srv.port))
  local lines = { method .. " " .. path .. " HTTP/1.1", "Host: 127.0.0.1", "Connection: close" }
  local has_len = false
  for k, v in pairs(headers or {}) do
    lines[#lines + 1] = k .. ": " .. v
    if k:lower() == "content-length" then has_len = true end
  end
  if body and not has_len then lines[#lines + 1] = "Content-Length: " .. #body end
  s:send(table.concat(lines, "\r\n") .. "\r\n" .. (raw_head or "") .. "\r\n" .. (body or ""))
  local data, err, partial = s:receive("*a")
  s:close()
  data = data or partial
  if not data or data == "" then return nil, err end
  local head, rest = data:match("^(.-)\r\n\r\n(.*)$")
  if not head then return nil, "no header end" end
  local status = tonumber(head:match("^HTTP/1%.%d (%d+)"))
  local hdrs = {}
  for k, v in head:gmatch("\r\n([^:\r\n]+):%s*([^\r\n]*)") do hdrs[k:lower()] = v end
  return status, hdrs, rest
end

-- Auth headers for a raw request; ts defaults to now.
local function auth_headers(pk, sk, method, path, body, ts)
  ts = tostring(ts or core.now())
  return {
    ["Authorization"] = "Bearer " .. pk,
    ["X-Timestamp"] = ts,
    ["X-Signature"] = core.sign(sk, ts, method, path, body),
  }
end

local TERMINAL = { completed = true, failed = true, timeout = true, cancelled = true }

local function wait_job(c, id, seconds)
  local doc
  wait.eventually(function()
    local r
    r, doc = call(c, "GET", "/jobs/" .. id)
    return r.status == 200 and TERMINAL[doc.status]
  end, seconds or 20, 0.1)
  return doc
end


local function mode_of(path)
  local p = io.popen("stat -c %a " .. q(path) .. " 2>/dev/null")
  local m = p:read("*l")
  p:close()
  return m
end


-- pids of processes whose parent is ppid, or whose cmdline contains marker
local function leftovers(ppid, marker)
  local found = {}
  local p = io.popen("ls /proc")
  for pid in p:lines() do
    if pid:match("^%d+$") then
      local status = read("/proc/" .. pid .. "/status") or ""
      local cmd = (read("/proc/" .. pid .. "/cmdline") or ""):gsub("%z", " ")
      if status:match("\nPPid:%s*" .. ppid .. "\n") or (marker and cmd:find(marker, 1, true)) then
        found[#found + 1] = pid .. " " .. cmd
      end
    end
  end
  p:close()
  return found
end

describe("unsandboxd #integration", function()
  local srv, c

  setup(function()
    srv = server.start { args = { "--enable-faults", "--sync-ms", "2000" } }
    c = client(srv)
  end)
  teardown(function()
    if c then c:close() end
    if srv then srv.stop() end
  end)
  after_each(function()
    if c then c:request("POST", "/_faults", '{"mode":"off"}') end
  end)

  describe("health and common headers", function()
    it("GET /health needs no auth and answers status and version", function()
      local status, h, body = raw(srv, "GET", "/health")
      assert.are.equal(200, status)
      local doc = decode(body)
      assert.are.equal("ok", doc.status)
      assert.is_string(doc.version)
      assert.are.equal("application/json", h["content-type"])
      assert.matches("^req_%x+$", h["x-request-id"])
    end)

    it("every answer, errors included, has a request id and JSON content type", function()
      for _, path in ipairs { "/jobs", "/nope", "/health" } do
        local status, h, body = raw(srv, "GET", path)
        assert.is_number(status)
        assert.matches("^req_%x+$", h["x-request-id"])
        assert.are.equal("application/json", h["content-type"])
        assert.is_table(decode(body))
      end
    end)

    it("replies are compact JSON with the scalar keys first", function()
      local r = call(c, "POST", "/execute", { language = "bash", code = "echo hi" })
      assert.are.equal(200, r.status)
      assert.matches('^{"job_id":"job_%x+","status":"completed",', r.body)
      assert.not_matches(": ", r.body)
      assert.matches('"stdout":"hi\\n"', r.body, 1, true)
    end)
  end)

  describe("authentication", function()
    local function expect_401(status, body, pattern)
      assert.are.equal(401, status)
      local doc = decode(body)
      assert.are.equal("unauthorized", doc.error)
      if pattern then assert.matches(pattern, doc.message) end
      return doc.message
    end

    it("no auth headers is 401", function()
      local status, _, body = raw(srv, "GET", "/jobs")
      expect_401(status, body)
      local r = assert(c:request("GET", "/jobs", nil, { auth = false }))
      assert.are.equal(401, r.status)
    end)

    it("an unknown key and a wrong signature get the same message", function()
      local unknown = client(srv, { public_key = "unsb-pk-aaaa-bbbb-cccc-dddd" })
      local wrong = client(srv, { secret_key = "unsb-sk-wrong-wrong-wrong-wrong" })
      local r1 = assert(unknown:request("GET", "/jobs"))
      local r2 = assert(wrong:request("GET", "/jobs"))
      unknown:close(); wrong:close()
      local m1 = expect_401(r1.status, r1.body, "invalid key or signature")
      local m2 = expect_401(r2.status, r2.body)
      assert.are.equal(m1, m2)
    end)

    it("a timestamp outside ±300 s is 401 whose message mentions the timestamp", function()
      for _, skew in ipairs { -301, 301, -3600 } do
        local ts = core.now() + skew
        local status, _, body = raw(srv, "GET", "/jobs",
          auth_headers(srv.public_key, srv.secret_key, "GET", "/jobs", nil, ts))
        expect_401(status, body, "timestamp")
      end
      -- within the window is fine
      local status = raw(srv, "GET", "/jobs",
        auth_headers(srv.public_key, srv.secret_key, "GET", "/jobs", nil, core.now() - 200))
      assert.are.equal(200, status)
    end)

    it("a malformed timestamp or Authorization header is 401", function()
      local h = auth_headers(srv.public_key, srv.secret_key, "GET", "/jobs")
      h["X-Timestamp"] = "12abc"
      local status, _, body = raw(srv, "GET", "/jobs", h)
      expect_401(status, body, "timestamp")
      h = auth_headers(srv.public_key, srv.secret_key, "GET", "/jobs")
      h["Authorization"] = "Basic " .. srv.public_key
      status, _, body = raw(srv, "GET", "/jobs", h)
      expect_401(status, body)
    end)

    it("a body changed after signing is 401", function()
      local signed = '{"language":"bash","code":"echo a"}'
      local sent = '{"language":"bash","code":"echo b"}'
      local h = auth_headers(srv.public_key, srv.secret_key, "POST", "/execute", signed)
      h["Content-Type"] = "application/json"
      local status, _, body = raw(srv, "POST", "/execute", h, sent)
      expect_401(status, body, "invalid key or signature")
    end)

    it("the signature covers the path without its query string", function()
      local h = auth_headers(srv.public_key, srv.secret_key, "GET", "/jobs")
      assert.are.equal(200, (raw(srv, "GET", "/jobs?all=true", h)))
      h = auth_headers(srv.public_key, srv.secret_key, "GET", "/jobs?all=true")
      assert.are.equal(401, (raw(srv, "GET", "/jobs?all=true", h)))
    end)

    it("unknown routes are 401 without auth too, so nothing is learnt", function()
      assert.are.equal(401, (raw(srv, "GET", "/secret-admin")))
    end)

    it("POST /keys/validate describes the key", function()
      local r, doc = call(c, "POST", "/keys/validate")
      assert.are.equal(200, r.status)
      assert.is_true(doc.valid)
      assert.are.equal(srv.public_key, doc.public_key)
      assert.are.equal("active", doc.status)
      assert.is_number(doc.concurrency)
    end)

    it("logs never hold secrets, signatures or bodies", function()
      call(c, "POST", "/execute", { language = "bash", code = "echo log-marker-body" })
      local log = read(srv.log)
      assert.not_matches(srv.secret_key, log, 1, true)
      assert.not_matches("log-marker-body", log, 1, true)
      assert.not_matches("%x" .. ("%x"):rep(63), log)
      assert.matches("POST /execute 200 %d+ms req_%x+", log)
    end)
  end)

  describe("bad input", function()
    local function expect_400(body, code, pattern)
      local r, doc = call(c, "POST", "/execute", body)
      assert.are.equal(400, r.status, r.body)
      assert.are.equal(code or "bad_request", doc.error)
      if pattern then assert.matches(pattern, doc.message) end
    end

    it("invalid JSON, an empty body and a non-object are 400", function()
      expect_400('{"language":', nil, "JSON")
      expect_400("", nil, "object")
      expect_400("[1,2]", nil, "object")
    end)

    it("missing fields are 400 naming the field", function()
      expect_400({ code = "echo" }, nil, "language")
      expect_400({ language = "bash" }, nil, "code")
    end)

    it("wrongly typed fields are 400", function()
      expect_400({ language = "bash", code = 1 }, nil, "code")
      expect_400({ language = "bash", code = "x", ttl = "60" }, nil, "ttl")
      expect_400({ language = "bash", code = "x", ttl = 1.5 }, nil, "ttl")
      expect_400({ language = "bash", code = "x", env = { "A=1" } }, nil, "env")
      expect_400({ language = "bash", code = "x", env = { A = 1 } }, nil, "env")
      expect_400({ language = "bash", code = "x", return_artifact = "yes" }, nil, "return_artifact")
      expect_400({ language = "bash", code = "x", input_files = "a" }, nil, "input_files")
    end)

    it("an unknown language is 400 unsupported_language", function()
      expect_400({ language = "brainfudge", code = "+" }, "unsupported_language")
    end)

    it("ttl outside 1-900, vcpu outside 1-8 and an unknown network_mode are 400", function()
      for _, ttl in ipairs { 0, 901, -5 } do expect_400({ language = "bash", code = "x", ttl = ttl }, nil, "ttl") end
      for _, v in ipairs { 0, 9 } do expect_400({ language = "bash", code = "x", vcpu = v }, nil, "vcpu") end
      expect_400({ language = "bash", code = "x", network_mode = "open" }, nil, "network_mode")
    end)

    it("invalid base64 content and escaping file names are 400", function()
      expect_400({ language = "bash", code = "x",
        input_files = { { filename = "a.txt", content = "!!not base64!!" } } }, nil, "base64")
      for _, name in ipairs { "../evil", "/etc/passwd", "a/../../b", "" } do
        expect_400({ language = "bash", code = "x",
          input_files = { { filename = name, content = "aGk=" } } }, nil, "file name")
      end
    end)

    it("a declared body over --max-body is 413 before it is read", function()
      local h = auth_headers(srv.public_key, srv.secret_key, "POST", "/execute", "")
      h["Content-Length"] = tostring(8 * 1024 * 1024 + 1)
      local status, _, body = raw(srv, "POST", "/execute", h)
      assert.are.equal(413, status)
      assert.are.equal("payload_too_large", decode(body).error)
    end)

    it("a chunked body growing over --max-body is 413", function()
      local sock = assert(socket.tcp())
      sock:settimeout(10)
      assert(sock:connect("127.0.0.1", srv.port))
      -- headers that authenticate (a body of unauthenticated ones is never
      -- kept: spec/memory_bounds_spec.lua); the size is judged before the
      -- signature
      local h = auth_headers(srv.public_key, srv.secret_key, "POST", "/execute", "")
      local lines = {}
      for k, v in pairs(h) do lines[#lines + 1] = k .. ": " .. v .. "\r\n" end
      sock:send("POST /execute HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n" ..
                table.concat(lines) .. "\r\n")
      local chunk = ("a"):rep(1024 * 1024)
      for _ = 1, 9 do sock:send(string.format("%x\r\n%s\r\n", #chunk, chunk)) end
      sock:send("0\r\n\r\n")
      local data = sock:receive("*a")
      sock:close()
      assert.matches("^HTTP/1.1 413", data)
      assert.matches("payload_too_large", data)
    end)

    it("unknown routes are 404 and wrong methods 405 with Allow", function()
      local r, doc = call(c, "GET", "/nope")
      assert.are.equal(404, r.status)
      assert.are.equal("not_found", doc.error)
      r, doc = call(c, "PUT", "/execute", "{}")
      assert.are.equal(405, r.status)
      assert.are.equal("method_not_allowed", doc.error)
      local status, h = raw(srv, "DELETE", "/languages",
        auth_headers(srv.public_key, srv.secret_key, "DELETE", "/languages"))
      assert.are.equal(405, status)
      assert.are.equal("GET", h["allow"])
    end)

    it("ids with characters outside [A-Za-z0-9._-] are 404", function()
      -- raw, so that no client normalises the path before it is signed
      for _, path in ipairs { "/jobs/a%2Fb", "/jobs/a%20b", "/jobs/..", "/sessions/x$y", "/jobs/",
                              "/snapshots/.", "/services/" .. ("a"):rep(200) } do
        local status = raw(srv, "GET", path, auth_headers(srv.public_key, srv.secret_key, "GET", path))
        assert.are.equal(404, status, path)
      end
    end)

    it("a header flood is refused and the server keeps answering", function()
      local flood = {}
      for i = 1, 2000 do flood[#flood + 1] = "X-Flood-" .. i .. ": " .. ("v"):rep(100) end
      local status = raw(srv, "GET", "/health", nil, nil, table.concat(flood, "\r\n") .. "\r\n")
      assert.is_true(status == nil or status == 431 or status == 413, tostring(status))
      assert.are.equal(200, (raw(srv, "GET", "/health")))
    end)

    it("after all that the server still executes code", function()
      local r, doc = call(c, "POST", "/execute", { language = "bash", code = "echo alive" })
      assert.are.equal(200, r.status)
      assert.are.equal("alive\n", doc.stdout)
    end)
  end)

  describe("execute and jobs", function()
    it("a finished job has the whole result; a non-zero exit is still completed", function()
      local r, doc = call(c, "POST", "/execute",
        { language = "bash", code = "echo out; echo err >&2; exit 3" })
      assert.are.equal(200, r.status)
      assert.are.equal("completed", doc.status)
      assert.are.equal(3, doc.exit_code)
      assert.are.equal("out\n", doc.stdout)
      assert.are.equal("err\n", doc.stderr)
      assert.are.equal(doc.execution_time_ms * 1000, doc.execution_time)
      assert.is_number(doc.created_at)
      assert.is_number(doc.completed_at)
      assert.are.equal(json.null, doc.error)
      -- the same document is kept for GET /jobs/{id}
      local r2, again = call(c, "GET", "/jobs/" .. doc.job_id)
      assert.are.equal(200, r2.status)
      assert.are.equal("out\n", again.stdout)
    end)

    it("env and input files reach the program; both artifact flags work", function()
      for _, flag in ipairs { "return_artifact", "return_artifacts" } do
        local _, doc = call(c, "POST", "/execute", {
          language = "bash", code = 'cat in.txt; echo "$GREETING"; echo made > out.txt',
          env = { GREETING = "hello" },
          input_files = { { filename = "in.txt", content = "ZmlsZQo=" } },
          [flag] = true })
        assert.are.equal("file\nhello\n", doc.stdout)
        assert.is_table(doc.artifacts, flag)
        local names = {}
        for _, a in ipairs(doc.artifacts) do names[a.filename] = a.content_base64 end
        assert.are.equal("bWFkZQo=", names["out.txt"], flag)
      end
    end)

    it("a job longer than --sync-ms answers pending, then finishes", function()
      local r, doc = call(c, "POST", "/execute", { language = "bash", code = "sleep 3; echo late" })
      assert.are.equal(200, r.status)
      assert.is_truthy(doc.status == "pending" or doc.status == "running")
      assert.matches("^job_%x+$", doc.job_id)
      assert.is_nil(doc.stdout)
      local final = wait_job(c, doc.job_id)
      assert.are.equal("completed", final.status)
      assert.are.equal("late\n", final.stdout)
    end)

    it("async jobs are listed while active and can be cancelled once", function()
      local r, doc = call(c, "POST", "/execute/async", { language = "bash", code = "sleep 30" })
      assert.are.equal(202, r.status)
      assert.are.equal("pending", doc.status)
      local id = doc.job_id
      local _, list = call(c, "GET", "/jobs")
      local seen = false
      for _, j in ipairs(list.jobs) do if j.job_id == id then seen = true end end
      assert.is_true(seen)
      assert.are.equal(#list.jobs, list.count)
      local r2, cancelled = call(c, "DELETE", "/jobs/" .. id)
      assert.are.equal(200, r2.status)
      assert.are.equal("cancelled", cancelled.status)
      local _, after = call(c, "GET", "/jobs/" .. id)
      assert.are.equal("cancelled", after.status)
      local r3, again = call(c, "DELETE", "/jobs/" .. id)
      assert.are.equal(409, r3.status)
      assert.are.equal("job_finished", again.error)
      assert.are.equal(404, st(c, "DELETE", "/jobs/job_000000000000000000000000"))
      assert.are.equal(404, st(c, "GET", "/jobs/job_000000000000000000000000"))
    end)

    it("a job killed at its ttl has status timeout", function()
      local _, doc = call(c, "POST", "/execute", { language = "bash", code = "sleep 20", ttl = 1 })
      assert.are.equal("timeout", doc.status)
    end)

    it("GET /languages lists what runs here", function()
      local r, doc = call(c, "GET", "/languages")
      assert.are.equal(200, r.status)
      assert.are.equal(#doc.languages, doc.count)
      local has_bash = false
      for _, l in ipairs(doc.languages) do if l == "bash" then has_bash = true end end
      assert.is_true(has_bash)
    end)

    it("another key sees none of this key's jobs", function()
      local _, doc = call(c, "POST", "/execute", { language = "bash", code = "true" })
      local out = io.popen(q(server.bin) .. " keys add --data " .. q(srv.data)):read("*a")
      local pk = out:match("UNSANDBOX_PUBLIC_KEY=(%S+)")
      local sk = out:match("UNSANDBOX_SECRET_KEY=(%S+)")
      local other = client(srv, { public_key = pk, secret_key = sk })
      local r = assert(other:request("GET", "/jobs/" .. doc.job_id))
      other:close()
      assert.are.equal(404, r.status)
    end)
  end)

  describe("sessions", function()
    it("keep files between shell commands and are listed until deleted", function()
      local r, s = call(c, "POST", "/sessions",
        { input_files = { { filename = "seed.txt", content = "c2VlZAo=" } } })
      assert.are.equal(201, r.status)
      assert.matches("^unsb%-session%-", s.session_id)
      assert.are.equal(s.id, s.session_id)
      assert.are.equal("running", s.status)
      assert.are.equal("bash", s.shell)
      local id = s.session_id
      local r1, out1 = call(c, "POST", "/sessions/" .. id .. "/shell",
        { command = "cat seed.txt; echo kept > note.txt" })
      assert.are.equal(200, r1.status)
      assert.are.equal("seed\n", out1.stdout)
      local _, out2 = call(c, "POST", "/sessions/" .. id .. "/shell", { command = "cat note.txt" })
      assert.are.equal("kept\n", out2.stdout)
      assert.are.equal(0, out2.exit_code)
      local _, list = call(c, "GET", "/sessions")
      assert.are.equal(list.count, #list.sessions)
      local _, one = call(c, "GET", "/sessions/" .. id)
      assert.is_number(one.remaining_ttl)
      local rd, del = call(c, "DELETE", "/sessions/" .. id)
      assert.are.equal(200, rd.status)
      assert.are.equal("deleted", del.status)
      assert.are.equal(404, st(c, "GET", "/sessions/" .. id))
      assert.are.equal(404, st(c, "POST", "/sessions/" .. id .. "/shell", { command = "true" }))
      assert.is_nil(read(srv.data .. "/sessions/" .. id .. "/work/note.txt"))
    end)

    it("validate their options", function()
      assert.are.equal(400, st(c, "POST", "/sessions", { network_mode = "wide" }))
      assert.are.equal(400, st(c, "POST", "/sessions", { vcpu = 12 }))
      assert.are.equal(400, st(c, "POST", "/sessions", "{oops"))
    end)
  end)

  describe("snapshots", function()
    it("restore replaces the whole work directory; locked ones cannot be deleted", function()
      local _, s = call(c, "POST", "/sessions", {})
      local id = s.session_id
      call(c, "POST", "/sessions/" .. id .. "/shell",
        { command = "echo one > a.txt; mkdir -p d; echo deep > d/b.txt" })
      local r, snap = call(c, "POST", "/sessions/" .. id .. "/snapshot", { name = "first" })
      assert.are.equal(201, r.status)
      assert.matches("^unsb%-snapshot%-", snap.id)
      assert.are.equal("session", snap.source_type)
      assert.are.equal(id, snap.source_id)
      assert.are.equal("ready", snap.status)
      assert.is_true(snap.size_bytes > 0)
      assert.is_false(snap.locked)

      call(c, "POST", "/sessions/" .. id .. "/shell",
        { command = "echo two > a.txt; rm -r d; echo new > extra.txt" })
      local rr, restored = call(c, "POST", "/snapshots/" .. snap.id .. "/restore")
      assert.are.equal(200, rr.status)
      assert.are.equal("restored", restored.status)
      local _, after = call(c, "POST", "/sessions/" .. id .. "/shell",
        { command = "cat a.txt d/b.txt; ls" })
      assert.are.equal("one\ndeep\na.txt\nd\n", after.stdout)
      -- nothing half-applied or left behind next to the volume
      local p = io.popen("ls -a " .. q(srv.data .. "/sessions/" .. id))
      local entries = p:read("*a")
      p:close()
      assert.are.equal(".\n..\ndisk.img\nwork\n", entries)

      local rl, locked = call(c, "POST", "/snapshots/" .. snap.id .. "/lock")
      assert.are.equal(200, rl.status)
      assert.is_true(locked.locked)
      local rdl, denied = call(c, "DELETE", "/snapshots/" .. snap.id)
      assert.are.equal(409, rdl.status)
      assert.are.equal("locked", denied.error)
      local _, unlocked = call(c, "POST", "/snapshots/" .. snap.id .. "/unlock")
      assert.is_false(unlocked.locked)
      local _, list = call(c, "GET", "/snapshots")
      assert.are.equal(list.count, #list.snapshots)
      local rd = call(c, "DELETE", "/snapshots/" .. snap.id)
      assert.are.equal(200, rd.status)
      assert.are.equal(404, st(c, "GET", "/snapshots/" .. snap.id))
      assert.is_nil(read(srv.data .. "/snapshots/" .. snap.id .. ".tar.gz"))
      call(c, "DELETE", "/sessions/" .. id)
    end)

    it("a hostile archive is refused and the target is left untouched", function()
      local _, s = call(c, "POST", "/sessions", {})
      local id = s.session_id
      call(c, "POST", "/sessions/" .. id .. "/shell", { command = "echo safe > keep.txt" })
      local _, snap = call(c, "POST", "/sessions/" .. id .. "/snapshot", {})
      -- replace the stored archive with one whose entry climbs out
      local evil = server.tmpdir("unsb-evil")
      os.execute("mkdir -p " .. evil .. "/x && echo pwned > " .. evil .. "/x/pwned.txt")
      os.execute("tar -czf " .. q(srv.data .. "/snapshots/" .. snap.id .. ".tar.gz")
        .. " -C " .. evil .. "/x --transform 's,^,../../,' pwned.txt 2>/dev/null")
      server.rm_rf(evil)
      local r = call(c, "POST", "/snapshots/" .. snap.id .. "/restore")
      assert.are.equal(500, r.status)
      local _, out = call(c, "POST", "/sessions/" .. id .. "/shell", { command = "cat keep.txt" })
      assert.are.equal("safe\n", out.stdout)
      assert.is_nil(read(srv.data .. "/sessions/pwned.txt"))
      assert.is_nil(read(srv.data .. "/pwned.txt"))
      call(c, "DELETE", "/snapshots/" .. snap.id)
      call(c, "DELETE", "/sessions/" .. id)
    end)

    it("unknown snapshots and sources are 404", function()
      assert.are.equal(404, st(c, "GET", "/snapshots/unsb-snapshot-nope"))
      assert.are.equal(404, st(c, "POST", "/snapshots/unsb-snapshot-nope/restore"))
      assert.are.equal(404, st(c, "POST", "/sessions/unsb-session-nope/snapshot", {}))
    end)
  end)

  describe("services", function()
    it("run their bootstrap, show its log, execute commands as jobs, and go away", function()
      local r, svc = call(c, "POST", "/services", {
        name = "web", ports = { 8080 },
        bootstrap_content = "echo booted; echo state > state.txt; sleep 600" })
      assert.are.equal(201, r.status)
      assert.matches("^unsb%-service%-", svc.service_id)
      assert.are.equal("running", svc.state)
      assert.are.equal("running", svc.status)
      assert.are.same({ 8080 }, svc.ports)
      local id = svc.service_id
      local log
      wait.eventually(function()
        local _, l = call(c, "GET", "/services/" .. id .. "/logs")
        log = l.log
        return log:match("booted")
      end)
      assert.matches("booted", log)
      local re, job = call(c, "POST", "/services/" .. id .. "/execute", { command = "cat state.txt" })
      assert.are.equal(202, re.status)
      assert.matches("^job_", job.job_id)
      local done = wait_job(c, job.job_id)
      assert.are.equal("completed", done.status)
      assert.are.equal("state\n", done.stdout)
      local _, list = call(c, "GET", "/services")
      assert.are.equal(list.count, #list.services)
      local rd, del = call(c, "DELETE", "/services/" .. id)
      assert.are.equal(200, rd.status)
      assert.are.equal("deleted", del.status)
      assert.are.equal(id, del.service_id)
      assert.are.equal(404, st(c, "GET", "/services/" .. id))
      -- its directory goes with it
      assert.is_nil(io.open(srv.data .. "/services/" .. id))
    end)

    it("a service whose bootstrap ended is stopped and refuses execute with 409", function()
      local _, svc = call(c, "POST", "/services", { name = "brief", bootstrap_content = "echo bye" })
      local id = svc.service_id
      local state
      wait.eventually(function()
        local _, s = call(c, "GET", "/services/" .. id)
        state = s.state
        return state == "stopped"
      end)
      assert.are.equal("stopped", state)
      local r, doc = call(c, "POST", "/services/" .. id .. "/execute", { command = "true" })
      assert.are.equal(409, r.status)
      assert.are.equal("service_not_running", doc.error)
      call(c, "DELETE", "/services/" .. id)
    end)

    it("can be snapshotted and restored", function()
      local _, svc = call(c, "POST", "/services", { name = "snappy" })
      local id = svc.service_id
      wait_job(c, select(2, call(c, "POST", "/services/" .. id .. "/execute",
        { command = "echo v1 > v.txt" })).job_id)
      local r, snap = call(c, "POST", "/services/" .. id .. "/snapshot", {})
      assert.are.equal(201, r.status)
      assert.are.equal("service", snap.source_type)
      wait_job(c, select(2, call(c, "POST", "/services/" .. id .. "/execute",
        { command = "echo v2 > v.txt" })).job_id)
      assert.are.equal(200, st(c, "POST", "/snapshots/" .. snap.id .. "/restore"))
      local done = wait_job(c, select(2, call(c, "POST", "/services/" .. id .. "/execute",
        { command = "cat v.txt" })).job_id)
      assert.are.equal("v1\n", done.stdout)
      call(c, "DELETE", "/snapshots/" .. snap.id)
      call(c, "DELETE", "/services/" .. id)
    end)

    it("bootstrap URLs and bad ports are 400", function()
      assert.are.equal(400, st(c, "POST", "/services", { bootstrap = "https://example.com/x.sh" }))
      assert.are.equal(400, st(c, "POST", "/services", { ports = { 0 } }))
      assert.are.equal(400, st(c, "POST", "/services", { ports = "80" }))
    end)
  end)

  describe("fault injection (enabled)", function()
    local function arm(f)
      local r, doc = call(c, "POST", "/_faults", f)
      assert.are.equal(200, r.status, r.body)
      return doc
    end

    it("status answers the chosen status for count requests on the path", function()
      local doc = arm { mode = "status", status = 502, count = 2, path = "/languages" }
      assert.are.equal("status", doc.armed)
      assert.are.equal(2, doc.count)
      assert.are.equal(200, st(c, "GET", "/jobs"))
      local r, body = call(c, "GET", "/languages")
      assert.are.equal(502, r.status)
      assert.are.equal("injected", body.error)
      assert.are.equal(502, st(c, "GET", "/languages"))
      assert.are.equal(200, st(c, "GET", "/languages"))
    end)

    it("malformed answers 200 with a body that is not JSON", function()
      arm { mode = "malformed" }
      local r = call(c, "GET", "/jobs")
      assert.are.equal(200, r.status)
      assert.is_nil(decode(r.body))
    end)

    it("poll404 answers 404 only to job polls", function()
      local _, job = call(c, "POST", "/execute", { language = "bash", code = "true" })
      arm { mode = "poll404", count = 1 }
      assert.are.equal(200, st(c, "GET", "/jobs"))
      assert.are.equal(404, st(c, "GET", "/jobs/" .. job.job_id))
      assert.are.equal(200, st(c, "GET", "/jobs/" .. job.job_id))
    end)

    it("latency delays the answer", function()
      arm { mode = "latency", ms = 600 }
      local t0 = core.monotonic_ms()
      assert.are.equal(200, st(c, "GET", "/jobs"))
      assert.is_true(core.monotonic_ms() - t0 >= 550)
    end)

    it("drop cuts the body short and closes the connection", function()
      arm { mode = "drop" }
      local r, kind = c:request("GET", "/jobs")
      assert.is_nil(r)
      assert.are.equal("transport", kind)
      assert.are.equal(200, st(c, "GET", "/jobs"))
    end)

    it("defer makes POST /execute answer pending at once", function()
      arm { mode = "defer" }
      local r, doc = call(c, "POST", "/execute", { language = "bash", code = "echo deferred" })
      assert.are.equal(200, r.status)
      assert.is_truthy(doc.status == "pending" or doc.status == "running")
      assert.are.equal("deferred\n", wait_job(c, doc.job_id).stdout)
    end)

    it("off clears every armed fault; unknown modes are 400", function()
      arm { mode = "status", count = 5 }
      arm { mode = "off" }
      assert.are.equal(200, st(c, "GET", "/jobs"))
      assert.are.equal(400, st(c, "POST", "/_faults", { mode = "explode" }))
      assert.are.equal(401, (c:request("POST", "/_faults", '{"mode":"off"}', { auth = false })).status)
    end)
  end)
end)

describe("unsandboxd without --enable-faults #integration", function()
  it("has no /_faults route", function()
    local srv = server.start()
    local c = client(srv)
    local r = call(c, "POST", "/_faults", { mode = "status", count = 1 })
    local after = call(c, "GET", "/jobs")
    c:close()
    srv.stop()
    assert.are.equal(404, r.status)
    assert.are.equal(200, after.status)
  end)
end)

describe("unsandboxd limits, restart and shutdown #integration", function()
  -- Kills srv as a crash would (SIGKILL) and starts a server on its data
  -- directory, which the caller removes at the end (server.rm_rf).
  local function crash_and_restart(srv, c)
    c:close()
    os.execute("kill -9 " .. srv.pid)
    wait.eventually(function() return not alive(srv.pid) end, 5)
    srv.stop(true)
    local again = server.start { data = srv.data }
    return again, client(again)
  end

  it("a full pool answers 429 with the counts and Retry-After: 1", function()
    local srv = server.start { args = { "--workers", "1", "--queue", "1" } }
    local c = client(srv)
    local ids, refused = {}, nil
    for _ = 1, 4 do
      local r, doc = call(c, "POST", "/execute/async", { language = "bash", code = "sleep 20" })
      if r.status == 202 then ids[#ids + 1] = doc.job_id else refused = { r = r, doc = doc }; break end
    end
    for _, id in ipairs(ids) do call(c, "DELETE", "/jobs/" .. id) end
    local after = call(c, "POST", "/execute", { language = "bash", code = "echo free" })
    c:close()
    srv.stop()
    assert.are.equal(2, #ids)
    assert.is_not_nil(refused)
    assert.are.equal(429, refused.r.status)
    assert.are.equal(1, refused.r.retry_after)
    assert.are.equal("concurrency_limit_reached", refused.doc.error)
    assert.are.equal(2, refused.doc.active_executions)
    assert.are.equal(2, refused.doc.concurrency_limit)
    assert.are.equal(200, after.status)
  end)

  it("keeps finished results across a restart; unfinished jobs become failed", function()
    local srv = server.start()
    local c = client(srv)
    local _, done = call(c, "POST", "/execute", { language = "bash", code = "echo persisted" })
    assert.are.equal("completed", done.status)
    c:close()
    srv.stop(true)

    srv = server.start { data = srv.data }
    c = client(srv)
    local _, again = call(c, "GET", "/jobs/" .. done.job_id)
    assert.are.equal("completed", again.status)
    assert.are.equal("persisted\n", again.stdout)
    -- a crash (SIGKILL) while a job runs
    local _, running = call(c, "POST", "/execute/async", { language = "bash", code = "sleep 30" })
    -- the crash comes once the job really runs (its status says so)
    local status
    wait.eventually(function()
      status = select(2, call(c, "GET", "/jobs/" .. running.job_id)).status
      return status == "running"
    end)
    assert.are.equal("running", status)
    srv, c = crash_and_restart(srv, c)
    local _, lost = call(c, "GET", "/jobs/" .. running.job_id)
    local _, kept = call(c, "GET", "/jobs/" .. done.job_id)
    local _, list = call(c, "GET", "/jobs")
    c:close()
    srv.stop()
    server.rm_rf(srv.data)
    os.remove(srv.log)
    assert.are.equal("failed", lost.status)
    assert.are.equal("server restarted", lost.error)
    assert.are.equal("persisted\n", kept.stdout)
    assert.are.equal(0, list.count)
  end)

  -- a synchronous run's row is written only once its id is given out
  -- (jobs.h): a pending answer after --sync-ms gives it out
  it("a synchronous run answered as pending is stored: a crash leaves it failed", function()
    local srv = server.start { args = { "--sync-ms", "300" } }
    local c = client(srv)
    local r, pending = call(c, "POST", "/execute", { language = "bash", code = "sleep 30" })
    assert.are.equal(200, r.status)
    assert.is_string(pending.job_id)
    assert.are_not.equal("completed", pending.status)
    srv, c = crash_and_restart(srv, c)
    local got, lost = call(c, "GET", "/jobs/" .. pending.job_id)
    -- and one that ended within the wait is stored final, in one write
    local _, quick = call(c, "POST", "/execute", { language = "bash", code = "echo quick" })
    local _, again = call(c, "GET", "/jobs/" .. quick.job_id)
    c:close()
    srv.stop()
    server.rm_rf(srv.data)
    os.remove(srv.log)
    assert.are.equal(200, got.status)
    assert.are.equal("failed", lost.status)
    assert.are.equal("server restarted", lost.error)
    assert.are.equal("completed", again.status)
    assert.are.equal("quick\n", again.stdout)
  end)

  -- a listing gives the ids of synchronous runs still waiting out too
  it("a synchronous run seen in GET /jobs is stored: a crash leaves it failed", function()
    local srv = server.start()
    local c = client(srv)
    -- another client waits on the run (the server dies under it)
    local waiter = string.format("LUA_PATH='lua/?.lua;lua/?/init.lua;;' LUA_CPATH='lua/?.so;;' lua5.4 -e %s "
      .. ">/dev/null 2>&1 &", server.sh_quote(string.format(
        "require('unsandbox').client{url=%q, public_key=%q, secret_key=%q}:execute_code('bash', 'sleep 30')",
        srv.url, srv.public_key, srv.secret_key)))
    assert(lua.sh(waiter))
    local listed = wait.eventually(function()
      local _, list = call(c, "GET", "/jobs")
      return list.jobs[1]
    end)
    assert.is_table(listed, "the waiting run was never listed")
    srv, c = crash_and_restart(srv, c)
    local _, lost = call(c, "GET", "/jobs/" .. listed.job_id)
    c:close()
    srv.stop()
    server.rm_rf(srv.data)
    os.remove(srv.log)
    assert.are.equal("failed", lost.status)
    assert.are.equal("server restarted", lost.error)
  end)

  it("keeps its data private: directory 0700, database 0600", function()
    local srv = server.start()
    local dmode, fmode = mode_of(srv.data), mode_of(srv.data .. "/unsandboxd.db")
    srv.stop()
    assert.are.equal("700", dmode)
    assert.are.equal("600", fmode)
  end)

  it("SIGTERM with a running job exits 0 quickly and leaves no process behind", function()
    local srv = server.start()
    local c = client(srv)
    -- unique to this server: another suite on the machine may run this spec at once
    local marker = "37." .. srv.pid
    local r, doc = call(c, "POST", "/execute/async", { language = "bash", code = "sleep " .. marker })
    assert.are.equal(202, r.status)
    wait.eventually(function()
      local _, j = call(c, "GET", "/jobs/" .. doc.job_id)
      return j.status == "running" and #leftovers(-1, "sleep " .. marker) > 0
    end, 20, 0.1)
    assert.is_true(#leftovers(-1, "sleep " .. marker) > 0, "the job never started")
    c:close()
    os.execute("kill -TERM " .. srv.pid)
    -- bounded far above the shutdown's own limits (the drain): a server
    -- that does not stop fails here, a slow machine does not
    wait.eventually(function() return not alive(srv.pid) end, 30)
    local still = alive(srv.pid)
    local left = leftovers(srv.pid, "sleep " .. marker)
    local log = read(srv.log) or ""
    srv.stop()
    assert.is_false(still, "server still running")
    assert.are.same({}, left)
    assert.matches("stopped", log)
  end)

  it("an in-flight request is answered during shutdown", function()
    local srv = server.start { args = { "--sync-ms", "60000" } }
    local c = client(srv)
    -- the request waits in the server for its job; once the job is seen
    -- running (a second connection asks), SIGTERM cancels it
    local s = rawhttp.send(srv, "POST", "/execute", '{"language":"bash","code":"sleep 30"}', 60)
    local running = wait.eventually(function()
      local _, list = call(c, "GET", "/jobs")
      return list.jobs[1] and list.jobs[1].status == "running"
    end)
    assert.is_true(running, "the job never ran")
    os.execute("kill -TERM " .. srv.pid)
    local status, _, body = rawhttp.read_response(s)
    s:close()
    c:close()
    srv.stop()
    assert.is_not_nil(status, "no answer")
    local doc = decode(body)
    assert.are.equal(200, status)
    assert.are.equal("failed", doc.status)
    assert.matches("shutting down", doc.error)
  end)
end)

describe("unsandboxd command line #integration", function()
  local function run(args)
    local p = io.popen(q(server.bin) .. " " .. args .. " 2>&1; echo EXIT=$?")
    local out = p:read("*a")
    p:close()
    return out:gsub("EXIT=%d+%s*$", ""), tonumber(out:match("EXIT=(%d+)%s*$"))
  end

  it("keys add prints a new pair in the documented shapes", function()
    local dir = server.tmpdir("unsb-keys")
    local out, code = run("keys add --data " .. q(dir))
    assert.are.equal(0, code)
    assert.matches("^UNSANDBOX_PUBLIC_KEY=unsb%-pk%-%w%w%w%w%-%w%w%w%w%-%w%w%w%w%-%w%w%w%w\n", out)
    assert.matches("\nUNSANDBOX_SECRET_KEY=unsb%-sk%-%w%w%w%w%w%-%w%w%w%w%w%-%w%w%w%w%w%-%w%w%w%w%w\n$", out)
    local out2 = run("keys add --data " .. q(dir))
    assert.are_not.equal(out, out2)
    assert.are.equal("600", mode_of(dir .. "/unsandboxd.db"))
    server.rm_rf(dir)
  end)

  it("--version and --help exit 0; bad flags exit 2 with a message", function()
    local out, code = run("--version")
    assert.are.equal(0, code)
    assert.matches("^unsandboxd %d", out)
    out, code = run("--help")
    assert.are.equal(0, code)
    assert.matches("%-%-listen", out)
    for _, args in ipairs { "--bogus", "--data /tmp/x --workers 0", "--data /tmp/x --sync-ms soon",
                            "", "keys", "keys add", "--data /tmp/x extra" } do
      out, code = run(args)
      assert.are.equal(2, code, args)
      assert.matches("unsandboxd", out, 1, true)
    end
  end)

  it("listens on IPv6 loopback when asked", function()
    local dir = server.tmpdir("unsb-v6")
    local p = io.popen(q(server.bin) .. " --listen '[::1]:0' --data " .. q(dir)
      .. " 2>/dev/null & echo PID=$!")
    local pid = p:read("*l"):match("PID=(%d+)")
    local line = p:read("*l")
    os.execute("kill -TERM " .. pid)
    p:close()
    server.rm_rf(dir)
    assert.matches("^UNSANDBOX_URL=http://%[::1%]:%d+$", line)
  end)
end)
