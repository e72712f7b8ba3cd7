-- #integration specs of the Control Plane's MCP endpoint,
-- POST /v1/sandboxes/{sb}/mcp (spec §5.4, §5.5): JSON-RPC checks and
-- methods, the shell tool (exec, exec_stream over SSE, PTY sessions), the
-- file tools, every error code, hostile paths and commands, clients that
-- hang up mid-stream. All against a real unsandboxd with real sandboxes.
-- One Lua: the subject is the server's wire (raw HTTP).
local server = require "spec.helpers.unsandboxd"
local cp = require "spec.helpers.cp"
local mcp = require "spec.helpers.mcp"
local json = require "cjson"
local socket = require "socket"
local wait = require "spec.helpers.wait"

describe("Control Plane MCP #integration", function()
  local srv, ws, sb

  setup(function()
    srv = server.start { args = { "--disk-mb", "64" } }
    ws, sb = mcp.sandbox(srv, "mcp-main")
  end)
  teardown(function() if srv then srv.stop() end end)

  -- The processes named comm inside sb, counted by a command there.
  local function inside(comm)
    local out = mcp.sh(srv, sb, "n=0; for f in /proc/[0-9]*/comm; do read c < $f 2>/dev/null && " ..
      "[ \"$c\" = " .. comm .. " ] && n=$((n+1)); done; echo $n")
    return tonumber(out)
  end

  describe("JSON-RPC", function()
    it("answers tools/list, server/discover and the legacy initialize", function()
      local st, doc = mcp.post(srv, sb, "tools/list", {})
      assert.are.equal(200, st)
      local names = {}
      for _, t in ipairs(doc.result.tools) do names[#names + 1] = t.name; assert.is_table(t.inputSchema) end
      assert.same({ "shell", "file_read", "file_write", "file_edit", "file_glob", "file_grep" }, names)
      st, doc = mcp.post(srv, sb, "server/discover", {})
      assert.are.equal(200, st)
      assert.are.equal("2026-07-28", doc.result.protocolVersion)
      assert.same({ name = "sandbox-shell", version = "0.4.0" }, doc.result.serverInfo)
      -- initialize needs none of the version checks
      st, doc = mcp.post(srv, sb, "initialize", {}, { headers = {}, body = { jsonrpc = "2.0", id = 1,
        method = "initialize", params = { protocolVersion = "2024-11-05" } } })
      assert.are.equal(200, st)
      assert.are.equal("2024-11-05", doc.result.protocolVersion)
      assert.are.equal(1, doc.id)
    end)

    it("checks the version header, _meta and Mcp-Method / Mcp-Name: -32600 with HTTP 200", function()
      local body = mcp.body("tools/call", { name = "shell", arguments = { command = "true" } })
      local cases = {
        { h = { ["Mcp-Method"] = "tools/call", ["Mcp-Name"] = "shell" }, why = "MCP%-Protocol%-Version" },
        { h = { ["MCP-Protocol-Version"] = "2025-06-18", ["Mcp-Method"] = "tools/call", ["Mcp-Name"] = "shell" },
          why = "MCP%-Protocol%-Version" },
        { h = mcp.headers("tools/list", "shell"), why = "Mcp%-Method" },
        { h = mcp.headers("tools/call", "file_read"), why = "Mcp%-Name" },
        { h = mcp.headers("tools/call", nil), why = "Mcp%-Name" },
      }
      for _, c in ipairs(cases) do
        local st, doc = mcp.post(srv, sb, nil, nil, { headers = c.h, body = body })
        assert.are.equal(200, st)
        assert.are.equal(-32600, doc.error.code)
        assert.matches(c.why, doc.error.message)
        assert.are.equal(body.id, doc.id)
      end
      local nometa = mcp.body("tools/list", {})
      nometa._meta = nil
      local st, doc = mcp.post(srv, sb, nil, nil, { headers = mcp.headers("tools/list"), body = nometa })
      assert.are.equal(200, st)
      assert.are.equal(-32600, doc.error.code)
      assert.matches("_meta", doc.error.message)
    end)

    it("answers -32601 to unknown methods and 202 to notifications", function()
      local st, doc = mcp.post(srv, sb, "resources/list", {}, { headers = mcp.headers("resources/list") })
      assert.are.equal(200, st)
      assert.are.equal(-32601, doc.error.code)
      st, doc = mcp.post(srv, sb, nil, nil, { headers = {}, body = { jsonrpc = "2.0",
        method = "notifications/initialized" } })
      assert.are.equal(202, st)
      assert.are.equal("", doc)
    end)

    it("answers HTTP 400 and -32600 to a body over 64000 bytes, bad JSON or no JSON-RPC", function()
      local big = mcp.body("tools/call", { name = "shell", arguments = { command = string.rep("x", 64000) } })
      local bodies = { json.encode(big), "{", "[]", '{"jsonrpc":"1.0","id":1,"method":"tools/list"}',
                       '{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/list"}' }
      for _, b in ipairs(bodies) do
        local st, doc = mcp.post(srv, sb, nil, nil, { headers = mcp.headers("tools/call", "shell"), body = b })
        assert.are.equal(400, st, b:sub(1, 60))
        assert.are.equal(-32600, doc.error.code)
      end
      -- a body just at the limit is read
      local fill = mcp.body("tools/list", {})
      fill.pad = ""
      fill.pad = string.rep("p", 64000 - #json.encode(fill))
      local st, doc = mcp.post(srv, sb, nil, nil, { headers = mcp.headers("tools/list"), body = json.encode(fill) })
      assert.are.equal(200, st)
      assert.is_table(doc.result)
    end)

    it("takes only this sandbox's token: none, a workspace token or another sandbox's is 401", function()
      local _, other = mcp.sandbox(srv, "mcp-other")
      local cases = { { token = false }, { token = ws.access_token }, { token = other.access_token },
                      { token = srv.token }, { token = sb.access_token .. "x" } }
      for i, c in ipairs(cases) do
        local st, doc = cp.request(srv, "POST", sb.mcp_url, { token = c.token or nil,
          headers = mcp.headers("tools/list"), body = mcp.body("tools/list", {}) })
        assert.are.equal(401, st, "case " .. i)
        assert.is_string(doc.error)
      end
      cp.request(srv, "DELETE", "/v1/sandboxes/" .. other.id, { token = srv.token })
      -- a released sandbox's own token reaches no runtime
      local st, doc = mcp.post(srv, other, "tools/list", {})
      assert.are.equal(502, st)
      assert.matches("internal service unavailable", doc.error)
    end)
  end)

  describe("shell", function()
    it("runs exec in /workspace with bash, no profile, pipefail", function()
      local r = mcp.tool(srv, sb, "shell",
        { command = "echo out; echo err >&2; pwd; false | true; echo pf=$?; exit 3" })
      assert.are.equal("out\n/workspace\npf=1\n", r.stdout)
      assert.are.equal("err\n", r.stderr)
      assert.are.equal(3, r.exit_code)
      assert.is_false(r.timed_out)
      assert.is_false(r.output_truncated)
      assert.are.equal(sb.id, r.sandbox_id)
      assert.are.equal(ws.workspace_id, r.workspace_id)
      local keys = {}
      for k in pairs(r) do keys[#keys + 1] = k end
      table.sort(keys)
      assert.same({ "exit_code", "output_truncated", "sandbox_id", "stderr", "stdout", "timed_out", "workspace_id" },
        keys)
      local _, _, _, doc = mcp.tool(srv, sb, "shell", { command = "echo x" })
      assert.same(doc.result.structuredContent, json.decode(doc.result.content[1].text))
      assert.are.equal("text", doc.result.content[1].type)
      assert.is_false(doc.result.isError)
    end)

    it("caps each stream at 64000 bytes and kills the process group at the timeout", function()
      local r = mcp.tool(srv, sb, "shell",
        { command = "head -c 200000 /dev/zero | tr '\\0' a; head -c 100000 /dev/zero | tr '\\0' b >&2" })
      assert.are.equal(64000, #r.stdout)
      assert.are.equal(64000, #r.stderr)
      assert.is_true(r.output_truncated)
      local t0 = socket.gettime()
      r = mcp.tool(srv, sb, "shell", { command = "sleep 50 & sleep 60; echo never", timeout_seconds = 1 })
      assert.is_true(socket.gettime() - t0 < 5)
      assert.is_true(r.timed_out)
      assert.are.equal(-9, r.exit_code)
      assert.are.equal("", r.stdout)
      assert.are.equal(0, wait.eventually(function() return inside("sleep") == 0 and 0 end, 5))
    end)

    it("checks its arguments: -32602", function()
      local cases = {
        { action = "rm", command = "x" }, { command = "x", cwd = "/" }, { action = 1, command = "x" },
        {}, { command = 7 }, { command = "x", timeout_seconds = 0 }, { command = "x", timeout_seconds = 31 },
        { command = "x", timeout_seconds = "5" }, { command = "x", timeout_seconds = 2.5 },
        { action = "session_wait", session_id = "s", timeout_seconds = 121 },
        { action = "session_exec", command = "x" }, { action = "session_exec", session_id = "-x", command = "x" },
        { action = "session_exec", session_id = string.rep("s", 65), command = "x" },
        { action = "session_exec", session_id = "a/b", command = "x" },
        { action = "session_input", session_id = "s" },
        { action = "session_input", session_id = "s", input = "x", append_newline = "no" },
        { action = "session_exec", session_id = "s", command = "x", async = "yes" },
        { command = string.rep("x", 8193) },
        { action = "session_input", session_id = "s", input = string.rep("x", 8193) },
      }
      for i, args in ipairs(cases) do
        local r, err, st = mcp.tool(srv, sb, "shell", args)
        assert.are.equal(200, st, "case " .. i)
        assert.is_nil(r, "case " .. i)
        assert.are.equal(-32602, err.code, "case " .. i .. ": " .. json.encode(err))
      end
      local r = mcp.tool(srv, sb, "shell", { command = "printf %s " .. string.rep("y", 8180) })
      assert.are.equal(8180, #r.stdout)
      local _, err = mcp.tool(srv, sb, "nope", {}, { headers = mcp.headers("tools/call", "nope") })
      assert.are.equal(-32602, err.code)
    end)

    it("streams exec_stream as the command writes, in the exact SSE shape", function()
      local out = mcp.stream(srv, sb, { action = "exec_stream", command = "echo a; sleep 2; echo b >&2" },
        { id = "req-7" })
      assert.are.equal(200, out.status)
      assert.are.equal("text/event-stream; charset=utf-8", out.headers["content-type"])
      assert.are.equal("no-cache, no-transform", out.headers["cache-control"])
      assert.are.equal("close", out.headers["connection"])
      local progress, final = mcp.split(out)
      assert.are.equal(2, #progress)
      for i, f in ipairs(progress) do
        assert.are.equal("message", f.event)
        local p = f.msg.params
        assert.are.equal("req-7", p.progressToken)
        assert.are.equal(i, p.progress)
        assert.are.equal(i, p._meta.sequence)
      end
      assert.are.equal("a\n", progress[1].msg.params.message)
      assert.are.equal("stdout", progress[1].msg.params._meta.channel)
      assert.are.equal("b\n", progress[2].msg.params.message)
      assert.are.equal("stderr", progress[2].msg.params._meta.channel)
      -- the first chunk is not held back until the end
      assert.is_true(progress[1].t < 1.0, "first chunk at " .. progress[1].t)
      assert.is_true(progress[2].t >= 1.9, "second chunk at " .. progress[2].t)
      assert.are.equal("req-7", final.msg.id)
      local r = final.msg.result.structuredContent
      assert.are.equal(2, r.stream_chunks)
      assert.are.equal("a\n", r.stdout)
      assert.are.equal(sb.id, r.sandbox_id)
      assert.same(r, json.decode(final.msg.result.content[1].text))
      assert.are.equal(3, #out.frames)
    end)

    it("answers exec_stream buffered when the client does not accept SSE", function()
      local st, doc, h = mcp.post(srv, sb, "tools/call", { name = "shell",
        arguments = { action = "exec_stream", command = "echo hi" } })
      assert.are.equal(200, st)
      assert.matches("^application/json", h["content-type"])
      assert.are.equal("hi\n", doc.result.structuredContent.stdout)
    end)

    it("kills an exec_stream command whose client hangs up", function()
      local out = mcp.stream(srv, sb, { action = "exec_stream", command = "echo started; exec sleep 40" },
        { on_frame = function() return "close" end })
      assert.is_true(out.closed)
      assert.are.equal(0, wait.eventually(function() return inside("sleep") == 0 and 0 end, 5))
    end)
  end)

  describe("PTY sessions", function()
    it("run commands on a terminal that read what session_input sends", function()
      local r = mcp.tool(srv, sb, "shell", { action = "session_exec", session_id = "t1", command = "tty; cd src; pwd" })
      assert.matches("^/dev/pts/%d+\n/workspace/src\n$", r.stdout)
      assert.are.equal(0, r.exit_code)
      assert.is_false(r.running)
      assert.are.equal("session_exec", r.action)
      assert.are.equal("", r.stderr)
      r = mcp.tool(srv, sb, "shell", { action = "session_exec", session_id = "t1",
        command = "pwd; read x; echo got:$x; exit 4",
        async = true })
      assert.is_true(r.running)
      assert.are.equal(json.null, r.exit_code)
      r = mcp.tool(srv, sb, "shell", { action = "session_input", session_id = "t1", input = "hello" })
      assert.matches("got:hello", r.stdout)
      assert.are.equal(4, r.exit_code)
      r = mcp.tool(srv, sb, "shell", { action = "session_exec", session_id = "t1", command = "echo again" })
      assert.is_true(r.session_restarted)     -- `exit 4` ended that shell
    end)

    it("drive an interactive python3 and kill it", function()
      local r = mcp.tool(srv, sb, "shell", { action = "session_exec", session_id = "py", command = "python3 -i",
        async = true })
      assert.is_true(r.running)
      r = mcp.tool(srv, sb, "shell", { action = "session_input", session_id = "py", input = "print(6*7)" })
      assert.matches("42", r.stdout)
      assert.is_true(r.running)
      r = mcp.tool(srv, sb, "shell", { action = "session_wait", session_id = "py", timeout_seconds = 1 })
      assert.is_true(r.wait_timed_out)
      r = mcp.tool(srv, sb, "shell", { action = "session_kill", session_id = "py" })
      assert.are.equal(-9, r.exit_code)
      assert.is_true(r.session_restarted)
      assert.is_false(r.running)
    end)

    it("say which session does not exist, and which is busy", function()
      local _, err = mcp.tool(srv, sb, "shell", { action = "session_wait", session_id = "ghost" })
      assert.are.equal(-32602, err.code)
      assert.are.equal("shell session 'ghost' does not exist; call exec first", err.message)
      mcp.tool(srv, sb, "shell", { action = "session_exec", session_id = "busy1", command = "sleep 3", async = true })
      local _, e2 = mcp.tool(srv, sb, "shell", { action = "session_exec", session_id = "busy1", command = "true" })
      assert.are.equal(-32602, e2.code)
      assert.matches("still running a command", e2.message)
      mcp.tool(srv, sb, "shell", { action = "session_kill", session_id = "busy1" })
    end)

    it("stream session_exec, and a client hanging up kills the session's command", function()
      local out = mcp.stream(srv, sb, { action = "session_exec", session_id = "s-stream",
        command = "echo one; sleep 1; echo two" })
      local progress, final = mcp.split(out)
      assert.is_true(#progress >= 2)
      assert.are.equal("stdout", progress[1].msg.params._meta.channel)
      assert.are.equal(#progress, final.msg.result.structuredContent.stream_chunks)
      assert.are.equal("session_exec", final.msg.result.structuredContent.action)
      out = mcp.stream(srv, sb, { action = "session_exec", session_id = "s-stream", command = "echo go; sleep 45" },
        { on_frame = function() return "close" end })
      assert.is_true(out.closed)
      assert.are.equal(0, wait.eventually(function() return inside("sleep") == 0 and 0 end, 5))
      local r = mcp.tool(srv, sb, "shell", { action = "session_exec", session_id = "s-stream", command = "echo back" })
      assert.is_true(r.session_restarted)
      assert.are.equal("back\n", r.stdout)
    end)

    it("keep a command going when a session_wait client hangs up", function()
      mcp.tool(srv, sb, "shell", { action = "session_exec", session_id = "w1", command = "sleep 2; echo finished",
        async = true })
      local out = mcp.stream(srv, sb, { action = "session_wait", session_id = "w1", timeout_seconds = 10 },
        { limit = 0.5 })
      assert.is_nil(select(2, mcp.split(out)))   -- hung up before the end
      -- the abandoned wait lets go of the session once the server saw the hang-up
      local r = wait.eventually(function()
        return (mcp.tool(srv, sb, "shell", { action = "session_wait", session_id = "w1", timeout_seconds = 10 }))
      end, 5)
      assert.matches("finished", r.stdout)
      assert.are.equal(0, r.exit_code)
      assert.is_false(r.session_restarted)
    end)

    it("allow 16 sessions; the 17th is -32001", function()
      local _, w = mcp.sandbox(srv, "mcp-sessions")
      for i = 1, 16 do
        local r = mcp.tool(srv, w, "shell", { action = "session_exec", session_id = "n" .. i, command = "true" })
        assert.are.equal(0, r.exit_code, "session " .. i)
      end
      local _, err = mcp.tool(srv, w, "shell", { action = "session_exec", session_id = "n17", command = "true" })
      assert.are.equal(-32001, err.code)
      assert.matches("busy", err.message)
      cp.request(srv, "DELETE", "/v1/sandboxes/" .. w.id, { token = srv.token })
    end)
  end)

  describe("file tools", function()
    it("write, read, edit, glob and grep, as the REST routes do", function()
      local r = mcp.tool(srv, sb, "file_write", { path = "src/m.txt", content = "alpha\nbeta\n" })
      assert.same({ path = "src/m.txt", chars = 11, bytes = 11, sandbox_id = sb.id, workspace_id = ws.workspace_id }, r)
      r = mcp.tool(srv, sb, "file_edit", { path = "src/m.txt", old = "beta", new = "gamma" })
      assert.are.equal(1, r.replacements)
      r = mcp.tool(srv, sb, "file_read", { path = "src/m.txt", offset = 2 })
      assert.are.equal("gamma\n", r.content)
      assert.are.equal(2, r.start_line)
      local st, rest = cp.request(srv, "GET",
        "/v1/workspaces/" .. ws.workspace_id .. "/files/read?path=src/m.txt&offset=2",
        { token = ws.access_token })
      assert.are.equal(200, st)
      r.sandbox_id = nil
      assert.same(rest, r)
      r = mcp.tool(srv, sb, "file_glob", { pattern = "**/m.txt" })
      assert.same({ "src/m.txt" }, r.matches)
      r = mcp.tool(srv, sb, "file_grep", { pattern = "GAMMA", case_insensitive = true, mode = "content" })
      assert.are.equal(1, r.match_count)
      assert.are.equal("gamma", r.files[1].lines[1].text)
    end)

    it("refuse escapes and misuse with -32602", function()
      mcp.sh(srv, sb, "ln -sfn /etc/passwd out-link; ln -sfn / root-link; mkdir -p d; ln -sfn .sandbox sbx")
      local cases = {
        { "file_read", { path = "../etc/passwd" } }, { "file_read", { path = "/etc/passwd" } },
        { "file_read", { path = "a\0b" } }, { "file_read", { path = "out-link" } },
        { "file_read", { path = "root-link/etc/passwd" } }, { "file_write", { path = ".sandbox/x", content = "x" } },
        { "file_write", { path = "sbx/x", content = "x" } }, { "file_write", { path = "root-link/tmp/x",
          content = "x" } },
        { "file_edit", { path = "src/m.txt", old = "not there", new = "x" } }, { "file_read", { path = "" } },
        { "file_read", { path = "src/m.txt", offset = 99 } }, { "file_glob", { pattern = "../*" } },
        { "file_grep", { pattern = "(", regex = true } }, { "file_read", { path = "src/m.txt", bogus = 1 } },
        { "file_read", { path = "src/m.txt", op = "exec" } },
      }
      for i, c in ipairs(cases) do
        local r, err, st = mcp.tool(srv, sb, c[1], c[2], { headers = mcp.headers("tools/call", c[1]) })
        assert.are.equal(200, st, "case " .. i)
        assert.is_nil(r, "case " .. i)
        assert.are.equal(-32602, err.code, "case " .. i .. " " .. json.encode(err))
      end
      local _, err = mcp.tool(srv, sb, "file_edit", { path = "src/m.txt", old = "nothing", new = "x" },
        { headers = mcp.headers("tools/call", "file_edit") })
      assert.matches("old string was not found", err.message)
      -- nothing was written outside, nothing into .sandbox
      assert.are.equal("", mcp.sh(srv, sb, "ls .sandbox"))
    end)

    it("say -32602 for a full disk", function()
      mcp.sh(srv, sb, "head -c 80M /dev/zero > filler 2>/dev/null; true")
      local _, err = mcp.tool(srv, sb, "file_write", { path = "more.txt", content = string.rep("m", 60000) },
        { headers = mcp.headers("tools/call", "file_write") })
      mcp.sh(srv, sb, "rm -f filler")
      assert.are.equal(-32602, err.code, json.encode(err))
      assert.matches("no space left", err.message)
    end)
  end)

  describe("other failures", function()
    it("are -32603: the runtime cannot fork because its code took every process", function()
      local _, w = mcp.sandbox(srv, "mcp-pids")
      -- the sandbox goes whatever happens here, so no later test counts it
      finally(function() cp.request(srv, "DELETE", "/v1/sandboxes/" .. w.id, { token = srv.token }) end)
      -- (forking 700 processes takes a while on a loaded machine: each lives
      -- until the session is killed, and the bounds tell slow from never)
      mcp.tool(srv, w, "shell", { action = "session_exec", session_id = "fill", async = true,
        command = "for i in $(seq 700); do sleep 600 & done 2>/dev/null" })
      local err = wait.eventually(function()
        local _, e = mcp.tool(srv, w, "shell", { command = "true" })
        return e and e.code == -32603 and e
      end, 120)
      assert.is_table(err)
      assert.matches("fork", err.message)
      local r = mcp.tool(srv, w, "shell", { action = "session_kill", session_id = "fill" })
      assert.are.equal(-9, r.exit_code)
      assert.are.equal("ok\n", wait.eventually(function()
        local r2 = mcp.tool(srv, w, "shell", { command = "echo ok" })
        return r2 and r2.stdout
      end, 60))
    end)
  end)

  describe("hostile commands", function()
    it("leave no process behind: a flood, a fork bomb, a timeout; an escapee dies with the sandbox", function()
      local _, w = mcp.sandbox(srv, "mcp-hostile")
      local function count()     -- processes in w but the counting bash, ls and wc
        return tonumber((mcp.sh(srv, w, "ls -d /proc/[0-9]* | wc -l"))) - 3
      end
      local base = count()
      local r = mcp.tool(srv, w, "shell", { command = "yes flood | head -c 50000000", timeout_seconds = 10 })
      assert.is_true(r.output_truncated)
      assert.are.equal(64000, #r.stdout)
      assert.are.equal(base, wait.eventually(function() return count() == base and base end, 5))
      r = mcp.tool(srv, w, "shell", { command = "f() { f | f & }; f; sleep 3", timeout_seconds = 3 })
      assert.is_table(r)
      -- a loaded machine takes a while to reap hundreds of killed processes
      -- (they are reparented to the sandbox's init): 30 s tells that from never
      assert.are.equal(base, wait.eventually(function() return count() == base and base end, 30))
      r = mcp.tool(srv, w, "shell", { command = "sleep 100 & sleep 100", timeout_seconds = 1 })
      assert.is_true(r.timed_out)
      assert.are.equal(base, wait.eventually(function() return count() == base and base end, 5))
      -- a process that leaves the command's group outlives the command, not the sandbox
      mcp.sh(srv, w, "setsid sleep 100 >/dev/null 2>&1 < /dev/null & sleep 0.5")
      -- the command's own shell may still be ending on a loaded machine
      assert.are.equal(base + 1, wait.eventually(function() return count() == base + 1 and base + 1 end, 5))
      local before = mcp.sandbox_procs(srv)
      local st = cp.request(srv, "DELETE", "/v1/sandboxes/" .. w.id, { token = srv.token })
      assert.are.equal(200, st)
      -- gone: what ran in w (its init, the agent; the exec handler counted in
      -- base has ended), the escapee, and the outer bwrap seen from the host
      local after = mcp.sandbox_procs(srv)
      assert.is_true(after <= before - base - 1, ("before %d, after %d, base %d"):format(before, after, base))
      local _, list = cp.request(srv, "GET", "/v1/sandboxes", { token = srv.token })
      assert.are.equal(1, #list.sandboxes)
      assert.are.equal(200, (cp.request(srv, "GET", "/livez")))
      assert.are.equal("x\n", mcp.sh(srv, sb, "echo x"))
    end)

    it("free a stream whose client hung up, and the server stays up", function()
      for _ = 1, 5 do
        local out = mcp.stream(srv, sb, { action = "exec_stream",
          command = "while true; do echo tick; sleep 0.05; done",
          timeout_seconds = 30 }, { on_frame = function(f)
            return f.msg and f.msg.params and f.msg.params.progress >= 3 and "close" or nil
          end })
        assert.is_true(out.closed)
      end
      assert.are.equal(0, wait.eventually(function() return inside("sleep") == 0 and 0 end, 5))
      assert.are.equal(200, (cp.request(srv, "GET", "/livez")))
    end)
  end)

  describe("the end", function()
    it("releasing the sandbox leaves no process", function()
      local st = cp.request(srv, "DELETE", "/v1/sandboxes/" .. sb.id, { token = srv.token })
      assert.are.equal(200, st)
      assert.are.equal(0, mcp.sandbox_procs(srv))
      local st2 = mcp.post(srv, sb, "tools/list", {})
      assert.are.equal(502, st2)
    end)
  end)
end)

describe("Control Plane MCP and the idle clock #integration", function()
  local srv

  setup(function() srv = server.start { args = { "--cp-idle-ttl", "2" } } end)
  teardown(function() if srv then srv.stop() end end)

  it("MCP calls keep a runtime; without them it is released", function()
    local _, sb = mcp.sandbox(srv, "idle")
    -- time itself is what this tests: calls every half second for twice
    -- the idle TTL keep it running
    local t0 = wait.now()
    wait.eventually(function()
      assert.are.equal(200, (mcp.post(srv, sb, "tools/list", {})))
      return wait.now() - t0 >= 4
    end, 30, 0.5)
    local _, got = cp.request(srv, "GET", "/v1/sandboxes/" .. sb.id, { token = srv.token })
    assert.are.equal("running", got.status)
    local status = wait.eventually(function()
      local _, g = cp.request(srv, "GET", "/v1/sandboxes/" .. sb.id, { token = srv.token })
      return g.status == "released" and g.status
    end, 6)
    assert.are.equal("released", status)
    assert.are.equal(0, mcp.sandbox_procs(srv))
  end)
end)

describe("Control Plane MCP and a server shutdown #integration", function()
  local srv

  setup(function() srv = server.start {} end)
  teardown(function() if srv then srv.stop() end end)

  it("ends a stream in flight with an error frame and stops within the drain", function()
    local _, sb = mcp.sandbox(srv, "down")
    local t_term
    local out = mcp.stream(srv, sb, { action = "exec_stream", command = "echo started; sleep 30",
      timeout_seconds = 30 },
      { limit = 15, on_frame = function()
          if not t_term then t_term = socket.gettime(); os.execute("kill -TERM " .. srv.pid) end
        end })
    local _, final = mcp.split(out)
    assert.is_table(final, out.raw)
    assert.are.equal(-32603, final.msg.error.code)
    assert.matches("shutting down", final.msg.error.message)
    assert.is_true(socket.gettime() - t_term < 3, "final frame after " .. (socket.gettime() - t_term) .. " s")
    assert.is_truthy(wait.eventually(function() return not server.alive(srv.pid) end, 10))
  end)
end)
