-- #integration: what the sandbox promises, each proven by a real run
-- through a real unsandboxd (the runner's own C test covers the same
-- ground one level down).
local unsandbox = require "unsandbox"
local server = require "spec.helpers.unsandboxd"
local fs = require "spec.helpers.fs"
local core = require "unsandbox.core"
local socket = require "socket"
local wait = require "spec.helpers.wait"

-- pids of live processes running as one of the sandbox slot uids; with
-- `server_pid`, only those in that server's cgroups (other servers on the
-- machine use the same uids)
local SLOT_UID_MIN, SLOT_UID_MAX = 200000, 200255
local function sandbox_processes(server_pid)
  local pids = {}
  local p = io.popen("ls /proc")
  for name in p:lines() do
    if name:match("^%d+$") then
      local st = fs.read("/proc/" .. name .. "/status")
      local uid = st and tonumber(st:match("\nUid:%s*(%d+)"))
      local cg = server_pid and fs.read("/proc/" .. name .. "/cgroup") or ""
      if uid and uid >= SLOT_UID_MIN and uid <= SLOT_UID_MAX and not st:match("\nState:%s*Z") and
         (not server_pid or cg:find("/unsandboxd-" .. server_pid .. "-", 1, true)) then
        pids[#pids + 1] = name
      end
    end
  end
  p:close()
  return pids
end

describe("sandbox #integration", function()
  local srv, c

  local function ours()
    local h = assert(c:call("GET", "/health"))
    return sandbox_processes(h.isolation.cgroup ~= "none" and srv.pid or nil)
  end

  setup(function()
    srv = server.start()
    c = unsandbox.client(srv.client_opts())
  end)
  teardown(function()
    c:close()
    srv.stop()
  end)

  local function run(lang, code, opts)
    return assert(c:execute_code(lang, code, opts))
  end

  it("runs python, bash, lua, node and c with their output and exit codes", function()
    local cases = {
      { "python", "import sys; print('py'); sys.exit(3)", "py\n", 3 },
      { "bash", "echo sh; exit 4", "sh\n", 4 },
      { "lua", "print('lua') os.exit(5)", "lua\n", 5 },
      { "javascript", "console.log('js'); process.exit(6)", "js\n", 6 },
      { "c", "#include <stdio.h>\nint main(void){puts(\"c\");return 7;}", "c\n", 7 },
      { "cpp", "#include <iostream>\nint main(){std::cout<<\"cpp\\n\";return 8;}", "cpp\n", 8 },
    }
    for _, k in ipairs(cases) do
      local r = run(k[1], k[2])
      assert.are.equal(k[3], r.stdout, k[1] .. ": " .. r.stderr)
      assert.are.equal(k[4], r.exit_code, k[1])
    end
  end)

  it("a compile error is a normal run with the compiler's stderr", function()
    local r = run("c", "int main(void) { return undefined_name; }")
    assert.are.equal("completed", r.status)
    assert.are_not.equal(0, r.exit_code)
    assert.matches("undefined_name", r.stderr)
  end)

  -- A fixed number of processes and a loop that never ends: the outcome
  -- does not depend on how fast this machine forks (a loop that forks
  -- without bound meets the pids limit first on a fast machine, and bash
  -- then gives up with 254 before the ttl). The pids limit has its own
  -- spec below (the fork bomb) and the runner's C test.
  it("an infinite loop ends as timeout at its ttl and its processes are gone", function()
    local r = run("bash", "for i in 1 2 3 4 5 6 7 8; do sleep 1000 & done\nwhile true; do :; done",
      { ttl = 2 })
    assert.are.equal("timeout", r.status)
    assert.are.equal(137, r.exit_code)
    -- the server's own measure of the run: not before the ttl, and ended by
    -- it (the client would have waited for a minute more)
    assert.is_true(r.execution_time_ms >= 1900, "ran " .. r.execution_time_ms .. " ms")
    assert.is_true(r.execution_time_ms < 2000 + 10000, "ran " .. r.execution_time_ms .. " ms")
    assert.same({}, ours())
  end)

  it("a fork bomb is contained and the server still answers", function()
    local r = run("bash", ":(){ :|:& };:", { ttl = 3 })
    assert.is_truthy(r.status == "timeout" or r.status == "completed")
    assert.same({}, ours())
    assert.are.equal("alive\n", run("bash", "echo alive").stdout)
  end)

  -- GET /health says how runs are limited here: the specs below expect
  -- what it says (cgroups as root, rlimits otherwise)
  local function isolation()
    local h = assert(c:call("GET", "/health"))
    return h.isolation
  end

  it("reports its isolation in GET /health", function()
    local iso = isolation()
    assert.is_table(iso)
    assert.is_truthy(iso.cgroup == "v1" or iso.cgroup == "v2" or iso.cgroup == "none")
    assert.are.equal(iso.cgroup ~= "none", iso.memory)
    assert.are.equal(iso.cgroup ~= "none", iso.pids)
    assert.are.equal("slirp4netns", iso.network)
  end)

  it("a memory hog fails, is reported, and the server still answers", function()
    -- (filling memory takes no set time: a ttl only a hung run reaches)
    local r = run("python", "b = bytearray(8 * 1024 ** 3)\nprint('allocated')", { ttl = 300 })
    assert.are_not.equal(0, r.exit_code)
    assert.not_matches("allocated", r.stdout)
    if isolation().memory then
      assert.are.equal("completed", r.status)
      assert.are.equal(137, r.exit_code)
      assert.matches("out of memory: the program exceeded its memory limit %(1024 MiB%)", r.error)
    else
      assert.matches("MemoryError", r.stderr)
    end
    assert.are.equal("alive\n", run("bash", "echo alive").stdout)
  end)

  describe("memory counted per run #cgroup", function()
    local function oom(lang, code, ttl)
      if not isolation().memory then return pending("no memory cgroup here") end
      local r = run(lang, code, { ttl = ttl or 60 })
      assert.are.equal("completed", r.status)
      assert.are.equal(137, r.exit_code)
      assert.matches("out of memory", r.error)
      assert.not_matches("done", r.stdout)            -- killed, not run to its end
      assert.same({}, ours())
      assert.are.equal("alive\n", run("bash", "echo alive").stdout)
    end

    it("3 GiB of shared anonymous memory at 1 vcpu is killed and reported", function()
      oom("python", "import mmap\nm = mmap.mmap(-1, 3 << 30, mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)\n" ..
        "for i in range(0, 3 << 30, 4096): m[i] = 1\nprint('done')")
    end)

    it("three processes of 900 MiB are killed together", function()
      oom("python", "import os, time\nfor k in range(3):\n  if os.fork() == 0:\n" ..
        "    b = bytearray(900 << 20)\n    time.sleep(30)\n    os._exit(0)\n" ..
        "for k in range(3): os.wait()\nprint('done')")
    end)

    it("filling /tmp (tmpfs) past the memory limit fails", function()
      if not isolation().memory then return pending("no memory cgroup here") end
      local r = run("bash", "for i in $(seq 40); do head -c 64M /dev/zero > /tmp/f$i || " ..
        "{ echo write failed; break; }; done; echo done", { ttl = 60 })
      assert.is_truthy(r.error and r.error:match("out of memory") or r.stdout:match("write failed"))
      assert.are.equal("alive\n", run("bash", "echo alive").stdout)
    end)
  end)

  it("a 10 MiB print is truncated at 1 MiB with the flag set", function()
    local r = run("python", "import sys\nsys.stdout.write('x' * (10 * 1024 * 1024))")
    assert.are.equal(1024 * 1024, #r.stdout)
    assert.is_true(r.stdout_truncated)
    assert.is_false(r.stderr_truncated)
  end)

  it("cannot read canary files in host directories", function()
    local tag = tostring(core.monotonic_ms())
    local canaries = { "/etc/unsb-canary-" .. tag, "/var/tmp/unsb-canary-" .. tag,
                       "/root/unsb-canary-" .. tag, "/tmp/unsb-canary-" .. tag }
    for _, path in ipairs(canaries) do
      fs.write(path, "SECRET-CANARY")
      os.execute("chmod 644 " .. path)
    end
    local r = run("bash", "for f in " .. table.concat(canaries, " ") ..
      "; do cat $f 2>&1; done; ls -a / /root /home 2>&1; true")
    for _, path in ipairs(canaries) do os.remove(path) end
    assert.not_matches("SECRET%-CANARY", r.stdout)
    assert.matches("No such file", r.stdout)
    assert.not_matches("\nhome\n", r.stdout)
  end)

  it("cannot read unsandboxd's data directory", function()
    local r = run("bash", "ls " .. srv.data .. " 2>&1; cat " .. srv.data .. "/unsandboxd.db 2>&1 | head -c 100")
    assert.not_matches("SQLite", r.stdout)
    assert.matches("No such file", r.stdout)
  end)

  it("cannot connect to a loopback port the test listens on (zerotrust)", function()
    local listener = assert(socket.bind("127.0.0.1", 0))
    local _, port = listener:getsockname()
    listener:settimeout(0)
    local code = string.format([[
import socket
s = socket.socket()
s.settimeout(2)
try:
    s.connect(("127.0.0.1", %d))
    print("connected")
except OSError as e:
    print("refused", e)
]], port)
    local r = run("python", code)
    local semi = run("python", code, { network_mode = "semitrusted" })
    -- slirp4netns maps 10.0.2.2 to the host's loopback: refused too
    local via_gw = run("python", code:gsub('"127%.0%.0%.1"', '"10.0.2.2"'), { network_mode = "semitrusted" })
    local accepted = listener:accept()
    listener:close()
    assert.matches("^refused", r.stdout)
    assert.matches("^refused", semi.stdout)
    assert.matches("^refused", via_gw.stdout)
    assert.is_nil(accepted)
  end)

  it("semitrusted has a network of its own: an address, slirp's DNS, no host abstract sockets", function()
    -- an abstract unix socket on the host (luasocket cannot name one):
    -- a host python listens, proves it with a connection of its own,
    -- then reports whether anything else connected within 8 s
    local name = "unsb-spec-" .. tostring(core.monotonic_ms())
    local host = io.popen("python3 -c " .. server.sh_quote(string.format([[
import socket, sys
l = socket.socket(socket.AF_UNIX); l.bind("\0%s"); l.listen(4)
c = socket.socket(socket.AF_UNIX); c.connect("\0%s"); l.accept()[0].close(); c.close()
print("ready"); sys.stdout.flush()
l.settimeout(8)
try:
    l.accept(); print("accepted")
except OSError:
    print("nothing")
]], name, name)), "r")
    assert.are.equal("ready", host:read("*l"))
    local r = run("python", string.format([[
import socket
u = socket.socket(socket.AF_UNIX)
try:
    u.connect("\0%s"); print("abstract connected")
except OSError:
    print("abstract refused")
print(open("/etc/resolv.conf").read().strip())
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect(("10.0.2.3", 53))
print("addr", s.getsockname()[0])
]], name), { network_mode = "semitrusted" })
    assert.are.equal("nothing", host:read("*l"))
    host:close()
    assert.matches("abstract refused\nnameserver 10%.0%.2%.3\naddr 10%.0%.2%.100\n", r.stdout)
  end)

  -- one hello-world per language the runner knows; a language that
  -- GET /languages lists must have one here and must run it
  local HELLO = {
    bash = "echo hello", sh = "echo hello", python = "print('hello')", lua = "print('hello')",
    javascript = "console.log('hello')", perl = "print \"hello\\n\";", tcl = "puts hello",
    ruby = "puts 'hello'", php = "<?php echo \"hello\\n\";", r = "cat('hello\\n')",
    c = "#include <stdio.h>\nint main(void){puts(\"hello\");return 0;}\n",
    cpp = "#include <iostream>\nint main(){std::cout<<\"hello\"<<std::endl;}\n",
    fortran = "program h\n  print '(a)', 'hello'\nend program h\n",
    java = "public class Main { public static void main(String[] a) { System.out.println(\"hello\"); } }\n",
    go = "package main\nimport \"fmt\"\nfunc main() { fmt.Println(\"hello\") }\n",
    rust = "fn main() { println!(\"hello\"); }\n",
    haskell = "main = putStrLn \"hello\"\n", ocaml = "print_endline \"hello\";;\n",
    scheme = "(display \"hello\")\n(newline)\n", commonlisp = "(write-line \"hello\")\n",
    elixir = "IO.puts \"hello\"\n", julia = "println(\"hello\")\n", raku = "say 'hello';\n",
    d = "import std.stdio;\nvoid main() { writeln(\"hello\"); }\n",
    cobol = "       IDENTIFICATION DIVISION.\n       PROGRAM-ID. HELLO.\n" ..
            "       PROCEDURE DIVISION.\n           DISPLAY 'hello'.\n           STOP RUN.\n",
  }

  it("runs a hello-world in every language GET /languages lists", function()
    local langs = assert(c:get_languages())
    assert.is_true(#langs >= 6)
    local jobs = {}
    for _, lang in ipairs(langs) do
      assert.is_string(HELLO[lang], "no hello-world for listed language " .. lang)
      jobs[lang] = assert(c:execute_async(lang, HELLO[lang], { ttl = 60 }))
    end
    for _, lang in ipairs(langs) do
      local r = assert(c:wait_for_job(jobs[lang], { timeout = 120 }))
      assert.are.equal("completed", r.status, lang .. ": " .. tostring(r.error))
      assert.are.equal("hello\n", r.stdout, lang .. ": " .. r.stderr)
      assert.are.equal(0, r.exit_code, lang)
    end
  end)

  -- mounts.c: every sandbox binds one read-only /dev; its terminals
  -- (devpts) are its own, mounted over that /dev's pts per sandbox
  it("has terminals of its own, and a /dev it cannot write", function()
    -- the other run names itself once its terminal is open: the readiness
    -- signal, seen from the host in /proc/PID/comm
    local ready = ("pty%06d"):format(math.random(0, 999999))
    local other = assert(c:execute_async("python", ([[
import pty, time
m, s = pty.openpty()
open("/proc/self/comm", "w").write("READY")
time.sleep(30)]]):gsub("READY", ready), { ttl = 60 }))
    local function named()
      local p = io.popen("cat /proc/[0-9]*/comm 2>/dev/null")
      local names = p:read("a")
      p:close()
      return names:find(ready, 1, true) ~= nil
    end
    assert.is_true(wait.eventually(named, 30), "the other run never opened its terminal")
    local status = assert(c:get_job(other)).status
    local r = run("python", [[
import os, pty
print(sorted(os.listdir("/dev/pts")))
m, s = pty.openpty()
print(os.ttyname(s))
for p in ("/dev/x", "/dev/pts/x"):
    try:
        open(p, "w"); print("wrote", p)
    except OSError:
        pass
with open("/dev/null", "w") as f: f.write("x")
with open("/dev/shm/y", "w") as f: f.write("y")
print("ok")]])
    c:cancel_job(other)
    assert.are.equal("running", status)
    assert.are.equal("['ptmx']\n/dev/pts/0\nok\n", r.stdout, r.stderr)
  end)

  it("cannot write outside its own directories", function()
    -- /etc/hosts, passwd and ld.so.cache are copies in the sandbox's
    -- root, owned by its user: the root's read-only mount still holds
    local r = run("bash", [[
      for p in /usr/x /etc/x /x /code/x /etc/hosts /etc/passwd /etc/ld.so.cache; do
        (echo hi > "$p") 2>/dev/null && echo "wrote $p"
      done
      for p in /etc/hosts /etc/passwd; do
        chmod 666 "$p" 2>/dev/null && echo "chmod $p"
        mv "$p" /etc/moved 2>/dev/null && echo "moved $p"
        rm -f "$p" 2>/dev/null; [ -e "$p" ] || echo "removed $p"
      done
      echo ok > /sandbox/mine && echo ok > /tmp/mine && echo own-dirs-ok
      id -u]])
    assert.not_matches("wrote", r.stdout)
    assert.not_matches("chmod", r.stdout)
    assert.not_matches("moved", r.stdout)
    assert.not_matches("removed", r.stdout)
    assert.matches("own%-dirs%-ok", r.stdout)
    assert.matches("\n1000\n$", r.stdout)
  end)

  it("has no network at all in zerotrust", function()
    -- the interfaces of the sandbox's network namespace: loopback only
    local r = run("bash", "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
    assert.are.equal("lo\n", r.stdout)
  end)
end)
