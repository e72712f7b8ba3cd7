-- hello.lua: run a Python snippet and print what it printed.
--   UNSANDBOX_URL=... UNSANDBOX_PUBLIC_KEY=... UNSANDBOX_SECRET_KEY=... unlua examples/hello.lua
-- (or: unlua --local examples/hello.lua, against a private local backend)
local unsandbox = require "unsandbox"

local result = assert(unsandbox.execute_code("python", 'print("Hello from a sandbox!")'))
io.write(result.stdout)
print(string.format("exit code %d in %s ms (job %s)",
  result.exit_code, tostring(result.execution_time_ms), result.job_id))
