-- #integration specs of unsandboxd's integrity: a change that
-- races a deletion never brings the row back, bad input is a 400 before
-- any job exists, and a creation whose store write fails leaves nothing
-- behind. Races are two raw requests sent back to back on two sockets,
-- then both answers read; every loop is bounded.
local server = require "spec.helpers.unsandboxd"
local raw = require "spec.helpers.rawhttp"
local fs = require "spec.helpers.fs"
local core = require "unsandbox.core"
local json = require "cjson"

local function decode(body)
  local ok, v = pcall(json.decode, body or "")
  return ok and v or nil
end

local function call(c, method, path, body)
  local r, kind, msg = c:request(method, path, body and json.encode(body))
  assert(r, tostring(kind) .. ": " .. tostring(msg))
  return r.status, decode(r.body)
end

-- Sends a and b ({method, path, body}) at once; returns both statuses.
local function race(srv, a, b)
  local sa = raw.send(srv, a[1], a[2], a[3] and json.encode(a[3]), 30)
  local sb = raw.send(srv, b[1], b[2], b[3] and json.encode(b[3]), 30)
  local status_a = raw.read_response(sa)
  local status_b = raw.read_response(sb)
  sa:close()
  sb:close()
  return status_a, status_b
end

-- sqlite3 on the server's own database (the server keeps it open; WAL
-- lets another connection change it under the server, as a broken disk
-- or a bad migration would).
local function sql(srv, statement)
  local p = io.popen("sqlite3 " .. server.sh_quote(srv.data .. "/unsandboxd.db") .. " "
    .. server.sh_quote(statement) .. " 2>&1; echo EXIT=$?")
  local out = p:read("*a")
  p:close()
  local code = tonumber(out:match("EXIT=(%d+)%s*$"))
  assert(code == 0, out)
  return (out:gsub("EXIT=%d+%s*$", ""))
end

local function entries(dir)
  local list = {}
  local p = io.popen("ls -A " .. server.sh_quote(dir) .. " 2>/dev/null")
  for name in p:lines() do list[#list + 1] = name end
  p:close()
  return list
end

-- Processes whose command line contains marker.
local function processes_with(marker)
  local found = {}
  local p = io.popen("ls /proc")
  for pid in p:lines() do
    local cmd = pid:match("^%d+$") and fs.read("/proc/" .. pid .. "/cmdline")
    if cmd and cmd:gsub("%z", " "):find(marker, 1, true) then found[#found + 1] = tonumber(pid) end
  end
  p:close()
  return found
end

describe("unsandboxd under racing changes #integration", function()
  local srv, c
  setup(function()
    srv = server.start()
    c = core.client(srv.client_opts())
  end)
  teardown(function()
    c:close()
    srv.stop()
  end)

  it("a lock racing a DELETE never brings a deleted snapshot back", function()
    local _, ses = call(c, "POST", "/sessions", {})
    local deleted, resurrected, locked_first = 0, {}, 0
    for i = 1, 100 do
      local status, snap = call(c, "POST", "/sessions/" .. ses.session_id .. "/snapshot", { name = "r" .. i })
      assert.are.equal(201, status)
      local path = "/snapshots/" .. snap.id
      local del, lock = race(srv, { "DELETE", path }, { "POST", path .. "/lock", {} })
      local after = call(c, "GET", path)
      if del == 200 then
        deleted = deleted + 1
        if after ~= 404 then resurrected[#resurrected + 1] = snap.id .. " lock=" .. tostring(lock) end
      else
        -- the lock came first: the DELETE was refused and the snapshot stays, locked
        assert.are.equal(409, del)
        assert.are.equal(200, lock)
        assert.are.equal(200, after)
        locked_first = locked_first + 1
        assert.are.equal(200, (call(c, "POST", path .. "/unlock", {})))
        assert.are.equal(200, (call(c, "DELETE", path)))
      end
      assert.is_nil(io.open(srv.data .. "/snapshots/" .. snap.id .. ".tar.gz"), "archive left behind")
    end
    assert.are.same({}, resurrected)
    assert.is_true(deleted > 0, "no DELETE ever won")
    call(c, "DELETE", "/sessions/" .. ses.session_id)
  end)

  it("a shell command racing a DELETE never brings a deleted session back", function()
    local resurrected = {}
    for _ = 1, 40 do
      local _, ses = call(c, "POST", "/sessions", {})
      local path = "/sessions/" .. ses.session_id
      local shell, del = race(srv, { "POST", path .. "/shell", { command = "true" } }, { "DELETE", path })
      assert.are.equal(200, del)
      assert.is_truthy(shell == 200 or shell == 404, "shell answered " .. tostring(shell))
      local after = call(c, "GET", path)
      if after ~= 404 then resurrected[#resurrected + 1] = ses.session_id end
      assert.is_nil(io.open(srv.data .. "/sessions/" .. ses.session_id), "its volume is left")
    end
    assert.are.same({}, resurrected)
  end)

  it("of two DELETEs of one service exactly one answers 200", function()
    for _ = 1, 10 do
      local _, svc = call(c, "POST", "/services", { name = "twice", bootstrap_content = "exec sleep 600" })
      local path = "/services/" .. svc.service_id
      local got = { race(srv, { "DELETE", path }, { "DELETE", path }) }
      table.sort(got)
      assert.are.same({ 200, 404 }, got)
    end
  end)
end)

describe("unsandboxd refuses what it cannot run with a 400 #integration", function()
  local srv, c
  setup(function()
    srv = server.start()
    c = core.client(srv.client_opts())
  end)
  teardown(function()
    c:close()
    srv.stop()
  end)

  local function execute(extra)
    local body = { language = "bash", code = "printf %s \"${#BIG}\"" }
    for k, v in pairs(extra) do body[k] = v end
    return call(c, "POST", "/execute", body)
  end

  it("a variable of 128 KiB runs; one byte more, or over 256 KiB together, is a 400", function()
    local status, doc = execute { env = { BIG = string.rep("x", 128 * 1024 - 5) } }
    assert.are.equal(200, status)
    assert.are.equal("completed", doc.status)
    assert.are.equal(tostring(128 * 1024 - 5), doc.stdout)
    status, doc = execute { env = { BIG = string.rep("x", 128 * 1024 - 4) } }
    assert.are.equal(400, status)
    assert.matches("128 KiB", doc.message)
    status, doc = execute { env = { A = string.rep("x", 100000), B = string.rep("x", 100000),
                                    C = string.rep("x", 100000) } }
    assert.are.equal(400, status)
    assert.matches("256 KiB", doc.message)
  end)

  it("257 variables, a bad name or a NUL in a value is a 400", function()
    local many = {}
    for i = 1, 257 do many["V" .. i] = "x" end
    assert.are.equal(400, (execute { env = many }))
    for _, env in ipairs { { ["1X"] = "v" }, { ["A-B"] = "v" }, { [""] = "v" }, { A = "x\0y" } } do
      local status, doc = execute { env = env }
      assert.are.equal(400, status)
      assert.are.equal("bad_request", doc.error)
    end
  end)

  it("input files that cannot all be placed are a 400, not a failed job", function()
    local b64 = core.base64_encode("x")
    for _, names in ipairs { { "a", "a/b" }, { "a/b/c", "q", "a/b" }, { "same", "same" } } do
      local files = {}
      for i, n in ipairs(names) do files[i] = { filename = n, content = b64 } end
      local status, doc = execute { input_files = files }
      assert.are.equal(400, status, table.concat(names, ", "))
      assert.matches("input_files%[%d+%] and %[%d+%]", doc.message)
    end
    assert.are.equal(200, (execute { input_files = { { filename = "a/b", content = b64 },
                                                     { filename = "a/c", content = b64 } } }))
  end)

  it("file names over the shared limits are a 400", function()
    local b64 = core.base64_encode("x")
    local deep = string.rep("d/", 64) .. "f"
    local long = string.rep(string.rep("n", 255) .. "/", 16) .. "f"     -- 4097 bytes
    for _, name in ipairs { deep, long, string.rep("n", 256), "a/./b", "a\tb" } do
      local status = execute { input_files = { { filename = name, content = b64 } } }
      assert.are.equal(400, status, name:sub(1, 40))
    end
    local ok_deep = string.rep("d/", 63) .. "f"
    assert.are.equal(200, (execute { input_files = { { filename = ok_deep, content = b64 } } }))
  end)

  it("a stored session without network_mode runs its commands (zerotrust)", function()
    local _, ses = call(c, "POST", "/sessions", {})
    sql(srv, "UPDATE sessions SET doc = json_remove(doc, '$.network_mode') WHERE id = '"
      .. ses.session_id .. "'")
    local status, job = call(c, "POST", "/sessions/" .. ses.session_id .. "/shell", { command = "echo ok" })
    assert.are.equal(200, status)
    assert.are.equal("ok\n", job.stdout)
    call(c, "DELETE", "/sessions/" .. ses.session_id)
  end)
end)

describe("unsandboxd after a failed store write #integration", function()
  local srv, c
  before_each(function()
    srv = server.start()
    c = core.client(srv.client_opts())
  end)
  after_each(function()
    c:close()
    srv.stop()
  end)

  it("queues no job it could not store", function()
    sql(srv, "DROP TABLE jobs")
    local marker = "unsb-lost-job-" .. core.monotonic_ms() .. "-" .. srv.pid
    local status, doc = call(c, "POST", "/execute/async",
      { language = "bash", code = "sleep 30 # " .. marker })
    assert.are.equal(500, status)
    assert.matches("cannot store the job", doc.message)
    local _, list = call(c, "GET", "/jobs")
    assert.are.equal(0, list.count)
    assert.are.same({}, processes_with(marker))
  end)

  it("leaves no session volume behind", function()
    sql(srv, "DROP TABLE sessions")
    local status = call(c, "POST", "/sessions", {})
    assert.are.equal(500, status)
    assert.are.same({}, entries(srv.data .. "/sessions"))
  end)

  it("leaves no service volume and no bootstrap behind", function()
    sql(srv, "DROP TABLE services")
    local marker = "unsb-lost-service-" .. core.monotonic_ms() .. "-" .. srv.pid
    local status = call(c, "POST", "/services", { name = "lost", bootstrap_content = "sleep 600 # " .. marker })
    assert.are.equal(500, status)
    assert.are.same({}, entries(srv.data .. "/services"))
    assert.are.same({}, processes_with(marker))
  end)
end)
