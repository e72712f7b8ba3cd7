--- Waiting for jobs: the spec's fixed schedule and the tolerance for
-- exactly the transient cases it lists (both from the core's tracker), a
-- fresh signed request per poll. A Poller follows one job; wait() drives
-- it to the end. Its sleeps are core.loop.sleep: inside a task a timer of the
-- event loop (the task yields), elsewhere a blocking, interruptible sleep.
-- Many jobs at once are many tasks (execute_many, map). Internal module.
local core = require "unsandbox.core"
local transport = require "unsandbox.transport"
local Error = require "unsandbox.errors"
local observe = require "unsandbox.observe"
local results = require "unsandbox.exec.results"
local shape = require "unsandbox.shape"

local M = {}

local Poller = {}
Poller.__index = Poller

--- A poller of one job; on_poll(job, attempt) is called after every
-- successful poll, and returning false from it stops the wait.
function M.poller(client, job_id, on_poll, meter)
  return setmetatable({ client = client, id = job_id, on_poll = on_poll, meter = meter,
                        tracker = core.exec.poll_tracker(), attempt = 0 }, Poller)
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
  local job, rid = transport.request(self.client, "GET", "/jobs/" .. self.id, nil,
    { timeout = timeout, meter = self.meter })
  if job and job.status ~= nil and type(job.status) ~= "string" then
    return "failed", select(2, shape.fail(rid, "'status' should be a string, got " .. type(job.status)))
  end
  if job then
    self.seen = true
    self.tracker:success()
    -- on_poll is the caller's own code: its library calls are its own
    if self.on_poll and observe.outside(self.on_poll, job, self.attempt) == false then
      return "failed", Error.new { kind = "validation", message = "wait for job " .. self.id .. " stopped by on_poll" }
    end
    if job.status == nil or results.TERMINAL[job.status] then return "done", job, rid end
    return "pending"
  end
  local err = rid
  self.last_error = err
  local verdict, why = self.tracker:failure(err.kind == "http" and err.status or err.kind)
  if verdict == "retry" then return "pending" end
  if why then err.message = err.message .. " (" .. why .. ")" end
  return "failed", err
end

-- The end of a wait at its deadline, told in the whole call's time: the
-- timeout the call was given (a submission before the polls is in it).
local function timed_out(p, seconds)
  return Error.new { kind = "timeout", message = string.format(
    "job %s still not finished after %g s (%d polls)", p.id, seconds, p.attempt) }
end

-- An id every answer so far called unknown: its 404, whatever the time
-- left (the caller named a job the service does not have).
local function unknown(p)
  local err = p.last_error
  if p.seen or not (err and err.kind == "http" and err.status == 404) then return nil end
  err.message = err.message .. " (job " .. p.id .. ": " .. p.tracker:state().not_found ..
    " answers 404 and none found it)"
  return err
end

local function interrupted(what)
  return Error.new { kind = "interrupted", message = "interrupted while waiting for " .. what }
end

-- Inside a task, a job this wait follows is cancelled (DELETE, bounded)
-- if the task is cancelled before the wait ends; the task's error names
-- it (job_id, and cancelled once the DELETE answered).
-- No task can run before unsandbox.tasks is loaded (unsandbox.spawn
-- loads it), so a wait outside one does not load it.
local function own_job(client, job_id)
  local tasks = package.loaded["unsandbox.tasks"]
  if not tasks then return nil end
  return tasks.own(function()
    local doc = transport.request(client, "DELETE", "/jobs/" .. job_id, nil, { timeout = 10 })
    return doc ~= nil
  end, job_id)
end

local function disown(owned)
  if owned then package.loaded["unsandbox.tasks"].disown(owned) end
end

-- The loop of M.wait: the final job and its request id, or nil, Error.
local function drive(p, deadline, seconds, opts)
  local function over()
    return nil, opts.unknown_is_404 and unknown(p) or timed_out(p, seconds)
  end
  local first = opts.at_once
  while true do
    local left = deadline - core.loop.monotonic_ms()
    if left <= 0 then return over() end
    local t0 = core.loop.monotonic_us()
    local slept = first or core.loop.sleep(math.min(p:delay(), left))
    first = false
    if p.meter then p.meter.poll_wait_ms = p.meter.poll_wait_ms + (core.loop.monotonic_us() - t0) / 1000 end
    if not slept then return nil, interrupted("job " .. p.id) end
    left = deadline - core.loop.monotonic_ms()
    if left <= 0 then return over() end     -- the sleep took what was left: no poll
    local state, a, b = p:poll(left / 1000)
    if state == "done" then return a, b end
    if state == "failed" then
      -- a poll cut short by the deadline is the wait's end at the deadline
      if a.kind == "timeout" and core.loop.monotonic_ms() >= deadline then return over() end
      return nil, a
    end
  end
end

--- Polls one job until a terminal state, at most `timeout` seconds.
-- Returns the final job document and its request id, or nil, Error.
-- meter sums the polls, their exchanges and the sleeps (default: the
-- running call's). opts: at_once (the first poll without the schedule's
-- delay), unknown_is_404 (a job no poll found is the 404 it is, also at
-- the deadline), call_timeout (the seconds the whole call was given, for
-- the timeout's message; default timeout).
function M.wait(client, job_id, timeout, on_poll, meter, opts)
  opts = opts or {}
  meter = meter or observe.current()
  local p = M.poller(client, job_id, on_poll, meter)
  -- owned until the wait ends by itself; a task cancelled meanwhile (its
  -- coroutine closed) keeps the cleanup, which cancels the job
  local owned = own_job(client, job_id)
  local job, rid = drive(p, core.loop.monotonic_ms() + timeout * 1000, opts.call_timeout or timeout, opts)
  disown(owned)
  return job, rid
end

return M
