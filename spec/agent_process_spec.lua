-- #integration specs of unsandbox.Process (lua/unsandbox/agent/process.lua)
-- against a real unsandboxd: a background command whose stdin is written
-- and closed, whose stdout and stderr come apart as it writes them; the
-- exit status, signals, the handle's <close>; another OS process taking a
-- process up again by its id; waits that yield inside a task; PTY
-- processes; bad arguments refused before anything is sent.
local server = require "spec.helpers.unsandboxd"
local proc = require "spec.helpers.proc"
local lua = require "spec.helpers.lua"

describe("unsandbox.Process #integration", function()
  local srv, unsandbox, m, sb

  setup(function()
    srv = server.start {}
    unsandbox = require "unsandbox"
    m = unsandbox.manager { url = srv.cp_url, token = srv.token, env = {} }
    sb = assert(unsandbox.Sandbox.create { name = "procs", manager = m })
  end)
  teardown(function()
    if sb then sb:close() end
    if srv then srv.stop() end
  end)

  local ECHO = [[while IFS= read -r l; do echo "out:$l"; echo "err:$l" >&2; done; echo done; exit 7]]

  it("reads stdin line by line and answers on stdout and stderr apart", function()
    local p = assert(sb:spawn(ECHO))
    finally(function() p:close() end)
    assert.matches("^p%-%x+$", p.id)
    assert(p:write("one\n"))
    local out, err = "", ""
    while not (out:find("out:one\n", 1, true) and err:find("err:one\n", 1, true)) do
      local o, e = p:read(20)
      assert.is_not_nil(o, "the process ended early")
      out, err = out .. o, err .. e
    end
    assert.equal("out:one\n", out)
    assert.equal("err:one\n", err)
    assert(p:write("two\nthree\n"))
    assert(p:close_stdin())
    assert.equal(7, p:wait(30))
    local rest, rest_err = {}, {}
    for channel, chunk in p:output(30) do
      local t = channel == "stdout" and rest or rest_err
      t[#t + 1] = chunk
    end
    assert.equal("out:two\nout:three\ndone\n", table.concat(rest))
    assert.equal("err:two\nerr:three\n", table.concat(rest_err))
    assert.is_nil(p:read(1))
    local r, e = p:write("late\n")
    assert.is_nil(r)
    assert.same({ "sandbox", "closed" }, { e.kind, e.code })
  end)

  it("delivers output to on_stdout/on_stderr while wait runs, and lines per channel", function()
    local seen = { stdout = {}, stderr = {} }
    local p = assert(sb:spawn({ "sh", "-c", "printf 'a\\nb'; printf 'x\\n' >&2; printf 'c\\n'" }, {
      on_stdout = function(s) seen.stdout[#seen.stdout + 1] = s end,
      on_stderr = function(s) seen.stderr[#seen.stderr + 1] = s end }))
    finally(function() p:close() end)
    assert.equal(0, p:wait(30))
    assert.equal("a\nbc\n", table.concat(seen.stdout))
    assert.equal("x\n", table.concat(seen.stderr))
    local q = assert(sb:spawn("printf 'l1\\nl2\\npartial'; printf 'e1\\n' >&2"))
    finally(function() q:close() end)
    local lines = {}
    for channel, line in q:lines(30) do lines[#lines + 1] = channel .. ":" .. line end
    table.sort(lines)
    assert.same({ "stderr:e1", "stdout:l1", "stdout:l2", "stdout:partial" }, lines)
  end)

  it("binary stdin and stdout pass unchanged, large writes included", function()
    local bytes = {}
    for i = 0, 255 do bytes[#bytes + 1] = string.char(i) end
    local blob = table.concat(bytes):rep(9000)          -- 2.3 MB: written in file-route pieces
    local p = assert(sb:spawn("sha256sum | cut -c1-64; head -c 300 /dev/zero | tr '\\0' '\\377'"))
    finally(function() p:close() end)
    assert(p:write(blob))
    assert(p:close_stdin())
    assert.equal(0, p:wait(60))
    local out = {}
    for _, chunk in p:output(30) do out[#out + 1] = chunk end
    out = table.concat(out)
    assert.equal(require("unsandbox.core").codec.sha256(blob) .. "\n" .. ("\255"):rep(300), out)
  end)

  it("cwd and env apply; kill ends the group with the signal as -N; read times out empty", function()
    assert(sb:mkdir("work dir", { parents = true }))
    local p = assert(sb:spawn("echo \"$PWD $GREETING\"; sleep 600", { cwd = "work dir",
      env = { GREETING = "it's $(not) run" } }))
    finally(function() p:close() end)
    local out = p:read(20)
    assert.equal("/workspace/work dir it's $(not) run\n", out)
    local o, e = p:read(0.5)
    assert.same({ "", "" }, { o, e })
    local st = assert(p:status())
    assert.is_true(st.running)
    assert.equal(p.id, st.id)
    assert(p:kill("TERM"))
    assert.equal(-15, p:wait(30))
    local r, err = p:kill()
    assert.is_nil(r)
    assert.equal("exited", err.code)
  end)

  it("wait gives up at its timeout as an Error and the process goes on", function()
    local p = assert(sb:spawn("sleep 600"))
    finally(function() p:close() end)
    local r, err = p:wait(1)
    assert.is_nil(r)
    assert.equal("timeout", err.kind)
    assert.is_true(assert(p:status()).running)
  end)

  it("<close> kills a running process and removes it; detach leaves it running", function()
    local id
    lua.scope(assert(sb:spawn("sleep 600")), function(p)
      id = p.id
    end)
    local r, err = sb:process(id)
    assert.is_nil(r)
    assert.equal("not_found", err.kind)
    local kept
    lua.scope(assert(sb:spawn("sleep 600")), function(p)
      kept = p.id
      p:detach()
    end)
    local again = assert(sb:process(kept))
    finally(function() again:close() end)
    assert.is_true(assert(again:status()).running)
    local found = false
    for _, e in ipairs(assert(sb:processes())) do
      if e.id == kept then found = e.running and e.command == "sleep 600" end
    end
    assert.is_true(found)
    assert.has_error(function() local p = assert(sb:spawn("true")); p:close(); p:read() end,
      "attempt to use a closed Process (read)")
  end)

  it("close() of a running process leaves nothing behind, however its supervisor's last write falls", function()
    -- the kill ends the supervisor's wait while the state is being
    -- removed: its exit status must not bring the process back. Two
    -- busy loops in the sandbox make the supervisor late, as a loaded
    -- machine does.
    local burners = {}
    for i = 1, 2 do burners[i] = assert(sb:spawn("while :; do :; done")) end
    finally(function() for _, b in ipairs(burners) do b:close() end end)
    for round = 1, 15 do
      local p = assert(sb:spawn("sleep 600"))
      local id = p.id
      assert(p:close())
      local r, err = sb:process(id)
      assert.is_nil(r, "round " .. round .. ": the closed process is still there")
      assert.equal("not_found", err.kind)
    end
    for _, e in ipairs(assert(sb:processes())) do assert.is_true(e.command ~= "", "a husk: " .. e.id) end
  end)

  it("another OS process takes a process up again by its id", function()
    local p = assert(sb:spawn(ECHO))
    finally(function() p:close() end)
    assert(p:write("first\n"))
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write([[
      local unsandbox = require "unsandbox"
      local sb = assert(unsandbox.Sandbox.get { name = "procs" })
      local p = assert(sb:process(arg[1]))
      local out = ""
      while not out:find("out:first\n", 1, true) do out = out .. assert(p:read(20)) end
      assert(p:write("second\n"))
      assert(p:close_stdin())
      io.write("exit=", assert(p:wait(30)), "\n")
      p:detach()
    ]])
    f:close()
    local out, code = proc.run("bin/unlua " .. proc.quote(script) .. " " .. p.id,
      { SANDBOX_CONTROL_PLANE_URL = srv.cp_url, SANDBOX_TOKEN = srv.token, SANDBOX_SESSION_ID = false })
    os.remove(script)
    assert.equal(0, code, out)
    assert.equal("exit=7\n", out)
    local all = {}
    for channel, chunk in p:output(30) do if channel == "stdout" then all[#all + 1] = chunk end end
    assert.equal("out:first\nout:second\ndone\n", table.concat(all))
  end)

  it("inside a task a wait yields: step(0) returns and other work goes on", function()
    local p = assert(sb:spawn("cat > /dev/null"))
    finally(function() p:close() end)
    local t = unsandbox.spawn(function() return p:wait(60) end)
    unsandbox.step(0)                      -- the task starts waiting, and step returns
    assert.equal("waiting", t:status())
    assert(p:close_stdin())                -- a blocking call: drives the task meanwhile
    assert(unsandbox.run(60))
    assert.equal(0, t:result())
  end)

  it("a PTY process sees a terminal and takes input through it", function()
    local p = assert(sb:spawn("tty; read -r name; echo \"hi $name\"", { pty = true }))
    finally(function() p:close() end)
    assert(p:write("pty\n"))
    assert.equal(0, p:wait(30))
    local out = {}
    for _, chunk in p:output(10) do out[#out + 1] = chunk end
    out = table.concat(out)
    assert.matches("^/dev/pts/%d+\n", out)
    assert.matches("hi pty\n", out, 1, true)
  end)

  it("refuses bad arguments before sending anything", function()
    assert.has_error(function() sb:spawn("") end)
    assert.has_error(function() sb:spawn({ "echo", 1 }) end)
    assert.has_error(function() sb:spawn("x", { nope = true }) end)
    assert.has_error(function() sb:spawn("x", { id = "../etc" }) end)
    assert.has_error(function() sb:spawn("x", { cwd = "../.." }) end)
    assert.has_error(function() sb:spawn("x", { env = { ["A B"] = "1" } }) end)
    assert.has_error(function() sb:spawn(("x"):rep(7000)) end)
    assert.has_error(function() sb:process("") end)
    local p = assert(sb:spawn("sleep 600"))
    finally(function() p:close() end)
    assert.has_error(function() p:kill("NOPE") end)
    assert.has_error(function() p:write(42) end)
    assert.has_error(function() p:read(-1) end)
    local r, err = sb:process("p-0000000000000000")
    assert.is_nil(r)
    assert.equal("not_found", err.kind)
  end)
end)
