-- agent.lua: the loop of a coding agent on a Control Plane sandbox.
--   unlua --local examples/agent.lua
-- (or with SANDBOX_CONTROL_PLANE_URL and SANDBOX_TOKEN set for a real
-- platform). It creates a sandbox, writes a small Python project, runs its
-- tests with the output streamed live, fixes the bug they find, runs them
-- again, checkpoints the good state, breaks it, and restores it. The
-- sandbox is released when the block ends, also if a step fails.
local unsandbox = require "unsandbox"

local function step(title) print("\n== " .. title) end

-- Streams a command's output as it arrives; returns its exit code.
local function run(sb, command)
  local r = assert(sb:stream(command, function(channel, chunk)
    local out = channel == "stderr" and io.stderr or io.stdout
    out:write(chunk)
    out:flush()
  end, 30))
  print(string.format("-- exit code %d", r.exit_code))
  return r.exit_code
end

local name = "agent-" .. unsandbox.new_trace_id():sub(1, 8)
local sb <close> = assert(unsandbox.Sandbox.create { name = name })
print("sandbox " .. name .. ": " .. sb:status().sandbox_id)

step("write the project")
assert(sb:write_files {
  { path = "src/calc.py", content = "def add(a, b):\n    return a - b\n" },
  { path = "src/test_calc.py", content = table.concat({
      "import unittest",
      "from calc import add",
      "",
      "class Add(unittest.TestCase):",
      "    def test_small(self):",
      "        self.assertEqual(add(2, 3), 5)",
      "",
      "if __name__ == '__main__':",
      "    unittest.main()", "" }, "\n") },
})
print("src/calc.py, src/test_calc.py written")

-- -B: no bytecode cache (an edit within the same second, same size, would
-- otherwise run the stale compiled module)
local TEST = "cd src && python3 -B -m unittest -v test_calc 2>&1"

step("run the tests (streamed)")
local code = run(sb, TEST)
print(code == 0 and "tests pass" or "tests fail: the agent reads the file and fixes it")

step("fix the bug")
local src = assert(sb:read_file("src/calc.py")).content
io.write(src)
assert(sb:edit_file("src/calc.py", "return a - b", "return a + b"))
print("edited: return a - b -> return a + b")

step("run the tests again")
assert(run(sb, TEST) == 0, "the fix did not work")

step("checkpoint the good state")
local cp = assert(sb:checkpoint())
print("checkpoint " .. cp.checkpoint_id .. " (" .. cp.bytes .. " bytes)")

step("break it, then restore")
assert(sb:write_file("src/calc.py", "def add(a, b):\n    raise RuntimeError('oops')\n"))
print("after breaking it: exit code " .. run(sb, TEST))
assert(sb:restore(cp.checkpoint_id, cp.sha256))
print("after the restore: exit code " .. run(sb, TEST))
print("\ndone; the sandbox is released as the script ends")
