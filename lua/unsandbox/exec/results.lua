--- Normalises what the service returns for a run (POST /execute, a job, a
-- session command) into the table the library documents. Internal module.
local compat = require "unsandbox.compat"
local shape = require "unsandbox.shape"

local M = {}

M.TERMINAL = { completed = true, failed = true, timeout = true, cancelled = true }

--- Is this document a job still to be polled? (spec: job_id and a
-- pending/running status; anything else, even without status, is final)
function M.is_pending(doc)
  return doc.job_id ~= nil and (doc.status == "pending" or doc.status == "running")
end

--- The job id of a pending document, checked (shape.id), or nil, Error.
function M.pending_id(doc, request_id)
  return shape.id(doc, "job_id", request_id)
end

-- Services disagree on the timing field; read them in the spec's order.
local function execution_time_ms(doc)
  local ms = doc.execution_time_ms or doc.runtime_ms or doc.duration_ms
  if ms == nil and type(doc.execution_time) == "number" then
    -- microseconds: whole milliseconds stay an integer
    ms = doc.execution_time / 1000
    ms = compat.tointeger(ms) or ms
  end
  return type(ms) == "number" and ms or nil
end

--- The documented result table: stdout, stderr, exit_code, status,
-- job_id, execution_time_ms, request_id, truncation flags, error text and,
-- when asked, artifacts ({filename, content}). Every field is
-- shape-checked first: a wrong one gives nil, Error (kind protocol).
function M.normalise(doc, request_id, want_artifacts)
  local fine, err = shape.result(doc, request_id)
  if not fine then return nil, err end
  local r = {
    stdout = doc.stdout or "",
    stderr = doc.stderr or "",
    exit_code = doc.exit_code,
    status = doc.status or "completed",
    job_id = doc.job_id,
    language = doc.language,
    execution_time_ms = execution_time_ms(doc),
    stdout_truncated = doc.stdout_truncated == true,
    stderr_truncated = doc.stderr_truncated == true,
    error = doc.error,
    created_at = doc.created_at,
    completed_at = doc.completed_at,
    request_id = request_id,
  }
  if want_artifacts then
    r.artifacts, err = shape.artifacts(doc.artifacts, request_id)
    if not r.artifacts then return nil, err end
  end
  return r
end

return M
