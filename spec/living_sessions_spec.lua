-- #integration specs of living sessions (spec §1, §4.2: "long-lived shell
-- containers") against a real unsandboxd: a session is one sandbox from
-- its creation to its ttl or DELETE, so /tmp, background processes and
-- their state live from one command to the next; a command's deadline
-- kills the command, not the session; the ttl ends it; its processes stay
-- in its cgroup; shells and multiplexers; freeze needs a multiplexer;
-- snapshots of a living session; a server restart. Bad input included.
local unsandbox = require "unsandbox"
local server = require "spec.helpers.unsandboxd"
local mcp = require "spec.helpers.mcp"

local eventually = require("spec.helpers.wait").eventually

-- A web server started in the background by one command: its port.
local SERVE = "cd /tmp && echo hello-from-tmp > index.html && "
  .. "(python3 -m http.server %d --bind 127.0.0.1 >/dev/null 2>&1 &) ; echo started"
local FETCH = "python3 -c 'import urllib.request,sys;"
  .. "print(urllib.request.urlopen(\"http://127.0.0.1:%d/index.html\", timeout=5).read().decode().strip())'"

describe("living sessions #integration", function()
  local srv, c

  setup(function()
    srv = server.start()
    c = unsandbox.client(srv.client_opts())
  end)
  teardown(function()
    if c then c:close() end
    if srv then srv.stop() end
  end)

  it("keep /tmp and background processes from one command to the next", function()
    local s = assert(c:create_session())
    local r = assert(c:session_execute(s.id, SERVE:format(8123)))
    assert.equal("started\n", r.stdout)
    local got = eventually(function()
      local x = c:session_execute(s.id, FETCH:format(8123))
      return x and x.exit_code == 0 and x
    end, 20)
    assert.is_truthy(got, "the background web server never answered")
    assert.equal("hello-from-tmp\n", got.stdout)
    assert.equal("hello-from-tmp\n", assert(c:session_execute(s.id, "cat /tmp/index.html")).stdout)
    -- a plain `cmd &` whose output goes on after the answer neither blocks the
    -- session nor dies of a closed pipe
    assert(c:session_execute(s.id, "(for i in $(seq 1 100); do echo $i; sleep 0.02; done; touch /tmp/done) &"))
    assert.is_truthy(eventually(function()
      local x = c:session_execute(s.id, "test -e /tmp/done && echo yes")
      return x and x.stdout == "yes\n"
    end, 20), "the background writer died")
    assert(c:delete_session(s.id))
  end)

  it("kill a command at its deadline, not the session", function()
    local s = assert(c:create_session())
    assert(c:session_execute(s.id, "nohup sleep 300 >/dev/null 2>&1 & echo $! > /tmp/keeper"))
    local r = assert(c:session_execute(s.id, "sleep 60", { timeout = 1 }))
    assert.equal("timeout", r.status)
    local alive = assert(c:session_execute(s.id, "kill -0 $(cat /tmp/keeper) && echo alive"))
    assert.equal("alive\n", alive.stdout)
    assert(c:delete_session(s.id))
  end)

  it("end at their ttl: the sandbox, its processes and the session are gone", function()
    -- long enough for the command below to land before it on a busy machine
    local doc = assert(c:call("POST", "/sessions", { ttl = 6 }))
    local id = doc.session_id
    assert.is_true(doc.remaining_ttl <= 6 and doc.remaining_ttl >= 1)
    assert(c:session_execute(id, "nohup sleep 300 >/dev/null 2>&1 &"))
    assert.is_true(mcp.sandbox_procs(srv) > 0)
    local gone = eventually(function()
      local _, err = c:get_session(id)
      return err and err.status == 404
    end, 30)
    assert.is_truthy(gone, "the session outlived its ttl")
    assert.is_truthy(eventually(function() return mcp.sandbox_procs(srv) == 0 end, 10),
      "a process of the session outlived it")
    local r, err = c:session_execute(id, "true")
    assert.is_nil(r)
    assert.equal(404, err.status)
  end)

  it("count remaining_ttl down from the creation", function()
    local s = assert(c:call("POST", "/sessions", { ttl = 600 }))
    local later = eventually(function()
      local d = c:get_session(s.session_id)
      return d and d.remaining_ttl < 600 and d
    end, 5)
    assert.is_truthy(later)
    assert(c:session_execute(s.session_id, "true"))
    assert.is_true(assert(c:get_session(s.session_id)).remaining_ttl < 600, "a command does not extend it")
    assert(c:delete_session(s.session_id))
  end)

  it("keep every process in the session's sandbox and leave none after a DELETE", function()
    local s = assert(c:create_session())
    assert(c:session_execute(s.id, "setsid nohup sleep 300 >/dev/null 2>&1 < /dev/null & disown; true"))
    assert.is_true(mcp.sandbox_procs(srv) >= 2, "the sandbox and its escapee are in the runs' cgroups")
    assert(c:delete_session(s.id))
    assert.is_truthy(eventually(function() return mcp.sandbox_procs(srv) == 0 end, 10))
  end)

  it("name any shell this machine has, and list them in /health", function()
    local health = assert(c:call("GET", "/health"))
    assert.is_table(health.shells)
    assert.is_true(#health.shells >= 2)
    local has = {}
    for _, name in ipairs(health.shells) do has[name] = true end
    assert.is_true(has.bash and has.python3)
    local s = assert(c:create_session { shell = "python3" })
    assert.equal("python3", assert(c:get_session(s.id)).shell)
    assert.equal("42\n", assert(c:session_execute(s.id, "echo 42")).stdout, "commands are bash lines")
    assert(c:delete_session(s.id))
    local r, err = c:create_session { shell = "cobol-repl" }
    assert.is_nil(r)
    assert.equal(400, err.status)
    assert.matches("shell 'cobol%-repl' is not available here; available: %[\"bash\"", err.message)
    r, err = c:create_session { multiplexer = "byobu" }
    assert.is_nil(r)
    assert.equal(400, err.status)
    assert.matches("multiplexer 'byobu'", err.message)
  end)

  it("freeze only with a multiplexer, as the spec says, and then pause the whole sandbox", function()
    local plain = assert(c:create_session())
    local r, err = c:freeze_session(plain.id)
    assert.is_nil(r)
    assert.equal(400, err.status)
    assert.matches("multiplexer", err.message)
    assert(c:delete_session(plain.id))
    local health = assert(c:call("GET", "/health"))
    if #health.multiplexers == 0 then return end     -- nothing to freeze with here
    local s = assert(c:create_session { multiplexer = health.multiplexers[1] })
    assert(c:session_execute(s.id, "(while :; do date +%s%N > /tmp/beat; sleep 0.05; done) &"))
    assert.equal("frozen", assert(c:freeze_session(s.id)).status)
    r, err = c:session_execute(s.id, "true")
    assert.is_nil(r)
    assert.equal(409, err.status)
    assert.equal("running", assert(c:unfreeze_session(s.id)).status)
    assert.equal("ok\n", assert(c:session_execute(s.id, "echo ok")).stdout)
    assert(c:delete_session(s.id))
  end)

  it("snapshot a living session without stopping what runs in it", function()
    local s = assert(c:create_session())
    assert(c:session_execute(s.id, "echo kept > k.txt; nohup sleep 300 >/dev/null 2>&1 & echo $! > /tmp/p"))
    local snap = assert(c:session_snapshot(s.id))
    assert.equal("kept\n", assert(c:session_execute(s.id, "cat k.txt")).stdout)
    assert.equal("alive\n", assert(c:session_execute(s.id, "kill -0 $(cat /tmp/p) && echo alive")).stdout)
    local clone = assert(c:clone_snapshot(snap.id, { type = "session" }))
    assert.equal("kept\n", assert(c:session_execute(clone.id, "cat k.txt")).stdout)
    for _, id in ipairs { s.id, clone.id } do assert(c:delete_session(id)) end
  end)

  it("refuse bad bodies with 400 and keep serving", function()
    for _, body in ipairs { { ttl = 0 }, { ttl = 86401 }, { shell = 7 }, { multiplexer = {} }, { vcpu = 9 } } do
      local r, err = c:call("POST", "/sessions", body)
      assert.is_nil(r)
      assert.equal(400, err.status)
    end
    local s = assert(c:create_session())
    local r, err = c:call("POST", "/sessions/" .. s.id .. "/shell", { command = string.rep("x", 131001) })
    assert.is_nil(r)
    assert.equal(400, err.status)
    assert.matches("longer than", err.message)
    assert.equal("long\n", assert(c:session_execute(s.id, ": " .. string.rep("x", 100000) .. "; echo long")).stdout)
    assert.equal("fine\n", assert(c:session_execute(s.id, "echo fine")).stdout)
    assert(c:delete_session(s.id))
  end)
end)

describe("living sessions across a restart #integration", function()
  it("start a new sandbox on the kept volume at the next use", function()
    local srv = server.start()
    local c = unsandbox.client(srv.client_opts())
    local s = assert(c:create_session())
    assert(c:session_execute(s.id, "echo home > h.txt; echo tmp > /tmp/t.txt"))
    c:close()
    srv.stop(true)
    local again = server.start { data = srv.data }
    c = unsandbox.client(again.client_opts())
    local r = assert(c:session_execute(s.id, "cat h.txt; cat /tmp/t.txt 2>/dev/null || echo no-tmp"))
    assert.equal("home\nno-tmp\n", r.stdout)
    assert(c:delete_session(s.id))
    c:close()
    again.stop()
    server.rm_rf(srv.data)
  end)
end)
