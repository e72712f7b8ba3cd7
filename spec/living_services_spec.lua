-- #integration specs of living services (spec §4.3: long-running daemons
-- with ports) against a real unsandboxd: a service is one sandbox whose
-- first process is its bootstrap (at /tmp/bootstrap.sh); it runs while any
-- of its processes runs, so a bootstrap that daemonises keeps it up;
-- execute runs inside it and reaches its ports on localhost; each declared
-- port is forwarded from 127.0.0.1 (GET /services/{id} lists `urls`),
-- refused while frozen (or thawed when it unfreezes on demand) and closed
-- with the service; input files of an execute land in /tmp/input/;
-- scripts sent as input files are runnable (the README's redeploy).
local unsandbox = require "unsandbox"
local server = require "spec.helpers.unsandboxd"
local mcp = require "spec.helpers.mcp"
local socket = require "socket"

local eventually = require("spec.helpers.wait").eventually

local DAEMON = "cd /tmp && echo served-by-the-daemon > index.html && "
  .. "nohup python3 -m http.server %d --bind 127.0.0.1 >/dev/null 2>&1 &"

-- GET / of a forwarded url from the host: the body, or nil and why.
local function http_get(url)
  local host, port = url:match("^http://([%d%.]+):(%d+)")
  local s = socket.tcp()
  s:settimeout(5)
  local ok, err = s:connect(host, tonumber(port))
  if not ok then return nil, err end
  s:send("GET /index.html HTTP/1.0\r\nHost: x\r\n\r\n")
  local body, e, partial = s:receive("*a")
  s:close()
  body = body or partial
  if not body or body == "" then return nil, e or "closed" end
  return body
end

describe("living services #integration", function()
  local srv, c

  setup(function()
    srv = server.start()
    c = unsandbox.client(srv.client_opts())
  end)
  teardown(function()
    if c then c:close() end
    if srv then srv.stop() end
  end)

  local function wait_job(job)
    return c:wait_for_job(job.job_id, { timeout = 60 })
  end

  it("keep running while a daemon of the bootstrap runs, reachable from execute and the host", function()
    local svc = assert(c:create_service { name = "web", ports = { 8080 }, bootstrap_content = DAEMON:format(8080) })
    local doc = assert(c:get_service(svc.id))
    assert.equal(1, #doc.urls)
    assert.equal(8080, doc.urls[1].port)
    assert.matches("^http://127%.0%.0%.1:%d+$", doc.urls[1].url)
    -- the bootstrap exited at once; its daemon keeps the service up
    local inside = eventually(function()
      local r = c:service_execute(svc.id, "python3 -c 'import urllib.request as u;"
        .. "print(u.urlopen(\"http://127.0.0.1:8080/index.html\", timeout=5).read().decode().strip())'")
      return r and r.exit_code == 0 and r
    end, 30)
    assert.is_truthy(inside, "execute never reached the daemon on localhost")
    assert.equal("served-by-the-daemon\n", inside.stdout)
    local body = eventually(function() return http_get(doc.urls[1].url) end, 20)
    assert.is_truthy(body, "the forwarded port never answered from the host")
    assert.matches("served%-by%-the%-daemon", body)
    assert.equal("running", assert(c:get_service(svc.id)).state)
    local boot = assert(c:service_execute(svc.id, "cat /tmp/bootstrap.sh"))
    assert.equal(DAEMON:format(8080), boot.stdout)
    assert(c:delete_service(svc.id))
    assert.is_nil((http_get(doc.urls[1].url)), "the forward is closed with the service")
    assert.is_truthy(eventually(function() return mcp.sandbox_procs(srv) == 0 end, 10))
  end)

  it("stop once every process has ended, and refuse execute then", function()
    local svc = assert(c:create_service { name = "brief", bootstrap_content = "echo bye; (sleep 1; echo late) &" })
    local stopped = eventually(function()
      local d = c:get_service(svc.id)
      return d and d.state == "stopped"
    end, 30)
    assert.is_truthy(stopped)
    local log = assert(c:service_logs(svc.id))
    assert.matches("bye\nlate\n", log, 1, true)
    local r, err = c:service_execute(svc.id, "true")
    assert.is_nil(r)
    assert.equal(409, err.status)
    assert.same({}, assert(c:get_service(svc.id)).urls)
    assert(c:delete_service(svc.id))
  end)

  it("refuse forwarded connections while frozen, or thaw when unfreezing on demand", function()
    local svc = assert(c:create_service { name = "cold", ports = { 8081 }, bootstrap_content = DAEMON:format(8081) })
    local url = assert(c:get_service(svc.id)).urls[1].url
    assert.is_truthy(eventually(function() return http_get(url) end, 20))
    assert.equal("frozen", assert(c:freeze_service(svc.id)).state)
    assert.is_nil((http_get(url)), "a frozen service takes no connection")
    assert(c:update_service(svc.id, { unfreeze_on_demand = true }))
    assert.matches("served%-by%-the%-daemon", assert(http_get(url)))
    assert.equal("running", assert(c:get_service(svc.id)).state)
    assert(c:delete_service(svc.id))
  end)

  it("place an execute's input files in /tmp/input/, where it runs", function()
    local svc = assert(c:create_service { name = "files", bootstrap = "sleep 600" })
    local job = assert(c:call("POST", "/services/" .. svc.id .. "/execute", {
      command = "pwd; cat data.txt; cat /tmp/input/data.txt; ls -l run.sh | cut -c1-10",
      input_files = { { filename = "data.txt", content = "aGk=" },
                      { filename = "run.sh", content = "ZWNobyBydW4=" } } }))
    local done = assert(wait_job(job))
    assert.equal("/tmp/input\nhihi-rwxr-xr-x\n", done.stdout)
    assert(c:delete_service(svc.id))
  end)

  it("redeploy as the README prints it: a script sent as an input file runs", function()
    local svc = assert(c:create_service { name = "web2", bootstrap = "sleep 600" })
    local dir = server.tmpdir("redeploy")
    local f = assert(io.open(dir .. "/serve.sh", "w"))
    f:write("echo serving; sleep 600\n")
    f:close()
    -- sent under its base name, mode 0644 on this side: runnable there
    assert(c:redeploy_service(svc.id, { bootstrap_content = "./serve.sh", input_files = { dir .. "/serve.sh" } }))
    assert.is_truthy(eventually(function()
      local log = c:service_logs(svc.id)
      return log and log:find("serving", 1, true)
    end, 20), "the script did not run: " .. tostring(c:service_logs(svc.id)))
    server.rm_rf(dir)
    assert(c:delete_service(svc.id))
  end)

  it("forward on the host's loopback only, out of reach of the sandboxes themselves", function()
    local svc = assert(c:create_service { name = "lo", ports = { 8082 }, bootstrap_content = DAEMON:format(8082) })
    local url = assert(c:get_service(svc.id)).urls[1].url
    local port = tonumber(url:match(":(%d+)$"))
    assert.is_truthy(eventually(function() return http_get(url) end, 20))
    -- the listening socket is 127.0.0.1:port (/proc/net/tcp: 0100007F, state 0A)
    local tcp = assert(io.open("/proc/net/tcp")):read("*a")
    assert.is_truthy(tcp:find(string.format(":%04X 00000000:0000 0A", port)), "no listener on the port")
    for addr in tcp:gmatch("%s([0-9A-F]+):" .. string.format("%04X", port) .. " 00000000:0000 0A") do
      assert.equal("0100007F", addr)
    end
    -- a sandbox's own loopback is its own: the host's listener is not there
    local probe = "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", " .. port
      .. "), 2)' 2>/dev/null && echo reached || echo refused"
    local other = assert(c:create_session())
    assert.equal("refused\n", assert(c:session_execute(other.id, probe)).stdout)
    assert(c:delete_session(other.id))
    assert(c:delete_service(svc.id))
  end)

  it("return a compiled program as an artifact when artifacts are asked for", function()
    local langs = assert(c:get_languages())
    local has_c = false
    for _, l in ipairs(langs) do has_c = has_c or l == "c" end
    if not has_c then return end
    local r = assert(c:execute_code("c", "int main(void){return 0;}", { return_artifacts = true }))
    assert.equal(0, r.exit_code)
    local bin
    for _, a in ipairs(r.artifacts or {}) do if a.filename == "main" then bin = a end end
    assert.is_truthy(bin, "no `main` among the artifacts")
    assert.equal("\127ELF", bin.content:sub(1, 4))
    r = assert(c:execute_code("c", "int main(void){return 0;}"))
    assert.is_nil(r.artifacts and r.artifacts[1], "nothing without asking")
  end)

  it("refuse bad ports and keep serving", function()
    for _, ports in ipairs { { 0 }, { 70000 }, "80", { "80" } } do
      local r, err = c:call("POST", "/services", { ports = ports })
      assert.is_nil(r)
      assert.equal(400, err.status)
    end
    assert.equal("ok", assert(c:call("GET", "/health")).status)
  end)
end)
