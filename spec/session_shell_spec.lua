-- The WebSocket terminal of a session (GET /sessions/{id}/shell, spec
-- §5.4), against a real unsandboxd. The client is
-- spec/interop/ws_client.py: Python's standard library only, sharing no
-- code with the server or the Lua library (it masks its own frames and can
-- send what a hostile client would). ws_terminal_check.py runs one group
-- of checks per call and prints TAP; a failure shows its not-ok lines
-- here. Each group gets a server of its own, so one group's leftovers
-- (or its deliberate damage) never reach the next.
-- One Lua: the subject is the server's wire (raw HTTP and WebSocket).
local server = require "spec.helpers.unsandboxd"

local ROOT = os.getenv("UNSANDBOX_ROOT") or "."
local SCRIPT = ROOT .. "/spec/interop/ws_terminal_check.py"

local function check(group, args)
  local srv = server.start { args = args }
  local pk2, sk2 = server.add_key(srv)
  local q = server.sh_quote
  local cmd = table.concat({ "timeout 300 python3", q(SCRIPT), "--url", q(srv.url),
    "--pk", q(srv.public_key), "--sk", q(srv.secret_key), "--pk2", q(pk2), "--sk2", q(sk2),
    "--pid", tostring(srv.pid), group, "2>&1" }, " ")
  local p = assert(io.popen(cmd))
  local out = p:read("*a")
  local ok = p:close()
  local f = io.open(srv.log)
  local log = f and f:read("*a") or ""
  if f then f:close() end
  srv.stop()
  local tail = "\nserver log (tail):\n" .. log:sub(-4000)
  local bad = {}
  for line in out:gmatch("[^\n]+") do
    if line:match("^not ok") or line:match("Traceback") or line:match("Error") then bad[#bad + 1] = line end
  end
  local planned = tonumber(out:match("\n1%.%.(%d+)") or out:match("^1%.%.(%d+)"))
  assert.is_truthy(planned, "the check did not finish:\n" .. out:sub(-3000) .. tail)
  assert.equal("", table.concat(bad, "\n"), tail)
  assert.is_true(ok, "the check failed:\n" .. out:sub(-3000) .. tail)
  return planned
end

describe("GET /sessions/{id}/shell (WebSocket terminal) #integration", function()
  it("attaches, relays output, reports the exit, resizes, shares the volume", function()
    assert.is_true(check("basic") >= 12)
  end)

  it("answers bad auth, unknown or foreign sessions, frozen ones and bad handshakes without upgrading", function()
    assert.is_true(check("refusals") >= 14)
  end)

  it("closes on hostile frames with the right code and leaves no process", function()
    assert.is_true(check("hostile") >= 16)
  end)

  it("holds back a client that never reads, and cleans up one that vanishes", function()
    assert.is_true(check("backpressure") >= 4)
  end)

  it("survives 50 attach/close cycles", function()
    assert.is_true(check("cycles") >= 4)
  end)

  it("ends terminals when the session is deleted or idle", function()
    assert.is_true(check("lifecycle") >= 8)
  end)

  it("attaches to the living session: its files and processes, REPL shells, re-attachable multiplexers", function()
    assert.is_true(check("living") >= 8)
  end)

  it("with --lenient, takes the reference CLI's unsigned handshake for a session that exists", function()
    assert.is_true(check("lenient", { "--lenient" }) >= 3)
  end)

  it("closes every terminal (1001) when unsandboxd stops", function()
    assert.is_true(check("stop") >= 3)
  end)
end)
