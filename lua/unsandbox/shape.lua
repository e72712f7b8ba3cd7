--- Shape checks of what a server sends. A decoded reply is data from the
-- network: nothing in it is used (put in a path, compared, indexed,
-- returned as a list) before its type and form are checked here, and a
-- value of the wrong shape is a `protocol` error, never a Lua error.
-- Ids from the server pass the same validator as ids from the user
-- (core.rules.valid_id), so a server cannot steer a poll to another route.
-- Internal module.
local compat = require "unsandbox.compat"
local core = require "unsandbox.core"
local Error = require "unsandbox.errors"

local M = {}

--- nil, Error of kind protocol: "malformed response: <what>".
function M.fail(request_id, what)
  return nil, Error.new { kind = "protocol", request_id = request_id, message = "malformed response: " .. what }
end

--- A table whose keys are exactly 1..n (a JSON array; [] and {} alike).
function M.is_list(t)
  if type(t) ~= "table" then return false end
  local n = 0
  for k in pairs(t) do
    if compat.math_type(k) ~= "integer" or k < 1 then return false end
    n = n + 1
  end
  return n == #t
end

function M.valid_id(v)
  return type(v) == "string" and core.rules.valid_id(v)
end

--- doc[key] as an id, or nil, Error. optional: absent is fine (nil).
function M.id(doc, key, request_id, optional)
  local v = doc[key]
  if v == nil and optional then return nil end
  if not M.valid_id(v) then
    return M.fail(request_id, string.format("'%s' is not a valid id (got %s)", key,
      type(v) == "string" and string.format("%q", v:sub(1, 64)) or type(v)))
  end
  return v
end

--- doc[key] (or, when absent and bare is true, doc itself) as a list of
-- objects, or nil, Error. Absent entirely: an empty list.
function M.list(doc, key, request_id, bare)
  local v = doc[key]
  if v == nil then v = bare and M.is_list(doc) and doc or {} end
  if not M.is_list(v) then return M.fail(request_id, "'" .. key .. "' is not a list") end
  for i, item in ipairs(v) do
    if type(item) ~= "table" then
      return M.fail(request_id, string.format("'%s'[%d] is not an object", key, i))
    end
  end
  return v
end

-- The type every field of a result may have (absent is always fine).
local FIELDS = {
  stdout = "string", stderr = "string", status = "string", language = "string",
  error = "string", exit_code = "number", created_at = "number", completed_at = "number",
  execution_time_ms = "number", runtime_ms = "number", duration_ms = "number",
  execution_time = "number", stdout_truncated = "boolean", stderr_truncated = "boolean",
}

--- Checks a job or result document: true when fine, else nil, Error.
function M.result(doc, request_id)
  for k, want in pairs(FIELDS) do
    local v = doc[k]
    if v ~= nil and type(v) ~= want then
      return M.fail(request_id, string.format("'%s' should be a %s, got %s", k, want, type(v)))
    end
  end
  if doc.job_id ~= nil and not M.valid_id(doc.job_id) then return M.id(doc, "job_id", request_id) end
  return true
end

--- The artifacts list, decoded: {{filename, content, size}} or nil, Error.
-- A name must be a relative path (the core's rule); content valid base64.
function M.artifacts(list, request_id)
  if list == nil then return {} end
  if not M.is_list(list) then return M.fail(request_id, "'artifacts' is not a list") end
  local out = {}
  for i, a in ipairs(list) do
    if type(a) ~= "table" or type(a.filename) ~= "string" or type(a.content_base64) ~= "string" then
      return M.fail(request_id, "artifacts[" .. i .. "] needs string filename and content_base64")
    end
    local why = core.rules.relpath_check(a.filename)
    if why then return M.fail(request_id, "artifacts[" .. i .. "]: file name " .. why) end
    local bytes = core.codec.base64_decode(a.content_base64)
    if not bytes then return M.fail(request_id, "artifacts[" .. i .. "]: content is not base64") end
    out[i] = { filename = a.filename, content = bytes, size = #bytes }
  end
  return out
end

--- A retry_after from a body: a number of seconds, rounded up and clamped
-- to 0..the core's ceiling (as the header is); nil when not a number.
function M.retry_after(v)
  if type(v) ~= "number" or v ~= v then return nil end
  if v <= 0 then return 0 end
  if v >= core.rules.LIMITS.retry_after then return core.rules.LIMITS.retry_after end
  return compat.tointeger(v) or compat.tointeger(math.ceil(v))
end

--- A value that will be sent back in a header (a sudo challenge id):
-- printable ASCII, no blanks, at most 256 bytes; else nil.
function M.token(v)
  if type(v) ~= "string" or #v == 0 or #v > 256 or v:find("[^\33-\126]") then return nil end
  return v
end

return M
