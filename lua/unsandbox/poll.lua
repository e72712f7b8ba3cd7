--- Waiting for jobs: the spec's fixed schedule and the tolerance for
-- exactly the transient cases it lists (both from the core's tracker), a
-- fresh signed request per poll. A Poller follows one job; wait() drives
-- it to the end. Its sleeps are core.sleep: inside a task a timer of the
-- event loop (the task yields), elsewhere a blocking, interruptible sleep.
-- Many jobs at once are many tasks (execute_many, map). Internal module.
local core = require "unsandbox.core"
local api = require "unsandbox.api"
local Error = require "unsandbox.errors"
local results = require "unsandbox.results"
local shape = require "unsandbox.shape"

local M = {}

local Poller = {}
Poller.__index = Poller

--- A poller of one job; on_poll(job, attempt) is called after every
-- successful poll, and returning false from it stops the wait.
function M.poller(client, job_id, on_poll, meter)
  return setmetatable({ client = client, id = job_id, on_poll = on_poll, meter = meter,
                        tracker = core.poll_tracker(), attempt = 0 }, Poller)
end

--- Milliseconds to sleep before the next poll.
function Poller:delay()
  return self.tracker:delay(self.attempt + 1)
end

--- One poll. Returns "done", job, request_id | "pending" | "failed", Error.
-- timeout: seconds for this request (nil = the client's default).
function Poller:poll(timeout)
  self.attempt = self.attempt + 1
  if self.meter then self.meter.polls = self.meter.polls + 1 end
  local job, rid = api.call(self.client, "GET", "/jobs/" .. self.id, nil,
    { timeout = timeout, meter = self.meter })
  if job and job.status ~= nil and type(job.status) ~= "string" then
    return "failed", select(2, shape.fail(rid, "'status' should be a string, got " .. type(job.status)))
  end
  if job then
    self.tracker:success()
    if self.on_poll and self.on_poll(job, self.attempt) == false then
      return "failed", Error.new { kind = "validation", message = "wait for job " .. self.id .. " stopped by on_poll" }
    end
    if job.status == nil or results.TERMINAL[job.status] then return "done", job, rid end
    return "pending"
  end
  local err = rid
  local verdict, why = self.tracker:failure(err.kind == "http" and err.status or err.kind)
  if verdict == "retry" then return "pending" end
  if why then err.message = err.message .. " (" .. why .. ")" end
  return "failed", err
end

local function timed_out(what, seconds, polls)
  return Error.new { kind = "timeout", message = string.format(
    "%s still not finished after %g s (%d polls)", what, seconds, polls) }
end

local function interrupted(what)
  return Error.new { kind = "interrupted", message = "interrupted while waiting for " .. what }
end

-- Inside a task, a job this wait follows is cancelled (DELETE, bounded)
-- if the task is cancelled before the wait ends.
-- No task can run before unsandbox.tasks is loaded (unsandbox.spawn
-- loads it), so a wait outside one does not load it.
local function own_job(client, job_id)
  local tasks = package.loaded["unsandbox.tasks"]
  if not tasks then return nil end
  return tasks.own(function()
    return api.call(client, "DELETE", "/jobs/" .. job_id, nil, { timeout = 10 })
  end)
end

local function disown(owned)
  if owned then package.loaded["unsandbox.tasks"].disown(owned) end
end

--- Polls one job until a terminal state, at most `timeout` seconds.
-- Returns the final job document and its request id, or nil, Error.
-- meter (optional) sums the polls, their exchanges and the sleeps.
function M.wait(client, job_id, timeout, on_poll, meter)
  local deadline = core.monotonic_ms() + timeout * 1000
  local p = M.poller(client, job_id, on_poll, meter)
  local owned = own_job(client, job_id)
  while true do
    local left = deadline - core.monotonic_ms()
    if left <= 0 then
      disown(owned)
      return nil, timed_out("job " .. job_id, timeout, p.attempt)
    end
    local t0 = core.monotonic_us()
    local slept = core.sleep(math.min(p:delay(), left))
    if meter then meter.poll_wait_ms = meter.poll_wait_ms + (core.monotonic_us() - t0) / 1000 end
    if not slept then
      disown(owned)
      return nil, interrupted("job " .. job_id)
    end
    local state, a, b = p:poll(math.max(1, (deadline - core.monotonic_ms()) / 1000))
    if state == "done" then
      disown(owned)
      return a, b
    end
    if state == "failed" then
      disown(owned)
      return nil, a
    end
  end
end

return M
