--- Waiting for a job: the spec's fixed schedule (from the core), a fresh
-- signed request per poll, and tolerance for exactly the transient cases
-- the spec lists. Internal module.
local core = require "unsandbox.core"
local api = require "unsandbox.api"
local Error = require "unsandbox.errors"
local results = require "unsandbox.results"

local M = {}

--- Polls GET /jobs/{id} until a terminal state.
-- opts.timeout: overall deadline in seconds (nil = none given by caller;
-- the facade always passes one). opts.on_poll(job, attempt) is called after
-- every successful poll; returning false from it stops the wait with a
-- timeout-free "cancelled by on_poll" validation error.
-- Returns the final job document and its request id, or nil, Error.
function M.wait(client, job_id, opts)
  local deadline = opts.timeout and core.monotonic_ms() + opts.timeout * 1000
  local tracker = core.poll_tracker()
  local attempt = 0
  while true do
    attempt = attempt + 1
    local delay = tracker:delay(attempt)
    if deadline then
      local left = deadline - core.monotonic_ms()
      if left <= 0 then
        return nil, Error.new { kind = "timeout", message = string.format(
          "job %s still not finished after %g s (%d polls)", job_id, opts.timeout, attempt - 1) }
      end
      delay = math.min(delay, left)
    end
    if not core.sleep(delay) then
      return nil, Error.new { kind = "interrupted", message = "interrupted while waiting for job " .. job_id }
    end
    local req_timeout = deadline and math.max(1, (deadline - core.monotonic_ms()) / 1000) or nil
    local job, rid = api.call(client, "GET", "/jobs/" .. job_id, nil,
      req_timeout and { timeout = math.min(req_timeout, opts.request_timeout or req_timeout) })
    if job then
      tracker:success()
      if opts.on_poll and opts.on_poll(job, attempt) == false then
        return nil, Error.new { kind = "validation", message = "wait for job " .. job_id .. " stopped by on_poll" }
      end
      if job.status == nil or results.TERMINAL[job.status] then return job, rid end
    else
      local err = rid
      local verdict, why = tracker:failure(err.kind == "http" and err.status or err.kind)
      if verdict ~= "retry" then
        if why then err.message = err.message .. " (" .. why .. ")" end
        return nil, err
      end
    end
  end
end

return M
