--- What becomes of a job a call started itself (execute_code,
-- service_execute, execute_many) when the caller stops waiting for it:
-- Ctrl-C (the host's "interrupted!" raised as a Lua error, or an Error of
-- kind interrupted from a core wait) or the call's own deadline. The job
-- is cancelled, best effort and within CANCEL_WAIT seconds, so it does not
-- run on unseen; the Error says which job it was (job_id) and whether the
-- cancel went through (cancelled). A job the caller started separately
-- (wait_for_job) is never cancelled here. Internal module.
local core = require "unsandbox.core"
local compat = require "unsandbox.compat"
local transport = require "unsandbox.transport"
local Error = require "unsandbox.errors"
local wrap = require "unsandbox.wrap"

local M = {}

M.CANCEL_WAIT = 5

--- Cancels job_id; true when the service confirmed it. Never raises. A
-- pending Ctrl-C is consumed first: it asked to stop waiting, and the
-- cancel that follows must not be cut short by it.
function M.cancel(client, job_id)
  core.loop.interrupt_take()
  local ok, doc = compat.pcall(transport.request, client, "DELETE", "/jobs/" .. job_id, nil,
    { timeout = M.CANCEL_WAIT })
  return ok and doc ~= nil
end

-- Is err the end of a wait the caller asked for (Ctrl-C) or set (timeout)?
local function gave_up(err)
  return err.kind == "interrupted" or err.kind == "timeout"
end

--- err (a returned Error) with job_id, and the job cancelled when the
-- wait was given up.
function M.note(client, job_id, err)
  if type(err) == "table" and gave_up(err) then
    err.job_id = job_id
    err.cancelled = M.cancel(client, job_id)
  end
  return err
end

--- Runs wait(...) (which returns result or nil, Error). A raised error
-- (Ctrl-C under unlua, or the caller's own on_poll failing) cancels every
-- job of ids not yet finished (finished(id) true) and is raised again; an
-- interrupt is raised as the Error every interruption is (kind
-- interrupted, job_id, cancelled), whatever Lua instruction it hit. A
-- returned interrupt or timeout is noted on the Error (M.note).
function M.guard(client, ids, finished, wait, ...)
  local ok, r, err = compat.pcall(wait, ...)
  if not ok then
    local interrupt = wrap.is_interrupt(r) or (Error.is(r) and r.kind == "interrupted")
    local cancelled, named
    for _, id in ipairs(ids) do
      if not finished(id) then
        local done = M.cancel(client, id)
        if not named then named, cancelled = id, done end
      end
    end
    if interrupt then
      if not Error.is(r) then r = wrap.interrupted("while waiting for job " .. tostring(named)) end
      if r.job_id == nil then r.job_id, r.cancelled = named, cancelled end
    end
    error(r, 0)
  end
  if r == nil then return nil, err end
  return r                                     -- success is one value
end

return M
