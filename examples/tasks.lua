-- Many calls at once, in one thread, with tasks: each spawn() is a
-- coroutine whose calls yield instead of blocking, so the three jobs below
-- wait together; run() drives them all to the end. Then the same with the
-- helpers built on tasks: execute_each (results in the order they finish)
-- and map (one program per input, at most `concurrency` at once).
--
--   bin/unlua examples/tasks.lua   (UNSANDBOX_URL and keys set)
local unsandbox = require "unsandbox"

local started = unsandbox.core.monotonic_ms()
local langs = { "python", "bash", "lua" }
local code = { "import time; time.sleep(1); print('py')", "sleep 1; echo sh", "print('lua')" }
local list = {}
for i, lang in ipairs(langs) do
  list[i] = unsandbox.spawn(function() return unsandbox.execute_code(lang, code[i]) end)
end
assert(unsandbox.run(120))
for i, t in ipairs(list) do
  local r, err = t:result()
  print(langs[i] .. " -> " .. (r and r.stdout:gsub("\n$", "") or tostring(err)))
end
print(string.format("three jobs took %.1f s together", (unsandbox.core.monotonic_ms() - started) / 1000))

for i, r, err in unsandbox.execute_each { { "bash", "sleep 1; echo second" }, { "bash", "echo first" } } do
  print("finished: #" .. i .. " " .. (r and r.stdout:gsub("\n$", "") or tostring(err)))
end

local squares = assert(unsandbox.map("python", { 1, 2, 3, 4 }, function(n)
  return "print(" .. n .. " * " .. n .. ")"
end, { concurrency = 2 }))
local out = {}
for i, r in ipairs(squares) do out[i] = r.stdout:gsub("\n$", "") end
print("squares: " .. table.concat(out, " "))
