-- quickstart.lua: a tour of unsandbox. `make demo` runs it as
--   unlua --local examples/quickstart.lua
-- which starts a private unsandboxd on loopback (no account, no network)
-- and points the library at it through UNSANDBOX_URL and the key variables.
-- The same script runs against the real service with your own keys, and
-- under any Lua the library supports: luajit, lua5.1, lua5.3 and lua5.4
-- (with LUA_PATH / LUA_CPATH set as in docs/guide/hosts.md).
local unsandbox = require "unsandbox"

local function section(title) print("\n== " .. title) end

section("Where am I talking to?")
local creds = assert(unsandbox.credentials())
print("service: " .. (os.getenv("UNSANDBOX_URL") or "https://api.unsandbox.com")
  .. (os.getenv("UNSANDBOX_LOCAL") and "  (a private unsandboxd started by unlua --local)" or ""))
print("public key: " .. creds.public_key .. " (from " .. creds.source .. ")")

section("Three languages, three sandboxes")
local snippets = {
  { "python", "import sys\nprint(f'Python {sys.version_info.major}.{sys.version_info.minor} says hi')" },
  { "lua", "print(_VERSION .. ' says hi')" },
  { "bash", "echo \"bash $BASH_VERSION says hi\"; echo 'this goes to stderr' >&2; exit 3" },
}
for _, s in ipairs(snippets) do
  local r = assert(unsandbox.execute_code(s[1], s[2]))
  io.write(string.format("[%s] stdout: %s", s[1], r.stdout))
  if r.stderr ~= "" then io.write(string.format("[%s] stderr: %s", s[1], r.stderr)) end
  print(string.format("[%s] exit code %d, %s ms", s[1], r.exit_code, tostring(r.execution_time_ms)))
end

section("An async job, polled until it finishes")
local job = assert(unsandbox.execute_async("python",
  "import time\nfor i in range(3):\n    time.sleep(0.4)\n    print('step', i)"))
print("submitted job " .. job)
local result = assert(unsandbox.wait_for_job(job, {
  on_poll = function(j, attempt) print(string.format("  poll %d: %s", attempt, j.status)) end,
}))
io.write(result.stdout)

section("Languages this backend runs")
local langs = assert(unsandbox.get_languages())
print(table.concat(langs, ", "))

section("The un command on an example file")
local here = arg and arg[0] and arg[0]:match("^(.*)/[^/]*$") or "examples"
local un = os.getenv("UN") or (here .. "/../bin/un")
io.stdout:flush()
local ran = os.execute(string.format("%q %q", un, here .. "/files/hello.py"))
print(ran and "un exited 0" or "un failed")

section("A sandbox of the Control Plane")
-- unlua --local also starts the local Control Plane and exports
-- SANDBOX_CONTROL_PLANE_URL and SANDBOX_TOKEN (a break-glass token).
if not os.getenv("SANDBOX_CONTROL_PLANE_URL") then
  print("(SANDBOX_CONTROL_PLANE_URL is not set: skipped)")
else
  -- with() releases the sandbox however the function ends (on Lua 5.4,
  -- `local sb <close> = ...` does the same)
  local function tour(sb)
    print("sandbox " .. sb:name() .. " runs as " .. sb:status().sandbox_id)
    assert(sb:write_file("hello.py", "print('Hello from a Control Plane sandbox')\n"))
    io.write("run: ", assert(sb:run_command("python3", { "hello.py" })).stdout)
    assert(sb:stream("for i in 1 2 3; do echo tick $i; sleep 0.2; done", function(_, chunk)
      io.write("stream: ", chunk)
      io.stdout:flush()
    end))
    print("checkpoint " .. assert(sb:checkpoint()).checkpoint_id)
  end
  local ok, err = pcall(function()
    return unsandbox.with(assert(unsandbox.Sandbox.create { name = "quickstart" }), tour)
  end)
  if not ok then print("the sandbox tour stopped: " .. tostring(err)) end
end

print("\nDone. Point UNSANDBOX_URL and your keys at the real service to run the same script there.")
