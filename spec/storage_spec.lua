-- #integration specs of counted storage on the execution API ("Sharing
-- one machine", docs/internals.md): every byte a key stores (volumes,
-- snapshot and image archives, job documents, service logs) is in one
-- ledger; a key over its quota, or a server over its disk budget, gets
-- 507 before anything is written, while other keys go on; finished jobs
-- expire and give their bytes back; the counts survive a crash. Each
-- attack is played by one key with the API only, against a server with
-- small volumes (16 MiB) and a small budget (96 MiB: a key's default
-- quota is a quarter of it, 24 MiB). Every loop is bounded in count.
local server = require "spec.helpers.unsandboxd"
local core = require "unsandbox.core"
local json = require "cjson"
local fs = require "spec.helpers.fs"
local wait = require "spec.helpers.wait"
local lua = require "spec.helpers.lua"

local MiB = 1024 * 1024
local ARGS = { "--disk-mb", "16", "--disk-budget-mb", "96", "--sync-ms", "60000" }

local function decode(body)
  local ok, v = pcall(json.decode, body)
  return ok and v or nil
end

local function client(srv, pk, sk)
  return core.client { url = srv.url, public_key = pk or srv.public_key,
                       secret_key = sk or srv.secret_key, timeout = 120000 }
end

local function call(c, method, path, body)
  local r, kind, msg = c:request(method, path, body and json.encode(body))
  assert(r, tostring(kind) .. ": " .. tostring(msg))
  return r, decode(r.body)
end

local function ok_call(c, method, path, body)
  local r, doc = call(c, method, path, body)
  assert(r.status >= 200 and r.status < 300, method .. " " .. path .. " answered " .. r.status .. ": " .. r.body)
  return doc
end

-- A fresh key of srv and its client.
local function new_key(srv)
  local pk, sk = server.add_key(srv)
  return client(srv, pk, sk), pk, sk
end

-- Bytes the data directory takes, as file sizes (a sparse volume image
-- counts whole, as the ledger counts it).
local function apparent(dir)
  local p = io.popen("du -s --apparent-size -B1 " .. fs.quote(dir) .. " 2>/dev/null")
  local n = tonumber((p:read("*a") or ""):match("^(%d+)"))
  p:close()
  return n or 0
end

local function files_in(dir, pattern)
  local p = io.popen("ls -A " .. fs.quote(dir) .. " 2>/dev/null")
  local n = 0
  for name in p:lines() do if name:find(pattern) then n = n + 1 end end
  p:close()
  return n
end

local function health(c)
  return ok_call(c, "GET", "/health").storage
end

local function own(c)
  return ok_call(c, "POST", "/keys/validate").storage
end

-- Stops what a test started, also when it failed half way (a stopped
-- server is left alone), and removes the data directory.
local function stop_all(first, second)
  for _, s in ipairs { second or false, first } do
    if s and s.pid and server.alive(s.pid) then s.stop(true) end
  end
  if first.data then server.rm_rf(first.data); os.remove(first.log) end
end

local function delete_all(c)
  for _, kind in ipairs { "sessions", "snapshots", "images" } do
    local _, list = call(c, "GET", "/" .. kind .. (kind == "images" and "/owned" or ""))
    for _, item in ipairs(list and list[kind] or {}) do call(c, "DELETE", "/" .. kind .. "/" .. item.id) end
  end
end

describe("storage: the ledger and quotas, execution API #integration", function()
  local srv, c

  setup(function()
    srv = server.start { args = ARGS }
    c = client(srv)
  end)
  teardown(function()
    if c then c:close() end
    if srv then srv.stop() end
  end)

  it("four empty sessions of one key no longer take the whole volume budget", function()
    local a = new_key(srv)
    local made, refused = {}, nil
    for _ = 1, 8 do
      local r, doc = call(a, "POST", "/sessions", {})
      if r.status ~= 201 then refused = { r = r, doc = doc }; break end
      made[#made + 1] = doc.session_id
    end
    -- another key still gets a session and runs a job in it
    local b = new_key(srv)
    local r, session = call(b, "POST", "/sessions", {})
    local ran = r.status == 201 and ok_call(b, "POST", "/sessions/" .. session.session_id .. "/shell",
                                            { command = "echo other key" })
    delete_all(a); delete_all(b)
    a:close(); b:close()
    assert.are.equal(1, #made)                     -- 24 MiB of quota: one 16 MiB volume
    assert.is_not_nil(refused)
    assert.are.equal(507, refused.r.status)
    assert.are.equal("insufficient_storage", refused.doc.error)
    assert.matches("storage quota of this key %(24 MiB%)", refused.doc.message)
    assert.are.equal(201, r.status)
    assert.are.equal("other key\n", ran.stdout)
  end)

  it("snapshots and images count: the key gets 507, nothing half written stays, another key goes on", function()
    local a = new_key(srv)
    local session = ok_call(a, "POST", "/sessions", {})
    ok_call(a, "POST", "/sessions/" .. session.session_id .. "/shell",
            { command = "head -c 3145728 /dev/urandom > blob" })
    local before = apparent(srv.data)
    local snaps, refused = {}, nil
    for _ = 1, 40 do
      local r, doc = call(a, "POST", "/sessions/" .. session.session_id .. "/snapshot", {})
      if r.status ~= 201 then refused = { r = r, doc = doc }; break end
      snaps[#snaps + 1] = doc.id
    end
    local grown = apparent(srv.data) - before
    local archives = files_in(srv.data .. "/snapshots", "%.tar%.gz$")
    local temporaries = files_in(srv.data .. "/snapshots", "%.tmp$")
    -- an image copies an archive: it is counted the same way
    local images, img_refused = 0, nil
    for _ = 1, 6 do
      local r, doc = call(a, "POST", "/images", { source_type = "snapshot", source_id = snaps[1] })
      if r.status ~= 201 then img_refused = { r = r, doc = doc }; break end
      images = images + 1
    end
    local mine = own(a)
    -- another key is not held up by any of it
    local b = new_key(srv)
    local other = call(b, "POST", "/sessions", {})
    local job = ok_call(b, "POST", "/execute", { language = "bash", code = "echo still here" })
    delete_all(a); delete_all(b)
    a:close(); b:close()

    assert.is_true(#snaps >= 1)
    assert.is_not_nil(refused, "40 snapshots of 3 MiB were taken with a quota of 24 MiB")
    assert.are.equal(507, refused.r.status)
    assert.are.equal("insufficient_storage", refused.doc.error)
    assert.are.equal(#snaps, archives)             -- the refused one left no archive
    assert.are.equal(0, temporaries)
    assert.is_true(grown <= 96 * MiB, "the data directory grew by " .. grown .. " bytes")
    assert.is_not_nil(img_refused)
    assert.are.equal(507, img_refused.r.status)
    assert.is_true(mine.used_bytes <= mine.quota_bytes)
    assert.are.equal(#snaps, mine.kinds.snapshot.items)
    assert.are.equal(images, mine.kinds.image.items)
    assert.are.equal(201, other.status)
    assert.are.equal("still here\n", job.stdout)
  end)

  it("job output kept in the database counts: 507 for the key, others still run jobs", function()
    local a = new_key(srv)
    local code = "head -c 700000 /dev/urandom | base64 -w0"
    local done, refused = 0, nil
    for _ = 1, 40 do
      local r, doc = call(a, "POST", "/execute", { language = "bash", code = code })
      if r.status ~= 200 then refused = { r = r, doc = doc }; break end
      assert.are.equal("completed", doc.status)
      done = done + 1
    end
    local mine, total = own(a), health(c)
    local items = total.kinds.job.items
    local again = call(a, "POST", "/execute/async", { language = "bash", code = "echo refused" })
    local after = health(c).kinds.job.items
    local b = new_key(srv)
    local job = ok_call(b, "POST", "/execute", { language = "bash", code = "echo other key" })
    local theirs = own(b)
    a:close(); b:close()

    assert.is_true(done >= 10)
    assert.is_not_nil(refused, "40 jobs of 0.9 MiB of output were kept with a quota of 24 MiB")
    assert.are.equal(507, refused.r.status)
    assert.are.equal("insufficient_storage", refused.doc.error)
    assert.are.equal(507, again.status)            -- decided before a row was written
    assert.are.equal(items, after)
    assert.are.equal(done, mine.kinds.job.items)
    assert.is_true(mine.kinds.job.bytes >= done * 900000)
    assert.is_true(mine.used_bytes <= mine.quota_bytes)
    assert.are.equal("other key\n", job.stdout)
    assert.are.equal(1, theirs.kinds.job.items)    -- a key sees its own usage only
    assert.is_true(theirs.used_bytes < MiB)
  end)

  it("GET /health and /metrics show the totals, budget and quotas", function()
    local a = new_key(srv)
    local s = ok_call(a, "POST", "/sessions", {})
    local h = health(c)
    local r = call(c, "GET", "/metrics")
    delete_all(a)
    local freed = health(c)
    a:close()
    assert.are.equal(96 * MiB, h.budget_bytes)
    assert.are.equal(24 * MiB, h.key_quota_bytes)
    assert.are.equal(24 * MiB, h.tenant_quota_bytes)
    assert.are.equal(86400, h.job_retention_s)
    assert.are.equal(16 * MiB, h.kinds.volume.bytes)
    assert.are.equal(1, h.kinds.volume.items)
    for _, kind in ipairs { "volume", "snapshot", "image", "job", "log", "checkpoint", "object" } do
      assert.is_number(h.kinds[kind].bytes, kind)
    end
    local sum = 0
    for _, k in pairs(h.kinds) do sum = sum + k.bytes end
    assert.are.equal(h.used_bytes, sum)
    assert.matches('unsandboxd_storage_bytes{kind="volume"} ' .. 16 * MiB .. "\n", r.body, 1, true)
    assert.matches("unsandboxd_storage_budget_bytes " .. 96 * MiB .. "\n", r.body, 1, true)
    assert.are.equal(0, freed.kinds.volume.bytes)
    assert.is_string(s.session_id)
  end)

  it("the Lua client surfaces 507 as an ordinary http error with the server's message", function()
    local pk, sk = server.add_key(srv)
    local unsandbox = require "unsandbox"
    local u = unsandbox.client { url = srv.url, public_key = pk, secret_key = sk }
    local first = assert(u:create_session())
    local none, err = u:create_session()
    assert(u:delete_session(first.session_id))
    assert.is_nil(none)
    assert.are.equal("http", err.kind)
    assert.are.equal(507, err.status)
    assert.matches("storage quota of this key", err.message)
  end)
end)

describe("storage across a crash #integration", function()
  it("counts survive a restart, and a crash mid-job leaves no reservation behind", function()
    local srv = server.start { args = ARGS }
    local again
    finally(function() stop_all(srv, again) end)
    local c = client(srv)
    local session = ok_call(c, "POST", "/sessions", {})
    local kept = ok_call(c, "POST", "/execute", { language = "bash", code = "head -c 300000 /dev/zero | tr '\\0' x" })
    local running = ok_call(c, "POST", "/execute/async", { language = "bash", code = "sleep 60" })
    local status
    wait.eventually(function()
      status = select(2, call(c, "GET", "/jobs/" .. running.job_id)).status
      return status == "running"
    end)
    local during = own(c)
    c:close()
    os.execute("kill -9 " .. srv.pid)
    wait.eventually(function() return not fs.alive(srv.pid) end, 5)
    srv.stop(true)
    again = server.start { data = srv.data, args = ARGS }
    c = client(again)
    local after, total = own(c), health(c)
    local lost = ok_call(c, "GET", "/jobs/" .. running.job_id)
    c:close()
    again.stop()
    server.rm_rf(srv.data)
    os.remove(srv.log)

    assert.are.equal("running", status)
    assert.is_string(session.session_id)
    assert.are.equal(300000, #kept.stdout)
    -- while it ran, the job held a reservation for the output it may write
    assert.is_true(during.kinds.job.bytes >= 2 * MiB)
    assert.are.equal("failed", lost.status)
    assert.are.equal(16 * MiB, after.kinds.volume.bytes)
    assert.are.equal(2, after.kinds.job.items)
    assert.is_true(after.kinds.job.bytes > 300000 and after.kinds.job.bytes < 310000,
                   "jobs hold " .. after.kinds.job.bytes .. " bytes after the restart")
    assert.are.equal(after.used_bytes, total.used_bytes)
  end)
end)

describe("the default quotas #integration", function()
  it("are a quarter of the budget, but never less than one volume and a sixteenth", function()
    local small = server.start { args = { "--disk-mb", "16", "--disk-budget-mb", "32" } }
    finally(function() stop_all(small) end)
    local c = client(small)
    local h = health(c)
    local first = call(c, "POST", "/sessions", {})
    local second = call(c, "POST", "/sessions", {})
    c:close()
    assert.are.equal(17 * MiB, h.key_quota_bytes)   -- a quarter (8 MiB) would allow no session
    assert.are.equal(17 * MiB, h.tenant_quota_bytes)
    assert.are.equal(201, first.status)
    assert.are.equal(507, second.status)
  end)
end)

describe("a job document larger than its reservation #integration", function()
  it("grows it when the key has room, and is kept without its output when it has not", function()
    -- a control byte takes six bytes of JSON: 1 MB of output, 6 MB of document
    local code = "head -c 1000000 /dev/zero | tr '\\0' '\\1'"
    local srv = server.start { args = { "--key-quota-mb", "5", "--sync-ms", "60000" } }
    finally(function() stop_all(srv) end)
    local c = client(srv)
    local wide = ok_call(c, "POST", "/execute", { language = "bash", code = code .. " | head -c 500000" })
    local full = ok_call(c, "POST", "/execute", { language = "bash", code = code })
    local again = ok_call(c, "GET", "/jobs/" .. full.job_id)
    local mine = own(c)
    c:close()

    assert.are.equal(500000, #wide.stdout)          -- 3 MB of JSON: the reservation grew
    assert.are.equal("completed", full.status)
    assert.are.equal(0, full.exit_code)
    assert.are.equal("", full.stdout)
    assert.is_true(full.stdout_truncated)
    assert.matches("the output was not kept", full.error)
    assert.same(full, (function() again.request_id = nil; return again end)())
    assert.is_true(mine.used_bytes <= mine.quota_bytes)
  end)
end)

describe("what a crash left half made #integration", function()
  it("is removed at the next start: volumes and archives without a row, temporaries, a restore's second volume",
    function()
    local srv = server.start { args = ARGS }
    local again
    finally(function() stop_all(srv, again) end)
    local c = client(srv)
    local session = ok_call(c, "POST", "/sessions", {})
    local snap = ok_call(c, "POST", "/sessions/" .. session.session_id .. "/snapshot", {})
    c:close()
    srv.stop(true)
    local d = srv.data
    local function exists(p) return lua.sh("test -e " .. fs.quote(p)) end
    -- as the server leaves them when it dies between a write and its row
    os.execute("mkdir -p " .. fs.quote(d .. "/sessions/unsb-session-orphan/work") .. " && truncate -s 16M "
               .. fs.quote(d .. "/sessions/unsb-session-orphan/disk.img"))
    os.execute("truncate -s 3M " .. fs.quote(d .. "/snapshots/unsb-snapshot-orphan.tar.gz") .. " "
               .. fs.quote(d .. "/snapshots/unsb-snapshot-cut.tar.gz.tmp"))
    local own_dir = d .. "/sessions/" .. session.session_id
    os.execute("mkdir -p " .. fs.quote(own_dir .. "/next")
      .. " && truncate -s 16M " .. fs.quote(own_dir .. "/next.img"))
    again = server.start { data = d, args = ARGS }
    c = client(again)
    local h = health(c)
    local listed = ok_call(c, "GET", "/snapshots")
    local shell = ok_call(c, "POST", "/sessions/" .. session.session_id .. "/shell", { command = "echo kept" })
    c:close()
    again.stop(true)
    local left = { exists(d .. "/sessions/unsb-session-orphan"), exists(d .. "/snapshots/unsb-snapshot-orphan.tar.gz"),
                   exists(d .. "/snapshots/unsb-snapshot-cut.tar.gz.tmp"), exists(own_dir .. "/next.img"),
                   exists(own_dir .. "/next") }
    local kept = { exists(own_dir .. "/disk.img"), exists(d .. "/snapshots/" .. snap.id .. ".tar.gz") }
    server.rm_rf(d)
    os.remove(srv.log)

    assert.same({ false, false, false, false, false }, left)
    assert.same({ true, true }, kept)
    assert.are.equal(1, listed.count)
    assert.are.equal("kept\n", shell.stdout)
    assert.are.equal(16 * MiB, h.kinds.volume.bytes)
    assert.are.equal(1, h.kinds.snapshot.items)
  end)
end)

describe("finished jobs expire #integration", function()
  it("an expired job is 404 like an unknown one, and its bytes are freed", function()
    local srv = server.start { args = { "--job-retention", "2", "--sync-ms", "60000" } }
    finally(function() stop_all(srv) end)
    local c = client(srv)
    local job = ok_call(c, "POST", "/execute", { language = "bash", code = "head -c 500000 /dev/zero | tr '\\0' y" })
    -- read in this order, the count shows the job's bytes whenever the job is still there
    local held = health(c)
    local first = call(c, "GET", "/jobs/" .. job.job_id)
    -- bounded: the retention is 2 s, the sweep runs every second
    local gone = wait.eventually(function()
      local r = call(c, "GET", "/jobs/" .. job.job_id)
      return r.status == 404 and r
    end, 15)
    local freed
    wait.eventually(function()
      freed = health(c)
      return freed.kinds.job.bytes < 100000
    end, 15)
    -- a job that runs past the retention is not touched: its clock starts
    -- when it ends. A quick job that ends after it started is the clock:
    -- once that one is swept, more than the retention has passed
    local running = ok_call(c, "POST", "/execute/async", { language = "bash", code = "sleep 30" })
    local tick = ok_call(c, "POST", "/execute", { language = "bash", code = "true" })
    local ticked = wait.eventually(function() return call(c, "GET", "/jobs/" .. tick.job_id).status == 404 end, 15)
    local still = select(2, call(c, "GET", "/jobs/" .. running.job_id))
    local cancelled = call(c, "DELETE", "/jobs/" .. running.job_id)
    local unknown = call(c, "GET", "/jobs/job_000000000000000000000000")
    local cancel = call(c, "DELETE", "/jobs/" .. job.job_id)
    c:close()
    srv.stop()

    assert.are.equal(500000, #job.stdout)
    assert.are.equal(2, held.job_retention_s)
    if first.status == 200 then assert.is_true(held.kinds.job.bytes >= 500000) end
    assert.is_not_nil(gone, "the job was still there after 15 s with a retention of 2 s")
    assert.are.equal(unknown.status, gone.status)
    assert.are.equal(decode(unknown.body).error, decode(gone.body).error)
    assert.are.equal(404, cancel.status)
    assert.is_true(freed.kinds.job.bytes < 100000)
    assert.is_true(ticked, "the clock job was never swept")
    assert.are.equal("running", still.status)
    assert.are.equal(200, cancelled.status)
  end)

  it("--job-retention must be a number of seconds", function()
    local out, rc = server.run("--job-retention 0")
    assert.are.equal(2, rc, out)
    assert.matches("%-%-job%-retention", out)
  end)
end)
