-- agent_tools.lua: what an agent reaches for first, on a Control Plane
-- sandbox: a process to talk to, a stateful interpreter, files managed
-- and a large file moved with progress and a checked sha256.
--   unlua --local examples/agent_tools.lua
local unsandbox = require "unsandbox"

local sb <close> = assert(unsandbox.Sandbox.create {})

-- 1. a process with stdin: lines in, answers out, stderr apart
local p <close> = assert(sb:spawn({ "python3", "-u", "-c", [[
import sys
for line in sys.stdin:
    print("upper:", line.strip().upper())
    print("seen:", len(line), file=sys.stderr)
]] }))
assert(p:write("hello\nworld\n"))
assert(p:close_stdin())
for channel, line in p:lines(30) do print(channel, line) end
print("exit code", p.exit_code)

-- 2. a stateful interpreter: variables survive cells, errors are data
local py <close> = assert(sb:context("python"))
assert(py:run("import math\nradius = 2"))
print("area", assert(py:run("math.pi * radius ** 2")).value)
local r = assert(py:run("1 / 0"))
print("error", r.error.name, r.error.message)
print("still there", assert(py:run("radius")).value)

-- 3. files managed
assert(sb:mkdir("reports/2024", { parents = true }))
assert(sb:write_file("reports/2024/q1.txt", "Q1: up 12%\n"))
assert(sb:rename("reports/2024/q1.txt", "reports/2024/first quarter.txt"))
assert(sb:chmod("reports/2024/first quarter.txt", "0600"))
for _, e in ipairs(assert(sb:list("reports", { recursive = true }))) do
  print(e.type, string.format("%o", e.mode), e.size, e.path)
end

-- 4. a large file up and back, streamed, with progress and sha256
local local_file = os.tmpname()
local f = assert(io.open(local_file, "wb"))
for i = 1, 24 do f:write(string.rep(string.char(64 + i), 1024 * 1024)) end
f:close()
local last = -100
local up = assert(sb:upload({ path = local_file }, "data/big.bin", {
  on_progress = function(done, total)
    local pct = math.floor(done * 100 / total)
    if pct >= last + 25 or done == total then print(string.format("upload %3d%%", pct)); last = pct end
  end }))
print("uploaded", up.bytes, "bytes, sha256", up.sha256:sub(1, 16) .. "...")
local back = local_file .. ".back"
local _, info = assert(sb:download("data/big.bin", back))
print("downloaded", info.bytes, "bytes, same sha256:", info.sha256 == up.sha256)
os.remove(local_file)
os.remove(back)
