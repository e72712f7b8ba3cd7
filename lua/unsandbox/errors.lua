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
-- docs/guide/troubleshooting.md says what to do about each kind.
-- @classmod Error

--- An expected failure, the second value of `nil, err`: its fields.
-- @table Error
-- @tfield string kind "credentials", "http", "transport", "timeout", "protocol",
-- "validation", "interrupted", "cancelled" or "rpc"; the agent tools add
-- "not_found" (no such path or process), "sandbox" (the sandbox refused an
-- operation: code says why, e.g. "not_empty", "exists", "exited") and
-- "integrity" (a transfer's sha256 did not match)
-- @tfield integer status the HTTP status (kind http; a Manager's transport,
-- timeout, protocol and rpc errors 502; 499 for cancelled)
-- @tfield string code the server's own error code, when it gives one (kind
-- sandbox: the sandbox side's reason)
-- @tfield string path the file a transfer was moving (transfers only)
-- @tfield integer offset the byte a transfer had reached when it failed
-- @tfield string message the server's own text where there is one
-- @tfield string request_id the X-Request-Id of the exchange, when there was one
-- @tfield number retry_after seconds to wait (429), clamped
-- @tfield string challenge_id a sudo challenge (428) to answer with a one-time password
-- @tfield string job_id the job a call gave up on (timeout, interrupted: a
-- deadline, Ctrl-C or a cancelled task), when it had one
-- @tfield boolean cancelled whether a job the call started was cancelled when it gave up
-- @tfield string hint what to do about it, where the client can tell (the language
-- is not one the service runs, and the nearest names; a URL that is not
-- the service's root; no credentials: how to run with none), or the
-- Control Plane's own hint (file routes' 409)
-- @tfield table timing the call's timing: exchanges, parts, waits, total_ms (see
-- docs/guide/observability.md)
-- @tfield integer rpc_code the JSON-RPC error code (kind rpc): -32602 bad arguments
-- or no such shell session, -32001 every PTY session busy, -32603 other
-- @tfield any data the JSON-RPC error's data (kind rpc), when it gave some
-- @tfield table body the decoded JSON body of an HTTP error, when it had one
-- @tfield integer close_code the WebSocket close code of a Terminal that failed
-- @tfield Error cause the first error of a failed transfer (err.path, err.offset)
-- @tfield string reason why a stream was cancelled ("is_cancelled", "interrupted")
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

--- Makes an Error, for code that returns failures in the library's shape.
-- @static
-- @tparam table fields its fields (the table becomes the Error); `kind`
-- is required
-- @treturn Error
-- @raise an unknown kind
function Error.new(fields)
  assert(KINDS[fields.kind], "unknown error kind")
  return setmetatable(fields, Error)
end

--- Whether a value is an Error (`unsandbox.Error.is(err)`).
-- @static
-- @tparam any v
-- @treturn boolean
function Error.is(v)
  return getmetatable(v) == Error
end

--- "unsandbox: KIND [STATUS]: message (retry after N s); hint [request
-- ID]": what print(err), tostring(err) and error(err) show.
-- @treturn string
function Error:__tostring()
  local head = "unsandbox: " .. self.kind
  if self.status then head = head .. " " .. self.status end
  local text = head .. ": " .. (self.message or "no message")
  if self.retry_after then text = text .. " (retry after " .. self.retry_after .. " s)" end
  if self.hint then text = text .. "; " .. self.hint end
  if self.request_id then text = text .. " [request " .. self.request_id .. "]" end
  return text
end

--- `"failed: " .. err` reads like tostring(err), as print(err) does.
-- @tparam string|Error a
-- @tparam string|Error b
-- @treturn string
function Error.__concat(a, b)
  return tostring(a) .. tostring(b)
end

return Error
