-- #integration specs of unsandbox.Sandbox and the Manager's MCP tools
-- against the local Control Plane: files, commands with POSIX-quoted
-- argv, SSE delivered before the command ends, cancellation (by
-- is_cancelled and by the interrupt flag Ctrl-C raises), the lines
-- iterator, PTY sessions, JSON-RPC error codes, checkpoints, binary
-- upload/download, the workspace file routes, and `<close>` releasing the
-- runtime also when its block fails.
local server = require "spec.helpers.unsandboxd"
local cp = require "spec.helpers.cp"
local lua = require "spec.helpers.lua"
local core = require "unsandbox.core"

describe("unsandbox.Sandbox #integration", function()
  local srv, unsandbox, m

  setup(function()
    srv = server.start {}
    unsandbox = require "unsandbox"
    m = unsandbox.manager { url = srv.cp_url, token = srv.token, env = {} }
  end)
  teardown(function() if srv then srv.stop() end end)


  local function sandbox(name, extra)
    local o = { name = name, manager = m }
    for k, v in pairs(extra or {}) do o[k] = v end
    return assert(unsandbox.Sandbox.create(o))
  end

  describe("life", function()
    it("create, get, get_or_create and stop; files stay with the name", function()
      local sb = sandbox("life-1")
      local st = sb:status()
      assert.matches("^sb%-%x+$", st.sandbox_id)
      assert.is_true(st.runtime_ready)
      assert(sb:write_file("notes/a.txt", "kept\n"))
      local same = assert(unsandbox.Sandbox.get { name = "life-1", manager = m })
      assert.equal(st.sandbox_id, same:status().sandbox_id)
      assert.equal(st.sandbox_id, assert(unsandbox.Sandbox.get_or_create { name = "life-1",
        manager = m }):status().sandbox_id)
      local r, err = unsandbox.Sandbox.create { name = "life-1", template = "gpu", manager = m }
      assert.is_nil(r)
      assert.equal(409, err.status)
      assert.is_true(assert(sb:stop()).released)
      r, err = unsandbox.Sandbox.get { name = "life-1", manager = m }
      assert.is_nil(r)
      assert.same({ 404, "sandbox 'life-1' is not running" }, { err.status, err.message })
      local back = assert(unsandbox.Sandbox.get { name = "life-1", manager = m, resume = true })
      assert.equal("kept\n", assert(back:read_file("notes/a.txt")).content)
      assert.are_not.equal(st.sandbox_id, back:status().sandbox_id)
      back:close()
    end)

    it("<close> (5.4), or unsandbox.with, releases the runtime when the block ends by an error", function()
      local id
      local ok, err = pcall(lua.scope, sandbox("closing"), function(sb)
        id = sb:status().sandbox_id
        error("the block failed")
      end)
      assert.is_false(ok)
      assert.matches("the block failed", err)
      assert.equal("released", assert(m:get_runtime(id)).status)
      local r, lerr = m:lookup_runtime("closing")
      assert.is_nil(r)
      assert.equal(404, lerr.status)
    end)
  end)

  describe("files through MCP", function()
    it("write, read, edit, glob and grep", function()
      local sb = sandbox("files")
      finally(function() sb:close() end)
      local text = "print('hi')\n# TODO one\n"
      local w = assert(sb:write_file("/workspace/src/main.py", text))
      assert.same({ "src/main.py", #text }, { w.path, w.bytes })
      local r = assert(sb:read_file("src/main.py"))
      assert.equal("print('hi')\n# TODO one\n", r.content)
      assert.equal(1, assert(sb:edit_file("src/main.py", "one", "two")).replacements)
      local list = assert(sb:write_files { { path = "src/b.py", content = "b = 1\n" },
                                            { path = "src/c.txt", content = "TODO c\n" } })
      assert.equal(2, #list)
      local g = assert(m:glob_files("*.py", "src", 0, "files"))
      table.sort(g.matches)
      assert.same({ "src/b.py", "src/main.py" }, g.matches)
      local grep = assert(m:grep_files("TODO", { path = "src", mode = "content", key = "files" }))
      assert.equal(2, grep.file_count)
      local window = assert(m:read_file("src/main.py", 2, 1, "files"))
      assert.equal("# TODO two\n", window.content)
    end)

    it("keeps -32602 (bad arguments) apart from other JSON-RPC errors", function()
      local sb = sandbox("rpc-errors")
      finally(function() sb:close() end)
      local r, err = sb:read_file("missing.txt")
      assert.is_nil(r)
      assert.same({ "rpc", 502, -32602 }, { err.kind, err.status, err.rpc_code })
      assert.matches("^MCP %-32602: ", err.message)
      r, err = sb:edit_file("missing.txt", "a", "b")
      assert.is_nil(r)
      assert.equal(-32602, err.rpc_code)
    end)
  end)

  describe("commands", function()
    it("run_command quotes argv for the shell and reports exit codes as data", function()
      local sb = sandbox("commands")
      finally(function() sb:close() end)
      local r = assert(sb:run_command("printf", { "%s|", "a; echo unsafe", "$HOME", "it's", "" }))
      assert.equal("a; echo unsafe|$HOME|it's||", r.stdout)
      assert.equal(0, r.exit_code)
      r = assert(sb:run_command("sh", { "-c", "echo out; echo err >&2; exit 3" }))
      assert.same({ "out\n", "err\n", 3, false }, { r.stdout, r.stderr, r.exit_code, r.timed_out })
      r = assert(sb:run_command("sleep", { "5" }, 1))
      assert.is_true(r.timed_out)
      local direct = assert(m:shell("echo $((6 * 7)); pwd", 5, "commands"))
      assert.same({ "42\n/workspace\n", 0 }, { direct.stdout, direct.exit_code })
    end)

    it("stream delivers the first chunk before the command ends", function()
      local sb = sandbox("stream")
      finally(function() sb:close() end)
      local t0, seen = core.monotonic_ms(), {}
      local r = assert(sb:stream("echo a; sleep 2; echo b >&2", function(channel, chunk, seq)
        seen[#seen + 1] = { channel, chunk, seq, core.monotonic_ms() - t0 }
      end, 10))
      local done = core.monotonic_ms() - t0
      assert.equal(2, #seen)
      assert.same({ "stdout", "a\n", 1 }, { seen[1][1], seen[1][2], seen[1][3] })
      assert.same({ "stderr", "b\n", 2 }, { seen[2][1], seen[2][2], seen[2][3] })
      assert.is_true(done - seen[1][4] >= 1500, "first chunk " .. seen[1][4] .. " ms, end " .. done .. " ms")
      assert.equal(0, r.exit_code)
      assert.equal(2, r.stream_chunks)
      assert.equal(r, sb:last_result())
    end)

    it("is_cancelled() stops a stream mid-way: 499, the connection closed, the sandbox usable", function()
      local sb = sandbox("cancel")
      finally(function() sb:close() end)
      local chunks = 0
      local t0 = core.monotonic_ms()
      local r, err = sb:stream("for i in $(seq 1 300); do echo $i; sleep 0.1; done", function()
        chunks = chunks + 1
      end, 30, function()
        return chunks >= 3
      end)
      assert.is_nil(r)
      assert.same({ "cancelled", 499, "Sandbox command cancelled" }, { err.kind, err.status, err.message })
      -- it ended long before the command would have (30 s)
      assert.is_true(core.monotonic_ms() - t0 < 20000)
      assert.equal("ok\n", assert(sb:run_command("echo", { "ok" })).stdout)
    end)

    it("the interrupt flag (Ctrl-C in unlua) cancels a stream too", function()
      local sb = sandbox("interrupt")
      finally(function() sb:close() end)
      local r, err = sb:stream("echo first; sleep 20; echo never", function() core.interrupt() end, 30)
      assert.is_nil(r)
      assert.same({ 499, "interrupted" }, { err.status, err.reason })
    end)

    it("an error raised by on_chunk propagates and closes the stream", function()
      local sb = sandbox("raise")
      finally(function() sb:close() end)
      local ok, err = pcall(sb.stream, sb, "echo x; sleep 20", function() error("consumer broke") end, 30)
      assert.is_false(ok)
      assert.matches("consumer broke", err)
      assert.equal("y\n", assert(sb:run_command("echo", { "y" })).stdout)
    end)

    it("lines() iterates lines per channel as they come, and a break closes the stream", function()
      local sb = sandbox("lines")
      finally(function() sb:close() end)
      local got = {}
      for channel, line in sb:lines("printf 'one\\ntw'; sleep 0.3; printf 'o\\nthree'; echo err >&2") do
        got[#got + 1] = channel .. ":" .. line
      end
      assert.same({ "stdout:one", "stdout:two", "stderr:err", "stdout:three" }, got)
      assert.equal(0, sb:last_result().exit_code)
      local n = 0
      for _ in sb:lines("for i in $(seq 1 50); do echo $i; sleep 0.1; done") do
        n = n + 1
        if n == 2 then break end
      end
      assert.equal(2, n)
      assert.equal("z\n", assert(sb:run_command("echo", { "z" })).stdout)
    end)

    it("lines() carries the caller's acting subject into its coroutine", function()
      local key = cp.tenant_key(srv, "lines-subjects", { act_as_subjects = true })
      local tm = unsandbox.manager { url = srv.cp_url, token = key, env = {} }
      local subject = string.rep("d", 32)
      tm:with_subject(subject, function()
        unsandbox.with(assert(unsandbox.Sandbox.create { name = "subject-box", manager = tm }), function(sb)
          assert(sb:write_file("marker.txt", "mine\n"))
          local got = {}
          for _, line in sb:lines("cat marker.txt") do got[#got + 1] = line end
          assert.same({ "mine" }, got)
        end)
      end)
      -- the same name without the subject is another workspace
      local sb = assert(unsandbox.Sandbox.create { name = "subject-box", manager = tm })
      finally(function() sb:close() end)
      local r = assert(sb:run_command("cat", { "marker.txt" }))
      assert.are_not.equal(0, r.exit_code)
    end)

    it("on_chunk may yield: a stream inside a coroutine", function()
      local sb = sandbox("yielding")
      finally(function() sb:close() end)
      local co = coroutine.wrap(function()
        return sb:stream("echo 1; echo 2", function(_, chunk) coroutine.yield(chunk) end, 10)
      end)
      local parts = {}
      for _ = 1, 10 do
        local v = co()
        if type(v) ~= "string" then assert.equal(0, v.exit_code) break end
        parts[#parts + 1] = v
      end
      assert.equal("1\n2\n", table.concat(parts))
    end)
  end)

  describe("PTY sessions", function()
    it("exec, send, wait and kill in one shell", function()
      local sb = sandbox("pty")
      finally(function() sb:close() end)
      local sh = sb:shell()
      local r = assert(sh:exec("cd /tmp; X=42; tty"))
      assert.matches("^/dev/pts/", r.stdout)
      assert.equal("42\n", assert(sh:exec("echo $X")).stdout)
      r = assert(sh:exec("read name; echo hello $name", { async = true }))
      assert.is_true(r.running)
      r = assert(sh:send("ada"))
      assert.matches("hello ada", r.stdout)
      assert(sh:exec("sleep 30", { async = true }))
      r = assert(sh:kill())
      assert.same({ -9, true }, { r.exit_code, r.session_restarted })
      local none, err = m:shell_session("wait", "never-made", { key = "pty" })
      assert.is_nil(none)
      assert.equal(-32602, err.rpc_code)
      assert.matches("does not exist", err.message)
    end)

    it("a Shell closes like every resource: its processes killed, unless detached", function()
      local sb = sandbox("pty-close")
      finally(function() sb:close() end)
      local function sleepers()
        local r = assert(sb:run_command("sh", { "-c", "ps -eo args | grep -c '^sleep 31[4]' || true" }))
        return tonumber(r.stdout)
      end
      local id
      lua.scope(sb:shell(), function(sh)
        id = sh.id
        assert(sh:exec("sleep 314", { async = true }))
        assert.equal(1, sleepers())
      end)
      assert.equal(0, sleepers())         -- the block's end killed them (session_kill)
      local sh = sb:shell { id = id }
      assert(sh:exec("sleep 314", { async = true }))
      assert.is_true(sh:detach())
      assert.error_matches(function() return sh:exec("true") end, "attempt to use a closed Shell")
      assert.is_true(sh:close())          -- idempotent; a detached Shell sends nothing
      assert.equal(1, sleepers())         -- detached: the session goes on
      lua.scope(sb:shell { id = id }, function(again)   -- and is taken up again
        assert.is_true(assert(again:wait(1)).running)
      end)
      assert.equal(0, sleepers())
      -- a Shell that never ran anything has nothing to kill
      local events = {}
      m:on_request(function(ev) events[#events + 1] = ev end)
      assert.is_true(sb:shell():close())
      m:on_request(nil)
      assert.equal(0, #events)
    end)

    it("a 17th session is -32001 (all busy), not -32602", function()
      local sb = sandbox("pty-busy")
      finally(function() sb:close() end)
      for i = 1, 16 do assert(sb:shell { id = "s" .. i }:exec("true")) end
      local r, err = sb:shell { id = "s17" }:exec("true")
      assert.is_nil(r)
      assert.same({ "rpc", 502, -32001 }, { err.kind, err.status, err.rpc_code })
    end)
  end)

  describe("binary files and the file routes", function()
    it("upload and download any bytes", function()
      local sb = sandbox("binary")
      finally(function() sb:close() end)
      local bytes = {}
      for i = 0, 255 do bytes[#bytes + 1] = string.char(i) end
      local blob = table.concat(bytes):rep(40)
      assert.equal(#blob, assert(sb:upload(blob, "data/uploads/blob.bin")).bytes)
      assert.equal(blob, (assert(sb:download("data/uploads/blob.bin"))))
    end)

    it("the REST file routes need a running runtime and never create one", function()
      local r, err = m:list_dir(".", "rest-files")
      assert.is_nil(r)
      assert.equal(409, err.status)
      assert.equal("create a sandbox for this workspace first", err.hint)
      assert.is_nil(m:status("rest-files").sandbox_id)
      assert(m:ensure_runtime("rest-files"))
      assert(m:files_write("notes.txt", "alpha\nbeta\n", "rest-files"))
      assert.equal(1, assert(m:files_edit("notes.txt", "beta", "gamma", "rest-files")).replacements)
      assert.equal("alpha\ngamma\n", assert(m:files_read("notes.txt", nil, nil, "rest-files")).content)
      assert.same({ "notes.txt" }, assert(m:files_glob("*.txt", ".", nil, "rest-files")).matches)
      assert.equal(1, assert(m:files_grep("gamma", { mode = "count" }, "rest-files")).file_count)
      local names = {}
      for _, e in ipairs(assert(m:list_dir(".", "rest-files")).entries) do names[e.name] = e.type end
      assert.equal("file", names["notes.txt"])
      assert.is_nil(names[".sandbox"])
      assert(m:release_runtime("rest-files"))
    end)
  end)

  describe("checkpoints", function()
    it("checkpoint, change, restore: the files come back", function()
      local sb = sandbox("ckpt")
      finally(function() sb:close() end)
      assert(sb:write_file("app.txt", "version 1\n"))
      local c = assert(sb:checkpoint())
      assert.matches("^cp%-", c.checkpoint_id)
      assert.matches("^%x+$", c.sha256)
      assert(sb:write_file("app.txt", "broken\n"))
      local found
      for _, x in ipairs(assert(sb:list_checkpoints()).checkpoints) do
        found = found or x.checkpoint_id == c.checkpoint_id
      end
      assert.is_true(found)
      local r, err = sb:restore(c.checkpoint_id, string.rep("0", 64))
      assert.is_nil(r)
      assert.equal(400, err.status)
      assert(sb:restore(c.checkpoint_id, c.sha256))
      assert.equal("version 1\n", assert(sb:read_file("app.txt")).content)
      assert.is_true(assert(m:delete_workspace_checkpoint(c.checkpoint_id, "ckpt")).deleted)
    end)

    it("needs a running runtime (400)", function()
      assert(m:ensure_workspace("no-runtime"))
      local r, err = m:checkpoint_workspace("no-runtime")
      assert.is_nil(r)
      assert.equal(400, err.status)
    end)
  end)
end)
