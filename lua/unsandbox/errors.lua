--- unsandbox.Error: what an expected failure returns as the second value
-- of `nil, err`. Fields: kind (credentials, http, transport, timeout,
-- protocol, validation, interrupted, cancelled, rpc), status, code,
-- message (the server's own text where there is one), request_id,
-- retry_after, challenge_id; Control Plane errors also hint (file routes'
-- 409) and rpc_code (kind rpc: the JSON-RPC error code, so -32602 bad
-- arguments and -32001 all PTY sessions busy stay apart though both are
-- the spec's 502). kind cancelled is a stream stopped by is_cancelled()
-- or Ctrl-C (status 499). Every interruption of a call has one shape:
-- kind timeout (its deadline) or interrupted (Ctrl-C, a cancelled task),
-- with job_id and cancelled when the call had a job of its own.
-- tostring(err) reads well (and so does "text: " .. err), so
-- `assert(unsandbox.execute_code(...))` gives a useful message.
-- @module unsandbox.errors

--- An expected failure, the second value of `nil, err`.
-- @table Error
-- @field kind "credentials", "http", "transport", "timeout", "protocol",
-- "validation", "interrupted", "cancelled" or "rpc"; the agent tools add
-- "not_found" (no such path or process), "sandbox" (the sandbox refused an
-- operation: code says why, e.g. "not_empty", "exists", "exited") and
-- "integrity" (a transfer's sha256 did not match)
-- @field status the HTTP status (kind http; 499 for cancelled)
-- @field code the server's own error code, when it gives one (kind
-- sandbox: the sandbox side's reason)
-- @field path the file a transfer was moving (transfers only)
-- @field offset the byte a transfer had reached when it failed
-- @field message the server's own text where there is one
-- @field request_id the X-Request-Id of the exchange, when there was one
-- @field retry_after seconds to wait (429), clamped
-- @field challenge_id a sudo challenge (428) to answer with a one-time password
-- @field job_id the job a call gave up on (timeout, interrupted: a
-- deadline, Ctrl-C or a cancelled task), when it had one
-- @field cancelled whether a job the call started was cancelled when it gave up
-- @field hint what to do about it, where the client can tell (the language
-- is not one the service runs, and the nearest names; a URL that is not
-- the service's root; no credentials: how to run with none), or the
-- Control Plane's own hint (file routes' 409)
-- @field timing the call's timing: exchanges, parts, waits, total_ms (see
-- docs/guide/observability.md)
local Error = { __name = "unsandbox.Error" }
Error.__index = Error

local KINDS = {
  credentials = true, http = true, transport = true, timeout = true,
  protocol = true, validation = true, interrupted = true, cancelled = true, rpc = true,
  -- the agent tools' (lua/unsandbox/agent/): a path or process that is not
  -- there; a refusal by the sandbox side (err.code says which); a
  -- transfer whose checksum did not match
  not_found = true, sandbox = true, integrity = true,
  -- a local file a transfer reads or writes could not be (object
  -- uploads from and downloads to a path)
  io = true,
}

function Error.new(fields)
  assert(KINDS[fields.kind], "unknown error kind")
  return setmetatable(fields, Error)
end

function Error.is(v)
  return getmetatable(v) == Error
end

function Error:__tostring()
  local head = "unsandbox: " .. self.kind
  if self.status then head = head .. " " .. self.status end
  local text = head .. ": " .. (self.message or "no message")
  if self.retry_after then text = text .. " (retry after " .. self.retry_after .. " s)" end
  if self.hint then text = text .. "; " .. self.hint end
  if self.request_id then text = text .. " [request " .. self.request_id .. "]" end
  return text
end

-- "failed: " .. err reads like tostring(err), as print(err) does.
function Error.__concat(a, b)
  return tostring(a) .. tostring(b)
end

return Error
