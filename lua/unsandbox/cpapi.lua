--- The one way the Control Plane client talks HTTP (spec §7.1-§7.3): the
-- body encoded once, the query form-encoded by the core, the coroutine's
-- acting subject and trace added here (never by a caller), the request
-- sent by the Manager's C client, the answer decoded, and every failure
-- turned into an unsandbox.Error with the spec's status. Plain calls and
-- streams (mcp.lua) share `options` and `fail`, so both carry the same
-- headers. Internal module.
local cjson = require "cjson.safe"
local core = require "unsandbox.core"
local check = require "unsandbox.check"
local context = require "unsandbox.context"
local Error = require "unsandbox.errors"

local M = {}

M.subjects = context.store()   -- Manager -> coroutine -> X-Acting-Subject
M.traces = context.traces      -- one owner -> coroutine -> {trace_id, flags}
M.TRACE_OWNER = context.TRACE_OWNER

-- Decoded JSON as Lua values read best: cjson.null becomes nil, and a
-- number with an integral value (cjson decodes every number as a float)
-- an integer, so an exit code prints as 0, not 0.0.
local function strip_nulls(v)
  if type(v) ~= "table" then return v end
  for k, x in pairs(v) do
    if x == cjson.null then v[k] = nil
    elseif math.type(x) == "float" then v[k] = math.tointeger(x) or x
    else strip_nulls(x) end
  end
  return v
end
M.strip_nulls = strip_nulls

function M.encode(body)
  local text, err = cjson.encode(body)
  if not text then error("cannot encode request body as JSON: " .. tostring(err), 3) end
  return text
end

--- §7.4: an object call needs the coroutine's subject or an owner; else
-- raises at the user's line naming fname and the path. Methods that make
-- several calls check first, under their own name.
function M.check_object(m, fname, path, owner)
  if core.is_object_call(path) and not owner and not context.get(M.subjects, m) then
    check.fail(fname, "locator", (path:match("^[^?]*")) ..
      " is an object call: bind an acting subject (m:with_subject) or pass an owner")
  end
end

--- The C client's options for a call of the running coroutine. o.timeout
-- in seconds; none = the Manager's timeout (the spec's "100 s" calls).
function M.options(m, fname, path, o)
  M.check_object(m, fname, path, o.owner)
  local subject = context.get(M.subjects, m)
  local trace = context.get(M.traces, M.TRACE_OWNER)
  return {
    token = o.token, subject = subject, owner = o.owner and true or nil,
    trace = trace and trace.trace_id, flags = trace and trace.flags,
    content_type = o.content_type, tool = o.tool, streaming = o.streaming,
    timeout = o.timeout and math.max(1, math.ceil(o.timeout * 1000)) or nil, capture = o.capture,
    mode = o.mode,
  }
end

--- The path with o.query form-encoded (nil and "" values dropped).
function M.path(path, query)
  if not query then return path end
  local q = core.form_encode(query)
  return q == "" and path or path .. "?" .. q
end

--- An Error for a failure of the C client (nothing was answered).
function M.fail(m, kind, msg)
  if kind == "validation" then error(msg, 0) end   -- a header value the core refused: misuse
  if kind == "transport" or kind == "timeout" or kind == "protocol" then
    return Error.new { kind = kind, status = 502,
      message = "Sandbox Control Plane unavailable at " .. m:url() .. ": " .. msg }
  end
  if kind == "cancelled" or kind == "interrupted" then
    return Error.new { kind = kind, status = 499, message = msg }
  end
  return Error.new { kind = kind, message = msg }
end

--- §7.2: an HTTP error is (status, body.error, else the raw text, else
-- "Control Plane returned HTTP <code>").
function M.http_error(resp)
  local doc = cjson.decode(resp.body or "")
  local msg
  if type(doc) == "table" and type(doc.error) == "string" then msg = doc.error
  elseif resp.body and resp.body:match("%S") then msg = resp.body
  else msg = "Control Plane returned HTTP " .. resp.status end
  doc = type(doc) == "table" and strip_nulls(doc) or nil
  return Error.new {
    kind = "http", status = resp.status, message = msg, request_id = resp.request_id,
    retry_after = (doc and math.tointeger(doc.retry_after_seconds)) or resp.retry_after,
    hint = doc and type(doc.hint) == "string" and doc.hint or nil, body = doc,
  }
end

--- §7.2 for a 2xx body: JSON, else {raw = text}; empty = {}.
function M.decode(resp)
  local body = resp.body or ""
  if body == "" then return {} end
  local doc = cjson.decode(body)
  if type(doc) ~= "table" then return { raw = body } end
  return strip_nulls(doc)
end

--- One call. o: query, body (a table: JSON), raw (exact bytes),
-- content_type, token, owner, timeout (s), capture, tool, text (a 2xx body
-- returned as it is, not decoded). Returns doc, resp or nil, Error.
function M.call(m, fname, method, path, o)
  o = o or {}
  path = M.path(path, o.query)
  local payload = o.raw
  if o.body ~= nil then payload = M.encode(o.body) end
  local resp, kind, msg = m:_request(method, path, payload, M.options(m, fname, path, o))
  if not resp then return nil, M.fail(m, kind, msg) end
  if resp.status >= 400 then return nil, M.http_error(resp) end
  if o.text then return resp.body, resp end
  return M.decode(resp), resp
end

--- A protocol error of the client's own checks of a reply (§6: 502).
function M.bad_reply(message, resp)
  return Error.new { kind = "protocol", status = 502, message = message,
    request_id = resp and resp.request_id }
end

return M
