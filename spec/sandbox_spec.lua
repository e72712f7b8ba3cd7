-- #integration: what the sandbox promises, each proven by a real run
-- through a real unsandboxd (the runner's own C test covers the same
-- ground one level down).
local unsandbox = require "unsandbox"
local server = require "spec.helpers.unsandboxd"
local fs = require "spec.helpers.fs"
local core = require "unsandbox.core"
local socket = require "socket"

-- pids of live processes running as one of the sandbox slot uids
local SLOT_UID_MIN, SLOT_UID_MAX = 200000, 200255
local function sandbox_processes()
  local pids = {}
  local p = io.popen("ls /proc")
  for name in p:lines() do
    if name:match("^%d+$") then
      local st = fs.read("/proc/" .. name .. "/status")
      local uid = st and tonumber(st:match("\nUid:%s*(%d+)"))
      if uid and uid >= SLOT_UID_MIN and uid <= SLOT_UID_MAX and not st:match("\nState:%s*Z") then
        pids[#pids + 1] = name
      end
    end
  end
  p:close()
  return pids
end

describe("sandbox #integration", function()
  local srv, c

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

  it("an infinite loop ends as timeout at about its ttl and its processes are gone", function()
    local t0 = core.monotonic_ms()
    local r = run("bash", "while true; do sleep 0.1 & done", { ttl = 2 })
    local took = (core.monotonic_ms() - t0) / 1000
    assert.are.equal("timeout", r.status)
    assert.is_true(took >= 1.9 and took < 6, "took " .. took)
    assert.same({}, sandbox_processes())
  end)

  it("a fork bomb is contained and the server still answers", function()
    local r = run("bash", ":(){ :|:& };:", { ttl = 3 })
    assert.is_truthy(r.status == "timeout" or r.status == "completed")
    assert.same({}, sandbox_processes())
    assert.are.equal("alive\n", run("bash", "echo alive").stdout)
  end)

  it("a memory hog fails and the server still answers", function()
    local r = run("python", "b = bytearray(8 * 1024 ** 3)\nprint('allocated')", { ttl = 20 })
    assert.are_not.equal(0, r.exit_code)
    assert.not_matches("allocated", r.stdout)
    assert.matches("MemoryError", r.stderr)
    assert.are.equal("alive\n", run("bash", "echo alive").stdout)
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
    local accepted = listener:accept()
    local semi = run("python", code, { network_mode = "semitrusted" })
    listener:close()
    assert.matches("^refused", r.stdout)
    assert.is_nil(accepted)
    assert.matches("^connected", semi.stdout)
  end)

  it("cannot write outside its own directories", function()
    local r = run("bash", [[
      for p in /usr/x /etc/x /x /code/x; do
        (echo hi > "$p") 2>/dev/null && echo "wrote $p"
      done
      echo ok > /sandbox/mine && echo ok > /tmp/mine && echo own-dirs-ok
      id -u]])
    assert.not_matches("wrote", r.stdout)
    assert.matches("own%-dirs%-ok", r.stdout)
    assert.matches("\n1000\n$", r.stdout)
  end)

  it("has no network at all in zerotrust", function()
    -- the interfaces of the sandbox's network namespace: loopback only
    local r = run("bash", "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
    assert.are.equal("lo\n", r.stdout)
  end)
end)
