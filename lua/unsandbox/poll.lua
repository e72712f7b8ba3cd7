--- Waiting for jobs: the spec's fixed schedule and the tolerance for
-- exactly the transient cases it lists (both from the core's tracker), a
-- fresh signed request per poll. A Poller follows one job; wait() drives
-- one, wait_all() many at once on one connection. Internal module.
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
function M.poller(client, job_id, on_poll)
  return setmetatable({ client = client, id = job_id, on_poll = on_poll,
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
  local job, rid = api.call(self.client, "GET", "/jobs/" .. self.id, nil,
    timeout and { timeout = timeout })
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

--- Polls one job until a terminal state, at most `timeout` seconds.
-- Returns the final job document and its request id, or nil, Error.
function M.wait(client, job_id, timeout, on_poll)
  local deadline = core.monotonic_ms() + timeout * 1000
  local p = M.poller(client, job_id, on_poll)
  while true do
    local left = deadline - core.monotonic_ms()
    if left <= 0 then return nil, timed_out("job " .. job_id, timeout, p.attempt) end
    if not core.sleep(math.min(p:delay(), left)) then return nil, interrupted("job " .. job_id) end
    local state, a, b = p:poll(math.max(1, (deadline - core.monotonic_ms()) / 1000))
    if state == "done" then return a, b end
    if state == "failed" then return nil, a end
  end
end

--- Polls several jobs at once, each on its own schedule, until all are
-- finished or `timeout` seconds have passed. pollers: a list of Pollers
-- (false for an entry that needs none). Calls finish(i, job, rid) or
-- fail(i, err) once per poller.
function M.wait_all(pollers, timeout, finish, fail)
  local now = core.monotonic_ms()
  local deadline = now + timeout * 1000
  local due, open = {}, 0
  for i, p in ipairs(pollers) do
    if p then due[i] = now + p:delay(); open = open + 1 end
  end
  while open > 0 do
    local next_i
    for i, at in pairs(due) do
      if not next_i or at < due[next_i] then next_i = i end
    end
    now = core.monotonic_ms()
    if now >= deadline then
      for i in pairs(due) do fail(i, timed_out("job " .. pollers[i].id, timeout, pollers[i].attempt)) end
      return
    end
    local wait = math.min(due[next_i], deadline) - now
    if wait > 0 and not core.sleep(wait) then
      for i in pairs(due) do fail(i, interrupted("job " .. pollers[i].id)) end
      return
    end
    if core.monotonic_ms() < deadline then
      local p = pollers[next_i]
      local state, a, b = p:poll(math.max(1, (deadline - core.monotonic_ms()) / 1000))
      if state == "pending" then
        due[next_i] = core.monotonic_ms() + p:delay()
      else
        due[next_i] = nil
        open = open - 1
        if state == "done" then finish(next_i, a, b) else fail(next_i, a) end
      end
    end
  end
end

return M
