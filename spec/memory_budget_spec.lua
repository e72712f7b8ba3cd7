-- #integration specs of the runs' memory budget (docs/internals.md,
-- "Sharing one machine", "Memory"): every run's limit (vcpu x 1 GiB) is
-- admitted against one budget, --memory-budget-mb or 75% of the machine's
-- memory, so services, jobs, terminals and Control Plane runtimes whose
-- limits would pass it are refused with 429 instead of being handed
-- cgroups the machine cannot honour; queued jobs claim nothing until they
-- run; a run that ends gives its share back; and the runs' parent cgroup
-- carries the budget as its kernel limit.
-- Bootstraps are `sleep`, so nothing here uses the memory it claims.
local server = require "spec.helpers.unsandboxd"
local cp = require "spec.helpers.cp"
local fs = require "spec.helpers.fs"
local core = require "unsandbox.core"
local json = require "cjson"
local wait = require "spec.helpers.wait"

local MiB = 1024 * 1024

local function decode(body)
  local ok, v = pcall(json.decode, body or "")
  return ok and v or nil
end

local function call(c, method, path, body)
  local r, kind, msg = c:request(method, path, body and json.encode(body))
  assert(r, tostring(kind) .. ": " .. tostring(msg))
  return r.status, decode(r.body), r
end

local function budget(c)
  local _, h = call(c, "GET", "/health")
  return h.isolation.memory_budget, h.isolation
end

-- The claimed MiB once they reach `mb` (a run gives its claim back when it
-- is freed, a moment after its answer), polled at most 10 s.
local function settled(c, mb)
  local b
  wait.eventually(function()
    b = budget(c)
    return b.claimed_mb == mb
  end)
  return b.claimed_mb
end

local function service(c, vcpu)
  return call(c, "POST", "/services", { bootstrap_content = "exec sleep 600", vcpu = vcpu })
end

-- The machine's memory in MiB (MemTotal).
local function mem_total_mb()
  return math.floor(tonumber((fs.read("/proc/meminfo") or ""):match("MemTotal:%s*(%d+)")) / 1024)
end

-- The memory limit of the server's runs' parent cgroup (bytes), or nil
-- and why when the runs have no memory cgroup here.
local function parent_limit(srv, version)
  local cg = fs.read("/proc/" .. srv.pid .. "/cgroup") or ""
  local path = version == "v1" and cg:match("%d+:[^:\n]*memory[^:\n]*:([^\n]*)") or cg:match("0::([^\n]*)")
  if not path then return nil, "no memory cgroup line" end
  local root = version == "v1" and "/sys/fs/cgroup/memory" or "/sys/fs/cgroup"
  local file = version == "v1" and "memory.limit_in_bytes" or "memory.max"
  -- the parent sits next to the server's cgroup; a v2 server that moved
  -- itself lives beside it, in NAME-server
  for _, dir in ipairs { root .. path, root .. path:gsub("/[^/]*$", "") } do
    local p = io.popen("ls -d " .. fs.quote(dir) .. "/unsandboxd-" .. srv.pid .. "-* 2>/dev/null")
    for name in p:lines() do
      if not name:match("%-server$") then
        p:close()
        return tonumber((fs.read(name .. "/" .. file) or ""):match("%d+")), name
      end
    end
    p:close()
  end
  return nil, "no parent found"
end

describe("the memory budget of all runs #integration", function()
  it("four vcpu-8 services on this machine: admitted only while their limits fit its memory", function()
    -- the attack with the defaults: vcpu-8 services until one is refused
    local srv = server.start {}
    local c = core.client(srv.client_opts())
    local total, created, refused = mem_total_mb(), 0, nil
    for _ = 1, math.ceil(total / 8192) + 1 do
      local st, doc = service(c, 8)
      if st ~= 201 then refused = { st, doc }; break end
      created = created + 1
    end
    local b = budget(c)
    c:close()
    srv.stop()
    assert.is_truthy(refused, ("%d vcpu-8 services (%d MiB of limits) on a %d MiB machine, none refused")
      :format(created, created * 8192, total))
    assert.are.equal(429, refused[1])
    assert.are.equal("memory_limit_reached", refused[2].error)
    assert.matches("not enough memory for a run of 8192 MiB", refused[2].message)
    assert.is_true(created * 8192 <= b.budget_mb and b.budget_mb <= total,
      ("%d services admitted, budget %d MiB, machine %d MiB"):format(created, b.budget_mb, total))
    assert.are.equal(math.max(1024, math.floor(total * 0.75)), b.budget_mb, "the default is 75% of MemTotal")
  end)

  describe("with --memory-budget-mb 3072", function()
    local srv, c

    setup(function()
      srv = server.start { args = { "--memory-budget-mb", "3072", "--workers", "2" } }
      c = core.client(srv.client_opts())
    end)
    teardown(function()
      if c then c:close() end
      if srv then srv.stop() end
    end)

    it("is the runs' parent cgroup's memory limit and what /health reports", function()
      local b, iso = budget(c)
      assert.are.same({ budget_mb = 3072, claimed_mb = 0 }, b)
      if iso.cgroup == "none" then pending("no memory cgroup here: " .. iso.cgroup) return end
      local limit, where = parent_limit(srv, iso.cgroup)
      assert.are.equal(3072 * MiB, limit, where)
    end)

    it("a service's bootstrap holds its limit until it is deleted; what does not fit is 429", function()
      assert.are.equal(0, settled(c, 0))
      local st, svc = service(c, 2)
      assert.are.equal(201, st, json.encode(svc))
      assert.are.equal(2048, budget(c).claimed_mb)
      -- a second vcpu-2 service would need 4096 of 3072
      local st2, doc = service(c, 2)
      assert.are.equal(429, st2)
      assert.are.equal("memory_limit_reached", doc.error)
      assert.matches("not enough memory for a run of 2048 MiB: 2048 of the 3072 MiB", doc.message)
      -- nothing of the refused service stays behind
      local _, list = call(c, "GET", "/services")
      assert.are.equal(1, list.count)
      -- a vcpu-1 run fits and gives its share back when it ends
      local est, job = call(c, "POST", "/execute", { language = "bash", code = "echo fits" })
      assert.are.equal(200, est)
      assert.are.equal("fits\n", job.stdout)
      assert.are.equal(2048, settled(c, 2048))
      -- a vcpu-2 run does not
      local big, err = call(c, "POST", "/execute", { language = "bash", code = "echo no", vcpu = 2 })
      assert.are.equal(429, big)
      assert.are.equal("memory_limit_reached", err.error)
      assert.are.equal(2048, budget(c).claimed_mb)
      -- deleting the service gives its 2048 back
      assert.are.equal(200, (call(c, "DELETE", "/services/" .. svc.service_id)))
      assert.are.equal(0, budget(c).claimed_mb)
      local st3, again = service(c, 2)
      assert.are.equal(201, st3)
      assert.are.equal(200, (call(c, "DELETE", "/services/" .. again.service_id)))
    end)

    it("queued jobs claim nothing until they run; a job that could not run now is 429", function()
      assert.are.equal(0, settled(c, 0))
      -- two workers: six jobs queue, only those running (or being released) claim
      local ids, most = {}, 0
      for i = 1, 6 do
        local st, doc = call(c, "POST", "/execute/async", { language = "bash", code = "sleep 1; echo " .. i })
        assert.are.equal(202, st, "job " .. i)
        ids[i] = doc.job_id
      end
      for i = 1, 6 do
        local doc
        wait.eventually(function()
          most = math.max(most, budget(c).claimed_mb)
          local _, d = call(c, "GET", "/jobs/" .. ids[i])
          doc = d
          return doc.status ~= "pending" and doc.status ~= "running"
        end, 60)
        assert.are.equal("completed", doc.status, tostring(doc.error))
        assert.are.equal(i .. "\n", doc.stdout)
      end
      -- six queued jobs of 1024 MiB each were admitted by a 3072 MiB budget
      assert.is_true(most <= 3072, "claimed " .. most .. " MiB")
      -- a vcpu-4 run is larger than the whole budget
      local st, doc = call(c, "POST", "/execute/async", { language = "bash", code = "true", vcpu = 4 })
      assert.are.equal(429, st)
      assert.matches("a run of 4096 MiB: %d+ of the 3072 MiB", doc.message)
      assert.are.equal(0, settled(c, 0))
    end)

    it("a Control Plane runtime is admitted too: the platform's transient 429 when it does not fit", function()
      assert.are.equal(0, settled(c, 0))
      local st, svc = service(c, 3)                 -- the whole budget
      assert.are.equal(201, st)
      local wst, ws = cp.request(srv, "POST", "/v1/workspaces", { token = srv.token,
        body = { session_id = "mem-budget" } })
      assert.are.equal(201, wst)
      local sst, refused = cp.request(srv, "POST", "/v1/sandboxes", { token = srv.token,
        body = { workspace_id = ws.workspace_id } })
      assert.are.equal(429, sst)
      assert.are.equal("runtime capacity is exhausted; this is transient, retry later", refused.error)
      assert.are.equal(200, (call(c, "DELETE", "/services/" .. svc.service_id)))
      local ok, lease = cp.request(srv, "POST", "/v1/sandboxes", { token = srv.token,
        body = { workspace_id = ws.workspace_id } })
      assert.are.equal(201, ok, json.encode(lease))
      assert.are.equal(1024, budget(c).claimed_mb)
      assert.are.equal(200, (cp.request(srv, "DELETE", "/v1/sandboxes/" .. lease.id, { token = srv.token })))
      assert.are.equal(0, budget(c).claimed_mb)
    end)

    it("a flag outside its range is a usage error", function()
      local out, rc = server.run("--memory-budget-mb 100")
      assert.matches("%-%-memory%-budget%-mb wants an integer between 1024", out)
      assert.are.equal(2, rc, out)
    end)
  end)
end)
