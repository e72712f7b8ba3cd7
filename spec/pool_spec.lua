-- #integration: sandboxes prepared ahead (unsandboxd --pool), through a
-- real server: a pooled run is the same sandbox as a cold one, a run
-- leaves nothing for the next one of its pool, sandboxes that died while
-- waiting are discarded, a burst of 100 runs is served, the options are
-- checked, and a killed server leaves no pool sandbox running.
local unsandbox = require "unsandbox"
local server = require "spec.helpers.unsandboxd"
local fs = require "spec.helpers.fs"
local proc = require "spec.helpers.proc"
local wait = require "spec.helpers.wait"

-- Processes of sandbox slot uids in this server's cgroups (as the
-- sandbox spec finds a run's leftovers): here, the pool's.
local function sandbox_processes(server_pid)
  local pids = {}
  local p = io.popen("ls /proc")
  for name in p:lines() do
    if name:match("^%d+$") then
      local st = fs.read("/proc/" .. name .. "/status")
      local uid = st and tonumber(st:match("\nUid:%s*(%d+)"))
      local cg = fs.read("/proc/" .. name .. "/cgroup") or ""
      if uid and uid >= 200000 and uid <= 200255 and not st:match("\nState:%s*Z") and
         cg:find("/unsandboxd-" .. server_pid .. "-", 1, true) then
        pids[#pids + 1] = name
      end
    end
  end
  p:close()
  return pids
end

-- What a program can learn of its sandbox, with what differs between any
-- two runs (slot uid, random bind file names, the host's process count)
-- taken out.
local FINGERPRINT = [==[
id; umask; hostname; nice; cut -d' ' -f18,19,41 /proc/1/stat; cut -d' ' -f41 /proc/self/stat; ulimit -a
cat /proc/self/limits /proc/self/cgroup /proc/1/cgroup
awk '{ $1=""; $2=""; $3=""; print }' /proc/self/mountinfo
env | sort; ls -la --time-style=+ / /tmp /sandbox /code /dev /dev/shm /proc/self/fd 2>&1 | sed 's/pipe:\[[0-9]*\]/pipe/'
grep -E '^(Cap|NoNewPrivs|Seccomp|Uid|Gid|Groups|Sig|Shd|Blk|NSpid|NSpgid|NSsid|Umask)' /proc/self/status
tr '\0' ' ' < /proc/1/cmdline; echo; cut -d: -f1 /proc/net/dev; cat /etc/passwd /etc/group /etc/resolv.conf 2>&1
]==]

local function normalise(text)
  return (text:gsub("uid=%d+", "uid=SLOT"):gsub("gid=%d+", "gid=SLOT")
              :gsub("bindfile%w+", "bindfile"):gsub("\ndr%-xr%-xr%-x +%d+ nobody", "\nPROC nobody"))
end

local function health(c) return assert(c:call("GET", "/health")) end

-- Waits (at most 20 s) until every shape of the pool is full.
local function await_full(c)
  return wait.eventually(function()
    local h = health(c)
    local full = #h.pool.shapes > 0
    for _, s in ipairs(h.pool.shapes) do full = full and s.ready >= h.pool.size end
    return full and h
  end, 20) or nil
end

describe("the sandbox pool #integration", function()
  local srv, cold, c, cc

  setup(function()
    srv = server.start { args = { "--pool", "2", "--pool-shapes", "bash,python,bash/semitrusted" } }
    cold = server.start()
    c = unsandbox.client(srv.client_opts())
    cc = unsandbox.client(cold.client_opts())
  end)
  teardown(function()
    c:close(); cc:close()
    srv.stop(); cold.stop()
  end)

  local function run(client, lang, code, opts)
    return assert(client:execute_code(lang, code, opts))
  end

  it("fills, and says so in GET /health", function()
    local h = assert(await_full(c), "the pool did not fill")
    assert.equal(2, h.pool.size)
    assert.same({ "bash zerotrust", "python zerotrust", "bash semitrusted" }, (function()
      local t = {}
      for i, s in ipairs(h.pool.shapes) do t[i] = s.language .. " " .. s.network_mode end
      return t
    end)())
    -- (h.pool.failed counts sandboxes whose set-up failed and were
    -- discarded; the pool fills all the same)
    assert.is_number(h.pool.failed)
    assert.equal(0, health(cc).pool.size)
  end)

  it("prepares its sandboxes in the background (a run gets the server's scheduling back)", function()
    assert(await_full(c), "the pool did not fill")
    local pids = sandbox_processes(srv.pid)
    assert.is_true(#pids >= 6, "pool sandboxes found: " .. #pids)
    for _, pid in ipairs(pids) do
      -- the fields after the command name start at field 3: nice is 19,
      -- the policy 41 (3: SCHED_BATCH, which never preempts on wake-up)
      local f = {}
      for x in assert(fs.read("/proc/" .. pid .. "/stat")):match("%) (.*)$"):gmatch("%S+") do f[#f + 1] = x end
      assert.equal("10", f[17], "pool process " .. pid)
      assert.equal("3", f[39], "pool process " .. pid)
    end
    -- the program of a pooled run, and its sandbox's init, at nice 0 and
    -- SCHED_OTHER (the fingerprint spec below compares all of it with a
    -- cold start)
    local r = run(c, "bash", "echo $(nice) $(cut -d' ' -f19,41 /proc/1/stat) $(cut -d' ' -f41 /proc/self/stat)")
    assert.equal("0 0 0 0\n", r.stdout)
  end)

  -- mounts.c: every sandbox's bwrap starts from a copy of one namespace
  -- without the server's volumes, /sys or its cgroup hierarchies
  it("starts its sandboxes from a mount table without the server's mounts", function()
    assert(await_full(c), "the pool did not fill")
    local pids = sandbox_processes(srv.pid)
    assert.is_true(#pids >= 6, "pool sandboxes found: " .. #pids)
    for _, pid in ipairs(pids) do
      local mounts = assert(fs.read("/proc/" .. pid .. "/mountinfo"), "mountinfo of " .. pid)
      for line in mounts:gmatch("[^\n]+") do
        local point = line:match("^%S+ %S+ %S+ %S+ (%S+)")
        assert.is_nil(point:find(srv.data, 1, true), "pool process " .. pid .. " sees " .. point)
        assert.is_falsy(point == "/sys" or point:find("^/sys/"), "pool process " .. pid .. " sees " .. point)
      end
    end
  end)

  it("serves runs from ready sandboxes, with their results", function()
    local before = health(c).pool.hits
    local r = run(c, "python", "import sys; print('py'); sys.exit(3)")
    assert.equal("py\n", r.stdout)
    assert.equal(3, r.exit_code)
    r = run(c, "bash", "echo sh >&2; exit 4")
    assert.equal("sh\n", r.stderr)
    assert.equal(4, r.exit_code)
    assert.equal(before + 2, health(c).pool.hits)
  end)

  for _, mode in ipairs { "zerotrust", "semitrusted" } do
    it("gives a program the same sandbox as a cold start (" .. mode .. ")", function()
      await_full(c)
      local hits = health(c).pool.hits
      local pooled = run(c, "bash", FINGERPRINT, { network_mode = mode, ttl = 30 })
      local fresh = run(cc, "bash", FINGERPRINT, { network_mode = mode, ttl = 30 })
      assert.equal(hits + 1, health(c).pool.hits)
      assert.equal(fresh.exit_code, pooled.exit_code)
      assert.equal(normalise(fresh.stderr), normalise(pooled.stderr))
      assert.equal(normalise(fresh.stdout), normalise(pooled.stdout))
    end)
  end

  it("leaves nothing of a run to the next one from the same pool", function()
    await_full(c)
    local hits = health(c).pool.hits
    local a = run(c, "bash", [[
      echo secret > /sandbox/left; echo t > /tmp/left; echo s > /dev/shm/left
      (setsid sleep 331 >/dev/null 2>&1 &)
      export LEFT=1; echo started]])
    assert.equal("started\n", a.stdout)
    local b = run(c, "bash", [[
      ls -A /sandbox /tmp /dev/shm; echo "${LEFT:-none}"
      ls /proc | grep -E '^[0-9]+$' | while read p; do cat /proc/$p/cmdline; echo; done |
        grep -c '[s]leep.331' || true]])
    assert.equal(hits + 2, health(c).pool.hits)
    assert.equal("/dev/shm:\n\n/sandbox:\n\n/tmp:\nnone\n0\n", b.stdout)
    -- and from the host: the background process ended with its run
    local out = proc.run("grep -l '[s]leep.331' /proc/[0-9]*/cmdline 2>/dev/null | wc -l")
    assert.equal("0", out:match("%d+"))
  end)

  it("discards sandboxes that died while waiting, and the run still succeeds", function()
    await_full(c)
    local waiting = sandbox_processes(srv.pid)
    assert.is_true(#waiting >= 6, "pool processes found: " .. #waiting)
    local before = health(c).pool.discarded
    os.execute("kill -9 " .. table.concat(waiting, " ") .. " 2>/dev/null")
    -- ready: every one of them is gone (SIGKILL is not instant)
    assert.is_true(wait.eventually(function()
      for _, p in ipairs(waiting) do if server.alive(tonumber(p)) then return false end end
      return true
    end), "the pool's processes outlived SIGKILL")
    assert.equal("alive\n", run(c, "bash", "echo alive").stdout)
    assert.equal("py\n", run(c, "python", "print('py')").stdout)
    assert.is_true(health(c).pool.discarded > before)
    assert.truthy(await_full(c), "the pool fills again")
  end)

  it("serves a burst of 100 runs and fills again", function()
    -- two waves of 50: the server queues at most workers + 64 jobs
    local before = health(c).pool
    for wave = 0, 1 do
      local jobs = {}
      for i = 1, 50 do
        jobs[i] = assert(c:execute_async("bash", "echo run-" .. (wave * 50 + i), { ttl = 60 }))
      end
      for i = 1, 50 do
        local r = assert(c:wait_for_job(jobs[i], { timeout = 120 }))
        assert.equal("completed", r.status, tostring(r.error))
        assert.equal("run-" .. (wave * 50 + i) .. "\n", r.stdout)
      end
    end
    local after = assert(await_full(c), "the pool fills again").pool
    assert.equal(100, (after.hits - before.hits) + (after.misses - before.misses))
    assert.is_true(after.hits > before.hits)
  end)
end)

describe("unsandboxd --pool options #integration", function()
  local function start_fails(args)
    local data = server.tmpdir("unsbd-pool")
    local out, code = proc.run(server.sh_quote(server.bin) .. " --data " .. server.sh_quote(data)
      .. " " .. args)
    server.rm_rf(data)
    return out, code
  end

  it("refuses a bad size or shape with exit 2", function()
    for _, case in ipairs {
      { "--pool 65", "between 0 and 64" }, { "--pool x", "between 0 and 64" },
      { "--pool 0 --pool-shapes bash", "needs a pool" },
      { "--pool-shapes brainfudge", "not installed" },
      { "--pool 2 --pool-shapes brainfudge", "not installed" },
      { "--pool 2 --pool-shapes bash/lan", "network mode" },
      { "--pool 2 --pool-shapes bash,bash", "twice" },
    } do
      local out, code = start_fails(case[1])
      assert.equal(2, code, case[1] .. ": " .. out)
      assert.matches(case[2], out)
    end
  end)

  it("keep a small pool without --pool: 2 per default shape, taken by a run", function()
    local s = server.start { pool_default = true }
    local cl = unsandbox.client(s.client_opts())
    local ok, err = pcall(function()
      local h = assert(await_full(cl), "the default pool did not fill")
      assert.equal(2, h.pool.size)
      local shapes = {}
      for i, sh in ipairs(h.pool.shapes) do shapes[i] = sh.language .. " " .. sh.network_mode end
      assert.same({ "bash zerotrust", "python zerotrust" }, shapes)
      assert.equal("pooled\n", assert(cl:execute_code("bash", "echo pooled")).stdout)
      assert.is_true(health(cl).pool.hits >= h.pool.hits + 1)
    end)
    cl:close()
    s.stop()
    assert.is_true(ok, tostring(err))
  end)

  it("leaves no pool sandbox running when the server is killed", function()
    local s = server.start { args = { "--pool", "2", "--pool-shapes", "bash,bash/semitrusted" } }
    local cl = unsandbox.client(s.client_opts())
    local ok, waiting = pcall(function()
      assert.truthy(await_full(cl), "the pool did not fill")
      return sandbox_processes(s.pid)
    end)
    cl:close()
    os.execute("kill -9 " .. s.pid)
    assert.is_true(ok, tostring(waiting))
    assert.is_true(#waiting >= 4, "pool processes found: " .. #waiting)
    local left
    wait.eventually(function()
      left = {}
      for _, p in ipairs(waiting) do if server.alive(tonumber(p)) then left[#left + 1] = p end end
      return #left == 0
    end, 10)
    s.stop()
    assert.same({}, left)
  end)
end)
