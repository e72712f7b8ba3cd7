-- #integration specs of a session's terminal (spec §5.4): the Lua
-- client (client:session_attach, Terminal, session_shell) and `un session
-- attach` against a real unsandboxd, whose shell runs on a PTY in the
-- session's sandbox. Refusals (unknown id, another key's session, a wrong
-- secret, a frozen session, nothing listening) come back as nil, Error
-- with the status; misuse raises; the bounded queues give their errors.
-- Every wait is bounded (read timeouts, `timeout` around processes).
local unsandbox = require "unsandbox"
local server = require "spec.helpers.unsandboxd"
local proc = require "spec.helpers.proc"
local fs = require "spec.helpers.fs"
local wait = require "spec.helpers.wait"

-- unsandboxd allows 4 terminals per key at once, and a closed terminal
-- counts until its shell is gone: a 429 is waited out (bounded), so a slow
-- teardown on a loaded machine is not a failure.
local function patient(f, ...)
  local args, r, err = table.pack(...)
  wait.eventually(function()
    r, err = f(table.unpack(args, 1, args.n))
    return r or not err or err.status ~= 429
  end, 10, 0.2)
  return r, err
end

-- Everything a terminal prints until it ends: output, exit code, the end
-- (nil: a clean close; else the Error).
local function drain(t, seconds)
  local out, code = {}, nil
  for _ = 1, 10000 do
    local item, err = t:read(seconds or 20)
    if item == nil then return table.concat(out), code, err end
    if type(item) == "string" then out[#out + 1] = item
    elseif item.type == "exit" then code = item.exit_code end
  end
  error("terminal never ended")
end

describe("session terminal #integration", function()
  local srv, c, sid, dir, env, other

  setup(function()
    srv = server.start()
    c = unsandbox.client(srv.client_opts())
    sid = assert(c:create_session {}).id
    dir = server.tmpdir("unsb-term")
    env = { UNSANDBOX_URL = srv.url, UNSANDBOX_PUBLIC_KEY = srv.public_key,
            UNSANDBOX_SECRET_KEY = srv.secret_key, HOME = dir }
    local p = assert(io.popen(server.sh_quote(server.bin) .. " keys add --data " .. server.sh_quote(srv.data)))
    local keys = p:read("*a")
    p:close()
    other = unsandbox.client { url = srv.url, public_key = keys:match("UNSANDBOX_PUBLIC_KEY=(%S+)"),
                               secret_key = keys:match("UNSANDBOX_SECRET_KEY=(%S+)") }
  end)
  teardown(function()
    if c then c:close() end
    if other then other:close() end
    if srv then srv.stop() end
    if dir then server.rm_rf(dir) end
  end)

  describe("client:session_attach()", function()
    it("runs the shell: output, then the exit event with its code, then a clean end", function()
      local t = assert(patient(c.session_attach, c, sid))
      finally(function() t:close() end)
      assert.is_true(t:send("echo hi; exit 3\n"))
      local out, code, err = drain(t)
      assert.is_nil(err)
      assert.matches("[\r\n]hi\r?\n", out)
      assert.are.equal(3, code)
      -- the shell has ended: input is refused, not queued for nobody
      local ok, serr = t:send("more\n")
      assert.is_nil(ok)
      assert.matches("ended", serr.message)
    end)

    it("runs on libcurl, the one network library: no other is mapped for it", function()
      local out = proc.lua([[
        local unsandbox = require "unsandbox"
        local function maps()
          local f = assert(io.open("/proc/self/maps"))
          local text = f:read("*a")
          f:close()
          local libs = {}
          for lib in text:gmatch("/([%w_+-]+)%.so[%.%d]*\n") do libs[lib] = true end
          return libs
        end
        local c = unsandbox.client()
        assert(c:list_sessions())
        local before = maps()
        assert(c:session_shell(os.getenv("SID"), "exit\n"))
        local new = {}
        for lib in pairs(maps()) do if not before[lib] then new[#new + 1] = lib end end
        table.sort(new)
        io.write(tostring(before.libcurl), " [", table.concat(new, " "), "]\n")
      ]], { UNSANDBOX_URL = srv.url, UNSANDBOX_PUBLIC_KEY = srv.public_key,
            UNSANDBOX_SECRET_KEY = srv.secret_key, SID = sid, HOME = dir })
      assert.are.equal("true []\n", out)
    end)

    it("resizes the PTY the shell sees", function()
      local t = assert(patient(c.session_attach, c, sid))
      finally(function() t:close() end)
      assert.is_true(t:resize(123, 45))
      assert.is_true(t:send("stty size; exit\n"))
      local out, code = drain(t)
      assert.matches("45 123", out)
      assert.are.equal(0, code)
    end)

    it("starts at the size given in opts, and at 80x24 without", function()
      local r = assert(patient(c.session_shell, c, sid, "stty size; exit\n", { cols = 100, rows = 30 }))
      assert.matches("30 100", r.output)
      r = assert(patient(c.session_shell, c, sid, "stty size; exit\n"))
      assert.matches("24 80", r.output)
    end)

    it("refuses an unknown session and another key's session with 404", function()
      local t, err = patient(c.session_attach, c, "unsb-session-doesnotexist")
      assert.is_nil(t)
      assert.are.equal("http", err.kind)
      assert.are.equal(404, err.status)
      t, err = patient(other.session_attach, other, sid)
      assert.is_nil(t)
      assert.are.equal(404, err.status)
    end)

    it("refuses a wrong secret with 401, and a frozen session with 409", function()
      local bad = unsandbox.client(srv.client_opts { secret_key = "not-the-secret" })
      finally(function() bad:close() end)
      local t, err = patient(bad.session_attach, bad, sid)
      assert.is_nil(t)
      assert.are.equal(401, err.status)
      local frozen = assert(c:create_session { multiplexer = "tmux" }).id  -- only such a session freezes
      assert(c:freeze_session(frozen))
      t, err = patient(c.session_attach, c, frozen)
      assert.is_nil(t)
      assert.are.equal(409, err.status)
      assert(c:unfreeze_session(frozen))
      assert.are.equal(0, assert(patient(c.session_shell, c, frozen, "exit\n")).exit_code)
    end)

    it("reports nothing listening as a transport error", function()
      local gone = server.start()
      local port = gone.port
      gone.stop()   -- its port is now closed
      local dead = unsandbox.client { url = "http://127.0.0.1:" .. port,
        public_key = srv.public_key, secret_key = srv.secret_key }
      finally(function() dead:close() end)
      local t, err = patient(dead.session_attach, dead, sid)
      assert.is_nil(t)
      assert.are.equal("transport", err.kind)
      assert.matches("127.0.0.1:" .. port, err.message)
    end)

    it("raises on misuse at the caller's line", function()
      assert.has_error(function() c:session_attach("../etc") end)
      assert.has_error(function() c:session_attach(sid, { colour = true }) end)
      assert.has_error(function() c:session_attach(sid, { cols = 80 }) end)       -- rows too
      assert.has_error(function() c:session_attach(sid, { cols = 0, rows = 10 }) end)
      assert.has_error(function() c:session_attach(sid, { max_input = -1 }) end)
      local t = assert(patient(c.session_attach, c, sid))
      assert.has_error(function() t:resize(1001, 10) end)
      assert.has_error(function() t:resize(80, 0) end)
      assert.has_error(function() t:resize("80", 24) end)
      assert.has_error(function() t:send(42) end)
      t:close()
      t:close()   -- idempotent
      assert.has_error(function() t:send("x") end, "attempt to use a closed Terminal")
      assert.matches("closed", tostring(t))
    end)

    it("caps queued input: 'terminal input queue full', nothing lost before it", function()
      local t = assert(patient(c.session_attach, c, sid, { max_input = 1024 }))
      finally(function() t:close() end)
      local ok, err = t:send(string.rep("x", 2000))
      assert.is_nil(ok)
      assert.matches("terminal input queue full", err.message)
      assert.is_true(t:send("echo fits; exit 4\n"))
      local out, code = drain(t)
      assert.matches("fits", out)
      assert.are.equal(4, code)
    end)

    it("reads a large output whole (flow control, not unbounded memory)", function()
      -- 3 MB of output, more than the receive cap (1 MiB) of the queue
      -- (Q written as \\121, so the echoed command has none)
      local r = assert(patient(c.session_shell, c, sid, "head -c 3000000 /dev/zero | tr '\\0' '\\121'; echo; exit 0\n",
                                       { timeout = 120 }))
      local n = select(2, r.output:gsub("Q", ""))
      assert.are.equal(3000000, n)
      local _, err = patient(c.session_shell, c, sid, "head -c 200000 /dev/zero | tr '\\0' b; exit 0\n",
                                     { max_output = 10000 })
      assert.are.equal("validation", err.kind)
      assert.matches("max_output", err.message)
    end)

    it("times out a read that gets nothing, and a shell that never exits", function()
      local t = assert(patient(c.session_attach, c, sid))
      finally(function() t:close() end)
      assert.is_string(t:read(10))   -- the prompt
      local item, err
      for _ = 1, 20 do   -- the rest of the prompt, then silence
        item, err = t:read(0.5)
        if item == nil then break end
      end
      assert.is_nil(item)
      assert.are.equal("timeout", err.kind)
      local _, serr = patient(c.session_shell, c, sid, "sleep 30\n", { timeout = 1 })
      assert.are.equal("timeout", serr.kind)
    end)
  end)

  describe("a Terminal inside a task", function()
    -- Reads everything until the output holds a line `mark`, yielding
    -- while nothing has come: the task's result.
    local function read_until(t, mark)
      local got = ""
      while not got:find("[\r\n]" .. mark .. "\r?\n") do
        local item, err = t:read(60)
        if item == nil then return nil, err end
        if type(item) == "string" then got = got .. item end
      end
      return got
    end

    it("waits for output by yielding: other tasks go on, step(0) returns, its socket is the host's to poll", function()
      local t = assert(patient(c.session_attach, c, sid))
      finally(function() t:close() end)
      assert(t:send("echo ready\n"))
      assert(read_until(t, "ready"))   -- outside a task: the blocking read, as before
      -- a reader waits for a line the quiet shell has not printed
      local reader = unsandbox.spawn(read_until, t, "marker")
      local calls = 0
      local worker = unsandbox.spawn(function()
        for _ = 1, 3 do
          assert(c:list_sessions())
          calls = calls + 1
        end
        return calls
      end)
      assert(worker:wait(60))
      assert.are.equal(3, calls)
      assert.are.equal("waiting", reader:status())   -- its read did not hold the others up
      for _ = 1, 5 do assert.are.equal(1, unsandbox.step(0)) end   -- nor a frame's step(0)
      assert.are.equal("waiting", reader:status())
      local fds = unsandbox.pollfds()
      assert.is_true(#fds >= 1, "the terminal's socket is among the fds to poll")
      -- the line comes: the read wakes up
      assert(t:send("echo marker\n"))
      local out = assert(reader:wait(60))
      assert.matches("[\r\n]marker\r?\n", out)
    end)

    it("a task waiting on a read can be cancelled, and the terminal goes on", function()
      local t = assert(patient(c.session_attach, c, sid))
      finally(function() t:close() end)
      local reader = unsandbox.spawn(read_until, t, "never")
      for _ = 1, 100 do
        if reader:status() == "waiting" then break end
        unsandbox.step(10)
      end
      assert.are.equal("waiting", reader:status())
      reader:cancel()
      assert.are.equal("cancelled", reader:status())
      assert.are.equal(0, require("unsandbox.core").loop_stats().timers, "its read's timer went with it")
      assert(t:send("echo after\n"))
      assert(read_until(t, "after"))
    end)

    it("under a flood of output a step moves a bounded amount, never the whole flood", function()
      local t = assert(patient(c.session_attach, c, sid))
      finally(function() t:close() end)
      local total, most, steps = 0, 0, 0
      local reader = unsandbox.spawn(function()
        while true do
          local item, err = t:read(60)
          if item == nil then return nil, err end
          if type(item) == "string" then total = total + #item
          elseif item.type == "exit" then return total end
        end
      end)
      -- 4 MB of output (Q written as \121, so the echoed command has none)
      assert(t:send("head -c 4000000 /dev/zero | tr '\\0' '\\121'; exit 0\n"))
      for _ = 1, 100000 do
        if reader:done() then break end
        local before = total
        unsandbox.step(10)
        steps = steps + 1
        most = math.max(most, total - before)
      end
      assert(reader:result())
      assert.is_true(total > 4000000, "all of it arrived: " .. total)
      -- a round of the loop reads at most 64 KiB of a terminal (it may be
      -- kicked once more in the same round for what TLS holds), and the
      -- task drains what came at each step: a few rounds' worth at most,
      -- never the flood (a read that blocked the thread took it all in one)
      assert.is_true(most <= 512 * 1024, "the most one step moved: " .. most)
      assert.is_true(steps > 1)
    end)
  end)

  describe("session_shell()", function()
    it("returns the output and the exit code, also as a module function", function()
      local r = assert(patient(c.session_shell, c, sid, "echo hello; exit 5\n"))
      assert.matches("hello", r.output)
      assert.are.equal(5, r.exit_code)
      r = assert(unsandbox.session_shell(sid, "exit 6\n", srv.client_opts()))
      assert.are.equal(6, r.exit_code)
    end)

    it("keeps the session's files between terminals", function()
      assert.are.equal(0, assert(patient(c.session_shell, c, sid, "echo kept > term.txt; exit\n")).exit_code)
      assert.matches("kept", assert(patient(c.session_shell, c, sid, "cat term.txt; exit\n")).output)
    end)
  end)

  describe("un session attach", function()
    -- input: what the shell command `feed` prints is un's standard input
    -- (proc.run gives the outer sh /dev/null)
    local function un(args, feed)
      local errfile = dir .. "/stderr"
      local cmd = "(" .. (feed or "true") .. ") | timeout 60 bin/un " .. args
      local out, code, err
      wait.eventually(function()   -- a 429 (see patient) is waited out
        out, code = proc.run("sh -c " .. proc.quote(cmd), env, errfile)
        err = fs.read(errfile) or ""
        return not (code == 4 and err:find("429", 1, true))
      end, 10, 0.2)
      return out, err, code
    end

    it("copies piped input to the shell and exits with its status", function()
      local out, err, code = un("session attach " .. sid, "printf 'echo piped-hi\\nexit 3\\n'")
      assert.are.equal(3, code, err)
      assert.matches("piped%-hi", out)
    end)

    it("ends the shell at the end of piped input (Ctrl-D)", function()
      -- at once (the first Ctrl-D may reach the PTY before bash's line
      -- editor is up, and be lost: un sends another once the shell is quiet)
      local out, err, code = un("session attach " .. sid, "printf 'echo no-exit\\n'")
      assert.are.equal(0, code, err)
      assert.matches("no%-exit", out)
      -- and after the shell has read the input
      out, err, code = un("session attach " .. sid, "printf 'echo later\\n'; sleep 2")
      assert.are.equal(0, code, err)
      assert.matches("later", out)
      -- empty input: the shell ends too
      local _
      _, err, code = un("session attach " .. sid, "true")
      assert.are.equal(0, code, err)
    end)

    it("exits 69 with the status for an unknown session, 77 for bad keys", function()
      local _, err, code = un("session attach unsb-session-none")
      assert.are.equal(69, code)
      assert.matches("404", err)
      local saved = env.UNSANDBOX_SECRET_KEY
      env.UNSANDBOX_SECRET_KEY = "wrong"
      _, err, code = un("session attach " .. sid)
      env.UNSANDBOX_SECRET_KEY = saved
      assert.are.equal(77, code)
      assert.matches("401", err)
      _, err, code = un("session attach")
      assert.are.equal(64, code)
      assert.matches("un session attach: ID expected", err)
    end)

    -- Under a real PTY (script(1)) whose typescript is flushed to a file:
    -- the keys are typed, and the signals sent, once the typescript (or a
    -- flag file) shows the step before happened, so a slow machine only
    -- makes the test slower. Every wait is bounded (60 s; `timeout` 120).
    -- (a typescript's first line is script's header, which quotes the
    -- inner command: its own "rc=" once ended the keys at once, and the
    -- end of the keys' input made script type a Ctrl-D into the session)
    local function wait_for(file, text)
      local test = text and ("tail -n +2 " .. proc.quote(file) .. " 2>/dev/null | grep -qF " .. proc.quote(text))
        or ("[ -e " .. proc.quote(file) .. " ]")
      return "i=0; until " .. test .. " || [ $i -ge 600 ]; do sleep 0.1; i=$((i+1)); done"
    end
    local function under_pty(inner, keys)
      local ts = dir .. "/typescript"
      os.remove(ts)
      local cmd = "(" .. keys(ts) .. ") | timeout 120 script -qfec " .. proc.quote(inner(ts)) .. " " ..
        proc.quote(ts)
      return proc.run("sh -c " .. proc.quote(cmd), env)
    end
    local UN = "bin/un session attach "

    it("on a tty: raw mode, resize, detach key, terminal restored", function()
      local before, after = dir .. "/before", dir .. "/after"
      local typed, winched = dir .. "/typed", dir .. "/winched"
      os.remove(typed); os.remove(winched)
      local out, code = under_pty(function()
        return table.concat({
          "stty -g > " .. before,
          "stty cols 90 rows 20",
          -- (a background job of sh -c would get /dev/null as its stdin)
          UN .. sid .. " </dev/tty & pid=$!",
          wait_for(typed), "stty cols 111 rows 33", "kill -WINCH $pid", "touch " .. winched,
          "wait $pid; echo rc=$?",
          "stty -g > " .. after,
        }, "; ")
      end, function(ts)
        -- the size the shell saw first, the size after SIGWINCH, Ctrl-C (a
        -- byte in raw mode), then Ctrl-] d (detach)
        return table.concat({
          wait_for(ts, "[attached"), "printf 'stty size\\r'", wait_for(ts, "20 90"), "touch " .. typed,
          wait_for(winched), "printf 'stty size\\r'", wait_for(ts, "33 111"),
          "printf '\\003'", "sleep 0.3", "printf '\\035d'", wait_for(ts, "rc="),
        }, "; ")
      end)
      assert.are.equal(0, code, out)
      assert.matches("20 90", out)
      assert.matches("33 111", out)
      assert.matches("%[detached", out)
      assert.matches("rc=0", out)
      assert.matches("^%x+:", fs.read(before))   -- stty -g wrote it
      assert.are.equal(fs.read(before), fs.read(after))
    end)

    -- a resize's signal interrupts a write to the terminal: the output goes
    -- on, whole, and is no write error (SIGWINCH after SIGWINCH while
    -- megabytes of output are written)
    it("on a tty: resizes while output flows lose nothing and are no error", function()
      local flowing = dir .. "/flowing"
      os.remove(flowing)
      local out, code = under_pty(function()
        return table.concat({
          UN .. sid .. " </dev/tty & pid=$!",
          wait_for(flowing),
          "i=0; while [ $i -lt 300 ] && kill -WINCH $pid 2>/dev/null; do i=$((i+1)); sleep 0.01; done",
          "wait $pid; echo rc=$?",
        }, "; ")
      end, function(ts)
        return table.concat({
          wait_for(ts, "[attached"), "printf 'seq 1 400000; echo end-of-$((6*7))\\r'", "touch " .. flowing,
          wait_for(ts, "end-of-42"), "printf '\\035d'", wait_for(ts, "rc="),
        }, "; ")
      end)
      assert.are.equal(0, code, out)
      assert.matches("rc=0", out)
      assert.not_matches("standard output", out)
      assert.matches("\n399999\r?\n400000\r?\n", out)
    end)

    -- the other ways out of raw mode: the shell's exit frame, SIGTERM, and
    -- a closed standard output
    it("on a tty: the shell's exit, SIGTERM and a closed stdout restore the terminal too", function()
      local b1, a1, b2, a2, b3, a3 = dir .. "/b1", dir .. "/a1", dir .. "/b2", dir .. "/a2", dir .. "/b3",
        dir .. "/a3"
      local out, code = under_pty(function()
        return "stty -g > " .. b1 .. "; " .. UN .. sid .. " </dev/tty; echo rc=$?; stty -g > " .. a1
      end, function(ts)
        return wait_for(ts, "[attached") .. "; printf 'exit 7\\r'; " .. wait_for(ts, "rc=")
      end)
      assert.are.equal(0, code, out)
      assert.matches("rc=7", out)
      assert.matches("^%x+:", fs.read(b1))
      assert.are.equal(fs.read(b1), fs.read(a1))

      out, code = under_pty(function(ts)
        return "stty -g > " .. b2 .. "; " .. UN .. sid .. " </dev/tty & pid=$!; " ..
          wait_for(ts, "[attached") .. "; kill -TERM $pid; wait $pid; echo rc=$?; stty -g > " .. a2
      end, function(ts) return wait_for(ts, "rc=") end)
      assert.are.equal(0, code, out)
      assert.matches("rc=143", out)
      assert.matches("^%x+:", fs.read(b2))
      assert.are.equal(fs.read(b2), fs.read(a2))

      -- `un ... | head`: endless output into a pipe that closes (SIGPIPE
      -- ignored: a write error, exit 74, the terminal restored)
      out, code = under_pty(function()
        return "stty -g > " .. b3 .. "; { " .. UN .. sid .. " </dev/tty; echo rc=$? >&2; } | " ..
          "head -c 100 >/dev/null; stty -g > " .. a3
      end, function(ts)
        return wait_for(ts, "[attached") .. "; printf 'yes\\r'; " .. wait_for(ts, "rc=")
      end)
      assert.are.equal(0, code, out)
      assert.matches("rc=74", out)
      assert.matches("standard output", out)
      assert.not_matches("the program's own", out)
      assert.matches("^%x+:", fs.read(b3))
      assert.are.equal(fs.read(b3), fs.read(a3))
    end)
  end)
end)
