-- #integration specs of unsandbox.Context (lua/unsandbox/agent/context.lua):
-- state kept between cells in python, node, lua and bash; an exception
-- is a result, not the end of the context; each cell's output is its own
-- whatever it prints; timeouts, a dying interpreter, restart and close.
local server = require "spec.helpers.unsandboxd"

describe("unsandbox.Context #integration", function()
  local srv, unsandbox, m, sb

  setup(function()
    srv = server.start {}
    unsandbox = require "unsandbox"
    m = unsandbox.manager { url = srv.cp_url, token = srv.token, env = {} }
    sb = assert(unsandbox.Sandbox.create { name = "contexts", manager = m })
  end)
  teardown(function()
    if sb then sb:close() end
    if srv then srv.stop() end
  end)

  local CASES = {
    python = { set = "x = 41", inc = "x = x + 1\nprint('x is', x)\nx", out = "x is 42\n", value = "42",
               raise = "def f():\n    raise ValueError('no good')\nf()", name = "ValueError" },
    node = { set = "var x = 41", inc = "x = x + 1; console.log('x is', x); x", out = "x is 42\n",
             value = "42", raise = "function f() { throw new TypeError('no good') }\nf()", name = "TypeError" },
    lua = { set = "x = 41", inc = "x = x + 1 print('x is', x) return x", out = "x is\t42\n", value = "42",
            raise = "local function f() error('no good') end\nf()", name = "Error" },
  }

  for lang, c in pairs(CASES) do
    it(lang .. ": state between cells, an exception as data, and the context lives on", function()
      local ctx = assert(sb:context(lang))
      finally(function() ctx:close() end)
      assert.is_nil(assert(ctx:run(c.set)).error)
      local r = assert(ctx:run(c.inc))
      assert.equal(c.out, r.stdout)
      assert.equal(c.value, r.value)
      r = assert(ctx:run(c.raise))
      assert.equal(c.name, r.error.name)
      assert.matches("no good", r.error.message, 1, true)
      assert.matches("no good", r.error.traceback, 1, true)
      r = assert(ctx:run(c.inc))
      assert.is_nil(r.error)
      assert.equal((c.out:gsub("42", "43")), r.stdout)
    end)
  end

  it("bash: variables and the directory carry over; a cell's status is its exit", function()
    local ctx = assert(sb:context("bash"))
    finally(function() ctx:close() end)
    assert.equal(0, assert(ctx:run("n=5; mkdir -p ctxdir; cd ctxdir")).exit)
    local r = assert(ctx:run("echo $((n * 2)) $PWD; ls /nope"))
    assert.equal("10 /workspace/ctxdir\n", r.stdout)
    assert.matches("/nope", r.stderr, 1, true)
    assert.equal(2, r.exit)
    assert.is_nil(r.error)
  end)

  it("one cell's output never reaches the next, whatever it prints", function()
    local ctx = assert(sb:context("python"))
    finally(function() ctx:close() end)
    local bytes = {}
    for i = 0, 255 do bytes[#bytes + 1] = string.char(i) end
    local r = assert(ctx:run(table.concat {
      "import sys, threading, time\n",
      "sys.stdout.write('no newline')\n",
      "sys.stdout.flush()\n",
      "sys.stdout.buffer.write(bytes(range(256)))\n",
      "print('\\n>>> ', end='')\n",
      "sys.stderr.write('In [2]: ')\n",
      "def late():\n    time.sleep(1)\n    print('LATE', flush=True)\n",
      "threading.Thread(target=late).start()\n",
    }))
    assert.equal("no newline" .. table.concat(bytes) .. "\n>>> ", r.stdout)
    assert.equal("In [2]: ", r.stderr)
    r = assert(ctx:run("import time\ntime.sleep(2)\nprint('second')"))
    assert.equal("second\n", r.stdout)                -- LATE (from a thread) went elsewhere
    r = assert(ctx:run("print('third')"))
    assert.equal("third\n", r.stdout)
    assert.equal("", r.stderr)
  end)

  it("a cell past its timeout is interrupted as data; the state stays", function()
    local ctx = assert(sb:context("python"))
    finally(function() ctx:close() end)
    assert(ctx:run("kept = 'yes'"))
    local r = assert(ctx:run("while True: pass", { timeout = 1 }))
    assert.equal("TimeoutError", r.error.name)
    assert.equal("yes\n", assert(ctx:run("print(kept)")).stdout)
  end)

  it("a cell that cannot be stopped ends the interpreter; the next run starts afresh", function()
    local ctx = assert(sb:context("bash"))
    finally(function() ctx:close() end)
    assert(ctx:run("v=1"))
    local r = assert(ctx:run("trap '' INT; while :; do :; done", { timeout = 1 }))
    assert.equal("Timeout", r.error.name)
    r = assert(ctx:run("echo \"[$v]\""))
    assert.is_true(r.restarted)
    assert.equal("[]\n", r.stdout)
  end)

  it("an interpreter that exits reports its status; restart and close", function()
    local ctx = assert(sb:context("python"))
    finally(function() ctx:close() end)
    assert(ctx:run("y = 1"))
    local r = assert(ctx:run("import os\nos._exit(3)"))
    assert.equal(3, r.exit)
    assert.equal("Exit", r.error.name)
    r = assert(ctx:run("print('y' in globals())"))
    assert.is_true(r.restarted)
    assert.equal("False\n", r.stdout)
    assert(ctx:run("z = 2"))
    assert(ctx:restart())
    assert.equal("False\n", assert(ctx:run("print('z' in globals())")).stdout)
    local big = ("#" .. ("x"):rep(99) .. "\n"):rep(200) .. "print('big cell')"   -- through the file routes
    assert.equal("big cell\n", assert(ctx:run(big)).stdout)
    assert(ctx:close())
    assert.has_error(function() ctx:run("1") end, "attempt to use a closed Context (run)")
  end)

  it("refuses bad arguments", function()
    assert.has_error(function() sb:context("cobol") end)
    assert.has_error(function() sb:context(1) end)
    assert.has_error(function() sb:context("python", { timeout = -1 }) end)
    local ctx = assert(sb:context("lua"))
    finally(function() ctx:close() end)
    assert.has_error(function() ctx:run(nil) end)
    assert.has_error(function() ctx:run("1", { nope = 1 }) end)
  end)
end)
