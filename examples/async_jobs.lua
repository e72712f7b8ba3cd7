-- async_jobs.lua: submit several jobs at once, then wait for each one,
-- reporting every poll.
local unsandbox = require "unsandbox"

local programs = {
  { "python", "import time; time.sleep(1); print(sum(range(10)))" },
  { "bash", "sleep 0.5; echo $((6 * 7))" },
  { "lua", "print(('job'):rep(3, '-'))" },
}

local jobs = {}
for i, p in ipairs(programs) do
  jobs[i] = assert(unsandbox.execute_async(p[1], p[2]))
  print("submitted " .. p[1] .. " as " .. jobs[i])
end

for i, id in ipairs(jobs) do
  local result = assert(unsandbox.wait_for_job(id, {
    timeout = 60,
    on_poll = function(job, attempt)
      print(string.format("  poll %d of %s: %s", attempt, id, job.status))
    end,
  }))
  print(string.format("%s finished: %s -> %s", programs[i][1], result.status, result.stdout:gsub("\n$", "")))
end
