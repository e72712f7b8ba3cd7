-- #integration specs of fair shares on one machine, Control Plane side
-- (docs/internals.md, "Sharing one machine" / "Fair shares"): one tenant
-- attacks, another must still be served. A tenant whose code stops its
-- runtime's agent (SIGSTOP: the code shares the agent's uid) and then
-- sends 600 file requests stops only itself: its runtime is declared
-- dead by the health deadline, its requests are answered fast, and it
-- never holds every handler thread, so the other tenant and /livez are
-- answered throughout. A tenant's uploads hold its share of the object
-- transfer gate, not the gate: another tenant's inline put goes through.
-- Both at the default limits, and the share of agent calls once more
-- with a small one, so that it is reached while the agent still answers. Sockets go to 127.0.0.1 only; every loop
-- is bounded in count and time.
-- One Lua: the subject is the server's wire (raw HTTP).
local server = require "spec.helpers.unsandboxd"
local cp = require "spec.helpers.cp"
local mcp = require "spec.helpers.mcp"
local obj = require "spec.helpers.objects"
local raw = require "spec.helpers.rawhttp"
local fs = require "spec.helpers.fs"
local json = require "cjson"
local socket = require "socket"
local wait = require "spec.helpers.wait"

local function decode(body)
  local ok, v = pcall(json.decode, body or "")
  return ok and v or nil
end

-- A request of the Control Plane sent on a fresh socket, not read yet.
local function send(srv, method, path, token, headers, body, length)
  local s = assert(socket.tcp())
  s:settimeout(60)
  assert(s:connect("127.0.0.1", srv.cp_port))
  local h = { Authorization = "Bearer " .. token, Connection = "close" }
  for k, v in pairs(headers or {}) do h[k] = v end
  if body or length then h["Content-Length"] = tostring(length or #body) end
  assert(s:send(raw.head(method, path, h) .. (body or "")))
  return s
end

-- The answers of socks as they come, each with the seconds since t0 it
-- took (one blocking read per socket, each bounded by its timeout).
local function answers(socks, t0)
  local out = {}
  for i, s in ipairs(socks) do
    local status, _, body = raw.read_response(s)
    out[i] = { status = status, doc = decode(body), t = socket.gettime() - t0 }
    s:close()
  end
  return out
end

local function count(list, pred)
  local n = 0
  for _, a in ipairs(list) do if pred(a) then n = n + 1 end end
  return n
end

describe("fair shares: a tenant that stops its own agent #integration", function()
  local srv, a_key, b_key

  setup(function()
    srv = server.start {}
    a_key = cp.tenant_key(srv, "tenant-a")
    b_key = cp.tenant_key(srv, "tenant-b")
  end)
  teardown(function() if srv then srv.stop() end end)

  it("stops only itself: 600 file requests on a stopped agent leave the other tenant and /livez answered"
    .. " (default limits)", function()
    local ws_a, sb_a = mcp.sandbox(srv, "stopper", a_key)
    local ws_b, sb_b = mcp.sandbox(srv, "bystander", b_key)
    -- the agent is the parent of the handler that runs the command
    mcp.sh(srv, sb_a, "kill -STOP $(cut -d' ' -f4 /proc/$PPID/stat)")
    local t0 = socket.gettime()
    local list_a = "/v1/workspaces/" .. ws_a.workspace_id .. "/files/list"
    local held = {}
    for i = 1, 600 do held[i] = send(srv, "GET", list_a, ws_a.access_token) end
    -- meanwhile: the other tenant's file reads and shell, and the probes
    local other, livez = {}, {}
    local list_b = "/v1/workspaces/" .. ws_b.workspace_id .. "/files/list"
    for i = 1, 10 do
      other[#other + 1] = (cp.request(srv, "GET", list_b, { token = ws_b.access_token }))
      livez[#livez + 1] = (cp.request(srv, "GET", "/livez"))
      if i % 5 == 0 then
        local out = mcp.sh(srv, sb_b, "echo still-here")
        other[#other + 1] = out == "still-here\n" and 200 or out
      end
    end
    local got = answers(held, t0)
    -- the stopped runtime is failed, and says why
    local _, sb = cp.request(srv, "GET", "/v1/sandboxes/" .. sb_a.id, { token = a_key })
    local after_b = mcp.sh(srv, sb_b, "echo after")
    for _, st in ipairs(other) do assert.are.equal(200, st) end
    for _, st in ipairs(livez) do assert.are.equal(200, st) end
    assert.are.equal("after\n", after_b)
    assert.are.equal("failed", sb.status)
    -- a ping unanswered in time, or one that cannot even be sent: the
    -- stopped agent's control channel is full of the requests
    assert.matches("runtime " .. sb_a.id .. " failed: its agent ", fs.read(srv.log) or "", 1, true)
    -- every request of the stopper answered: over its share 429 at once,
    -- the rest once its runtime was declared dead (502), or, after that,
    -- 409 (no running runtime); none by the per-call timeout (504) and
    -- none 503 for want of a handler thread
    -- (how many are 429 depends on how many arrive before the runtime is
    -- declared dead; the share itself is the next test's)
    local refused = count(got, function(a) return a.status == 429 end)
    local gone = count(got, function(a) return a.status == 502 or a.status == 409 end)
    assert.are.equal(600, refused + gone, json.encode(got[1]))
    for _, a in ipairs(got) do
      if a.status == 429 then
        assert.are.equal("agent call limit reached for tenant tenant-a; retry later", a.doc.error)
      end
    end
    -- (a call that waited for its own 45 s deadline would be a 504: none is,
    -- they all end when the health checks declare the runtime dead)
  end)
end)

describe("fair shares: agent calls of one tenant (--cp-tenant-calls 4) #integration", function()
  local srv, a_key, b_key

  setup(function()
    srv = server.start { args = { "--cp-tenant-calls", "4" } }
    a_key = cp.tenant_key(srv, "tenant-a")
    b_key = cp.tenant_key(srv, "tenant-b")
  end)
  teardown(function() if srv then srv.stop() end end)

  it("four long calls hold the tenant's share: its fifth is 429, the other tenant's are answered", function()
    local ws_a, sb_a = mcp.sandbox(srv, "busy-a", a_key)
    local ws_b = mcp.sandbox(srv, "calm-b", b_key)
    local long = {}
    for i = 1, 4 do
      local body = json.encode(mcp.body("tools/call", { name = "shell", arguments = {
        command = "touch /workspace/started-" .. i .. "; sleep 25", timeout_seconds = 30 } }))
      local h = mcp.headers("tools/call", "shell", false)
      h["Content-Type"] = "application/json"
      long[i] = send(srv, "POST", sb_a.mcp_url, sb_a.access_token, h, body)
    end
    -- ready once all four run: seen through the admin's own share
    local list_a = "/v1/workspaces/" .. ws_a.workspace_id .. "/files/list"
    local running = 0
    wait.eventually(function()
      local st, doc = cp.request(srv, "GET", list_a, { token = srv.token })
      running = 0
      for _, e in ipairs(st == 200 and doc.entries or {}) do
        if e.name:match("^started%-") then running = running + 1 end
      end
      return running == 4
    end, 20)
    local st_a, doc_a, h_a = cp.request(srv, "GET", list_a, { token = ws_a.access_token })
    local st_b = cp.request(srv, "GET", "/v1/workspaces/" .. ws_b.workspace_id .. "/files/list",
      { token = ws_b.access_token })
    local st_live = cp.request(srv, "GET", "/livez")
    for _, s in ipairs(long) do s:close() end
    assert.are.equal(4, running, "the four calls never all ran")
    assert.are.equal(429, st_a, json.encode(doc_a))
    assert.are.same({ error = "agent call limit reached for tenant tenant-a; retry later" }, doc_a)
    assert.are.equal("1", h_a["retry-after"])
    assert.are.equal(200, st_b)
    assert.are.equal(200, st_live)
  end)
end)

describe("fair shares: object transfers of one tenant #integration", function()
  local srv, a_key, b_key
  local SUBJECT = string.rep("a", 32)

  setup(function()
    srv = server.start {}
    a_key = cp.tenant_key(srv, "tenant-a", { act_as_subjects = true })
    b_key = cp.tenant_key(srv, "tenant-b", { act_as_subjects = true })
  end)
  teardown(function() if srv then srv.stop() end end)

  it("64 trickled uploads hold the tenant's 48, and the other tenant's inline put goes through (default limits)",
    function()
    local subject = { ["X-Acting-Subject"] = SUBJECT }
    local size, piece = 256 * 1024, ("u"):rep(16 * 1024)
    local tickets = {}
    for i = 1, 64 do
      local st, t = obj.ticket(srv, a_key, { scope = "upload", upload_id = "up-" .. i, path = "source/f" },
        "upload", { max_bytes = size }, subject)
      assert.are.equal(201, st, json.encode(t))
      tickets[i] = t.access_token
    end
    local ups = {}
    for i = 1, 64 do
      local s = send(srv, "PUT", "/v1/storage/content", tickets[i],
        { ["Content-Type"] = "application/octet-stream" }, nil, size)
      ups[i] = { s = s, sent = 0 }
    end
    -- keeps every upload above the minimum body rate: a piece each round
    local function feed()
      for _, u in ipairs(ups) do
        if not u.done and u.sent < size - #piece then
          u.s:settimeout(0)
          local n, _, partial = u.s:send(piece)
          u.sent = u.sent + (n or partial or 0)
        end
      end
    end
    -- the refused ones are answered before their body is read
    local refused = {}
    wait.eventually(function()
      feed()
      for i, u in ipairs(ups) do
        if not u.done then
          u.s:settimeout(0)
          local line = u.s:receive("*l")
          if line then
            u.done = true
            u.s:settimeout(5)
            local h = {}
            for _ = 1, 50 do
              local l = u.s:receive("*l")
              if not l or l == "" then break end
              local k, v = l:match("^([^:]+):%s*(.*)$")
              if k then h[k:lower()] = v end
            end
            local body = u.s:receive(tonumber(h["content-length"] or 0))
            refused[#refused + 1] = { i = i, status = tonumber(line:match(" (%d+)")), doc = decode(body) }
          end
        end
      end
      return #refused >= 16
    end, 20, 0.1)
    -- while the tenant holds its share, the other tenant puts inline
    local st_b, put_b = obj.post(srv, b_key, { scope = "upload", upload_id = "b-1", path = "source/g" },
      "from b", { headers = subject })
    -- the held uploads complete
    local done = 0
    for _, u in ipairs(ups) do
      if not u.done then
        u.s:settimeout(30)
        local rest = size - u.sent
        if rest > 0 then u.s:send(("u"):rep(rest)) end
        local status = raw.read_response(u.s)
        if status == 201 then done = done + 1 end
      end
      u.s:close()
    end
    -- a refused ticket was not spent: it works once there is room
    local retry = refused[1] and obj.upload(srv, tickets[refused[1].i], ("r"):rep(10))
    assert.are.equal(16, #refused)
    for _, r in ipairs(refused) do
      assert.are.equal(429, r.status)
      assert.are.equal("object transfer limit reached for tenant tenant-a; retry later", r.doc.error)
    end
    assert.are.equal(201, st_b, json.encode(put_b))
    assert.are.equal(48, done)
    assert.are.equal(201, retry)
  end)

  it("refuses bad share flags with exit 2", function()
    for _, args in ipairs { "--cp-tenant-transfers x", "--cp-tenant-transfers -1", "--cp-tenant-calls 0" } do
      local out, rc = server.run(args)
      assert.are.equal(2, rc, out)
      assert.matches(args:match("^(%S+)"), out, 1, true)
    end
  end)
end)
