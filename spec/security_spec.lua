-- Attacks on unsandboxd by code it runs, written as an attacker would,
-- with nothing but the API: sandboxed code controls its work tree and
-- races every root-side operation on it (ARCHITECTURE.md, "Files a
-- sandbox can touch"). Each attack targets things the test itself made:
-- a root-only canary directory under /tmp, listeners on loopback.
-- Every loop is bounded in count and time.
local server = require "spec.helpers.unsandboxd"
local core = require "unsandbox.core"
local json = require "cjson"
local fs = require "spec.helpers.fs"
local proc = require "spec.helpers.proc"
local wait = require "spec.helpers.wait"

local q = fs.quote

local function decode(body)
  local ok, v = pcall(json.decode, body)
  return ok and v or nil
end

local function call(c, method, path, body, opts)
  local r, kind, msg = c:request(method, path, body and json.encode(body), opts)
  if not r then return nil, nil, tostring(kind) .. ": " .. tostring(msg) end
  return r, decode(r.body)
end

local function ok_call(c, method, path, body)
  local r, doc, err = call(c, method, path, body)
  assert(r, err)
  assert(r.status >= 200 and r.status < 300,
    method .. " " .. path .. " answered " .. r.status .. ": " .. r.body)
  return doc
end

-- A root-only directory with `n` files f0..f(n-1), each holding `token`.
local function make_canary(n)
  local dir = fs.tmpdir("unsb-canary")
  os.execute("chmod 700 " .. q(dir))
  local token = "CANARY-" .. core.base64_encode(tostring(os.time()) .. dir):gsub("[^%w]", "")
  for i = 0, n - 1 do fs.write(dir .. "/f" .. i, token .. "\n") end
  os.execute("chmod 600 " .. q(dir) .. "/f*")
  return dir, token
end

local function count_files(dir)
  local p = io.popen("ls -A " .. q(dir))
  local n = 0
  for _ in p:lines() do n = n + 1 end
  p:close()
  return n
end

-- pids of processes whose command line contains marker
local function processes_with(marker)
  local found = {}
  local p = io.popen("ls /proc")
  for pid in p:lines() do
    if pid:match("^%d+$") then
      local cmd = (fs.read("/proc/" .. pid .. "/cmdline") or ""):gsub("%z", " ")
      if cmd:find(marker, 1, true) then found[#found + 1] = pid .. " " .. cmd end
    end
  end
  p:close()
  return found
end

-- Whether service id's log holds text (the bootstraps' readiness signal).
local function log_has(c, id, text)
  local r, doc = call(c, "GET", "/services/" .. id .. "/logs")
  return r and r.status == 200 and doc.log:find(text, 1, true) ~= nil
end

-- The work tree of a swapper: directory d with n files, symlink l to the
-- canary, and a python loop exchanging d and l with renameat2 as fast as
-- it can. `marker` ends up on the loop's command line.
local function swapper_script(canary, n, marker)
  return table.concat({
    "mkdir -p d",
    "i=0; while [ $i -lt " .. n .. " ]; do echo innocent > d/f$i; i=$((i+1)); done",
    "ln -sfn " .. q(canary) .. " l",
    -- "swapping" in the service's log says the loop has begun
    "exec python3 -c 'import ctypes\nlibc = ctypes.CDLL(None)\nlibc.renameat2(-100, b\"d\", -100, b\"l\", 2)\n" ..
      "print(\"swapping\", flush=True)\nwhile True: libc.renameat2(-100, b\"d\", -100, b\"l\", 2)' " .. marker,
  }, "\n")
end

local function archive_text(path)
  local p = io.popen("tar -xzOf " .. q(path) .. " 2>/dev/null")
  local s = p:read("*a")
  p:close()
  return s
end

describe("security: the work tree is hostile #integration", function()
  local srv, c, canary, token

  setup(function()
    srv = server.start { args = { "--sync-ms", "20000" } }
    c = core.client(srv.client_opts { timeout = 60000 })
  end)
  teardown(function()
    if c then c:close() end
    if srv then srv.stop() end
  end)
  -- a fresh canary per attack, so one attack's damage never hides another's
  before_each(function() canary, token = make_canary(300) end)
  after_each(function() fs.rm_rf(canary) end)

  it("snapshots taken while the tree swaps a directory for a symlink to a host directory never hold host files",
    function()
    local marker = "swap-snap-" .. os.time() .. "-" .. srv.pid   -- unique across suites run at once
    local svc = ok_call(c, "POST", "/services", { bootstrap_content = swapper_script(canary, 300, marker) })
    assert.is_truthy(wait.eventually(function() return #processes_with(marker) > 0 end, 20), "swapper never started")
    local leaked = {}
    for i = 1, 20 do
      local snap = ok_call(c, "POST", "/services/" .. svc.id .. "/snapshot", {})
      local text = archive_text(srv.data .. "/snapshots/" .. snap.id .. ".tar.gz")
      assert.matches("innocent", text, 1, true)     -- the tree itself is there
      if text:find(token, 1, true) then leaked[#leaked + 1] = i end
      ok_call(c, "DELETE", "/snapshots/" .. snap.id)
    end
    ok_call(c, "DELETE", "/services/" .. svc.id)
    assert.same({}, leaked)
    assert.are.equal(300, count_files(canary))
  end)

  it("deleting services while their trees swap never deletes host files, and leaves no process or directory", function()
    local marker = "swap-del-" .. os.time() .. "-" .. srv.pid   -- unique across suites run at once
    local ids = {}
    for i = 1, 4 do
      local svc = ok_call(c, "POST", "/services", { bootstrap_content = swapper_script(canary, 300, marker .. i) })
      ids[#ids + 1] = svc.id
    end
    for _, id in ipairs(ids) do
      assert.is_truthy(wait.eventually(function() return log_has(c, id, "swapping") end, 30), "swapper never started")
    end
    for _, id in ipairs(ids) do ok_call(c, "DELETE", "/services/" .. id) end
    assert.are.equal(300, count_files(canary))
    assert.is_truthy(wait.eventually(function() return #processes_with(marker) == 0 end, 15),
      table.concat(processes_with(marker), "\n"))
    for _, id in ipairs(ids) do
      assert.is_nil(io.open(srv.data .. "/services/" .. id), id .. " left its directory")
    end
  end)

  it("restoring over a tree that swaps never deletes host files", function()
    local marker = "swap-restore-" .. os.time() .. "-" .. srv.pid   -- unique across suites run at once
    local svc = ok_call(c, "POST", "/services", { bootstrap_content = swapper_script(canary, 300, marker) })
    assert.is_truthy(wait.eventually(function() return #processes_with(marker) > 0 end, 20), "swapper never started")
    local snap = ok_call(c, "POST", "/services/" .. svc.id .. "/snapshot", {})
    for _ = 1, 5 do
      local r = call(c, "POST", "/snapshots/" .. snap.id .. "/restore", {})
      assert.is_truthy(r)
      assert.are.equal(300, count_files(canary))
    end
    ok_call(c, "DELETE", "/services/" .. svc.id)
    assert.are.equal(300, count_files(canary))
  end)

  it("a log file turned into a FIFO never blocks the server", function()
    local svc = ok_call(c, "POST", "/services", { bootstrap_content =
      "rm -f .unsandbox-service.log\nmkfifo .unsandbox-service.log\necho fifo made\nexec sleep 600" })
    assert.is_truthy(wait.eventually(function() return log_has(c, svc.id, "fifo made") end, 30),
      "the FIFO was never made")
    -- a blocked open would never answer: each request is bounded by its
    -- own timeout (a transport error then), not by a wall-clock guess
    for _ = 1, 3 do
      local r, doc, err = call(c, "GET", "/services/" .. svc.id .. "/logs", nil, { timeout = 15000 })
      assert.is_truthy(r, err)
      assert.are.equal(200, r.status)
      assert.matches("fifo made", doc.log)
    end
    local r, _, err = call(c, "DELETE", "/services/" .. svc.id, nil, { timeout = 15000 })
    assert.is_truthy(r, err)
    assert.are.equal(200, r.status)
    assert.are.equal(200, (call(c, "GET", "/health")).status)
  end)

  it("a file swapped for a FIFO during a snapshot never blocks it", function()
    local svc = ok_call(c, "POST", "/services", { bootstrap_content = table.concat({
      "mkdir -p d; i=0; while [ $i -lt 50 ]; do echo x > d/f$i; i=$((i+1)); done",
      "echo looping",
      "while true; do rm -f d/f7; mkfifo d/f7; rm -f d/f7; echo x > d/f7; done" }, "\n") })
    assert.is_truthy(wait.eventually(function() return log_has(c, svc.id, "looping") end, 30), "the loop never began")
    for _ = 1, 10 do
      local r, _, err = call(c, "POST", "/services/" .. svc.id .. "/snapshot", {}, { timeout = 15000 })
      assert.is_truthy(r, err)
      assert.are.equal(201, r.status)
    end
    ok_call(c, "DELETE", "/services/" .. svc.id)
  end)

  it("a deleted session's running commands are killed and its directory is gone", function()
    local ses = ok_call(c, "POST", "/sessions", {})
    local marker = "ses-del-" .. os.time() .. "-" .. srv.pid   -- unique across suites run at once
    -- a second process holds the blocking shell call while this one deletes
    local bg = string.format([[
      local core = require "unsandbox.core"
      local c = core.client{ url = %q, public_key = %q, secret_key = %q, timeout = 60000 }
      c:request("POST", "/sessions/%s/shell", '{"command":"exec sleep 60 # %s","timeout":60000}')
    ]], srv.url, srv.public_key, srv.secret_key, ses.id, marker)
    os.execute(proc.env_prefix(proc.LUA_ENV) .. "lua5.4 -e " .. q(bg) .. " >/dev/null 2>&1 </dev/null &")
    assert.is_truthy(wait.eventually(function() return #processes_with(marker) > 0 end, 20), "command never started")
    ok_call(c, "DELETE", "/sessions/" .. ses.id)
    assert.is_truthy(wait.eventually(function() return #processes_with("sleep 60 # " .. marker) == 0 end, 15),
      table.concat(processes_with(marker), "\n"))
    assert.is_nil(io.open(srv.data .. "/sessions/" .. ses.id))
  end)
end)

describe("security: disk is bounded #integration", function()
  local srv, c

  setup(function()
    srv = server.start { args = { "--disk-mb", "64", "--sync-ms", "60000" } }
    c = core.client(srv.client_opts { timeout = 120000 })
  end)
  teardown(function()
    if c then c:close() end
    if srv then srv.stop() end
  end)

  local FILL = "i=0; while [ $i -lt 10 ]; do head -c 67108864 /dev/zero > big$i || break; i=$((i+1)); done;"
    .. " echo wrote $i"

  it("reports its disk mode and sizes in GET /health", function()
    local r = assert(c:request("GET", "/health", nil, { auth = false }))
    local d = json.decode(r.body).isolation.disk
    assert.are.equal("loop", d.mode)
    assert.are.equal(64, d.volume_mb)
    assert.is_true(d.budget_mb > 0)
  end)

  it("a session cannot write more than its disk", function()
    local ses = ok_call(c, "POST", "/sessions", {})
    local res = ok_call(c, "POST", "/sessions/" .. ses.id .. "/shell", { command = FILL, timeout = 60000 })
    assert.matches("No space left on device", res.stderr)
    assert.matches("wrote [01]\n", res.stdout)
    local p = io.popen("du -sk " .. q(srv.data))
    local used = tonumber(p:read("*a"):match("^(%d+)"))
    p:close()
    assert.is_true(used < 100 * 1024, "data directory grew to " .. used .. " KiB")
    ok_call(c, "DELETE", "/sessions/" .. ses.id)
  end)

  it("an execute run cannot write more than its work directory holds", function()
    local res = ok_call(c, "POST", "/execute", { language = "bash", code = FILL })
    assert.are.equal("completed", res.status)
    assert.matches("No space left on device", res.stderr)
    assert.matches("wrote [01]\n", res.stdout)
  end)
end)

describe("security: no root-side path walk of a sandbox tree #unit", function()
  -- The design: one module walks sandbox-writable trees, by descriptor
  -- only (sandbox/tree.c), and the heavy work (archives) runs inside a
  -- sandbox. Path walkers must not come back anywhere in the server.
  local FORBIDDEN = { "nftw", "[^%w_]ftw%(", "fts_open", "archive_read_disk",
                      "archive_write_disk", "ux_rm_rf", "ux_read_tail", "[^%w_]opendir%(" }
  it("the server's sources call no path-walking function", function()
    local p = io.popen("find csrc/server -name '*.c' -o -name '*.h'")
    local hits = {}
    for file in p:lines() do
      local text = fs.read(file)
      for _, f in ipairs(FORBIDDEN) do
        -- slots.c lists /proc, which no sandbox can write
        if text:find(f) and not (f:find("opendir") and file:match("sandbox/slots%.c$")) then
          hits[#hits + 1] = file .. ": " .. f
        end
      end
    end
    p:close()
    assert.same({}, hits)
  end)
end)
