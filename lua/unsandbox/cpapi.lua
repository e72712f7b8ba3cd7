--- The one way the Control Plane client talks HTTP (spec §7.1-§7.3): the
-- body encoded once, the query form-encoded by the core, the coroutine's
-- acting subject and trace added here (never by a caller), the request
-- sent by the Manager's C client, the answer decoded, and every failure
-- turned into an unsandbox.Error with the spec's status. Plain calls and
-- streams (M.open: MCP streams, ticket downloads) share `options` and
-- `fail`, so both carry the same headers. Every exchange, plain or
-- streamed, is metered (the running call's meter) and shown to the hooks
-- once (observe.lua: the Manager's own and the global one); a plain call
-- is retried when the Manager opted in (retry.lua: idempotent calls
-- only). Internal module.
local cjson = require "cjson.safe"
local core = require "unsandbox.core"
local check = require "unsandbox.check"
local context = require "unsandbox.context"
local Error = require "unsandbox.errors"
local observe = require "unsandbox.observe"
local retry = require "unsandbox.retry"
local shape = require "unsandbox.shape"

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
    retry_after = (doc and shape.retry_after(doc.retry_after_seconds)) or resp.retry_after,
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

-- The C client's options of one exchange, with a traceparent made here
-- (the hook shows the one that was sent).
local function exchange_opts(m, fname, path, o, trace)
  local copts = M.options(m, fname, path, o)
  copts.traceparent = core.new_traceparent(trace and trace.trace_id, trace and trace.flags)
  copts.trace, copts.flags = nil, nil
  return copts
end

-- One attempt, reported to the hooks and added to the meter. Returns
-- resp or nil, Error, and the failure's kind and info.
local function attempt(m, fname, method, path, payload, o, n, trace, meter)
  local copts = exchange_opts(m, fname, path, o, trace)
  local resp, kind, msg, info = m:_request(method, path, payload, copts)
  local timing = resp and resp.timing or info and info.timing
  if meter then meter:add(timing) end
  observe.report(m:_state(), method, path, n, copts.traceparent, resp, kind, info)
  local err
  if not resp then err = M.fail(m, kind, msg)
  elseif resp.status >= 400 then err = M.http_error(resp) end
  if err then err.timing = meter and meter:timing() or observe.single(timing) end
  return resp, err, kind, info
end

local function body_of(o)
  if o.body ~= nil then return M.encode(o.body) end
  return o.raw
end

--- One call. o: query, body (a table: JSON), raw (exact bytes),
-- content_type, token, owner, timeout (s), capture, tool, streaming
-- (an MCP call's Accept), text (a 2xx body returned as it is, not
-- decoded), idempotent (the caller says a repeat is safe: only then, or
-- for GET/HEAD/PUT/DELETE, may the Manager's retry policy repeat it),
-- once (never repeated whatever the method: a single-use ticket's).
-- Returns doc, resp or nil, Error (with timing: the running call's).
function M.call(m, fname, method, path, o)
  o = o or {}
  path = M.path(path, o.query)
  local payload = body_of(o)
  local state = m:_state()
  local trace = context.get(M.traces, M.TRACE_OWNER)
  local meter = observe.current()
  for n = 1, math.maxinteger do
    local resp, err, kind, info = attempt(m, fname, method, path, payload, o, n, trace, meter)
    if not err then
      if o.text then return resp.body, resp end
      return M.decode(resp), resp
    end
    local wait = not o.once and retry.wait(state.retry, n, { method = method,
      idempotent = o.idempotent, status = resp and resp.status, retry_after = err.retry_after,
      kind = kind, sent = info and info.sent })
    if not wait then
      err.attempts = n
      return nil, err
    end
    local t0 = core.monotonic_us()
    local slept = core.sleep(math.max(1, math.floor(wait * 1000)))
    if meter then meter.retry_wait_ms = meter.retry_wait_ms + (core.monotonic_us() - t0) / 1000 end
    if not slept then
      return nil, Error.new { kind = "interrupted", status = 499, attempts = n,
        message = "interrupted while waiting to retry " .. method .. " " .. (path:match("^[^?]*")) }
    end
  end
end

--- A stream: the Transfer of one exchange (o as for call, with mode =
-- "sse" or "raw"), and its Exchange (observe.exchange), which the caller
-- closes with its block and finishes with M.result. No retries: a stream
-- is never repeated. Returns transfer, exchange or nil, Error.
function M.open(m, fname, method, path, o)
  path = M.path(path, o.query)
  local copts = exchange_opts(m, fname, path, o, context.get(M.traces, M.TRACE_OWNER))
  copts.mode = o.mode
  local t, kind, msg, info = m:_open(method, path, body_of(o), copts)
  if not t then
    local meter = observe.current()
    if meter then meter:add(info and info.timing) end
    observe.report(m:_state(), method, path, 1, copts.traceparent, nil, kind, info)
    return nil, M.fail(m, kind, msg)
  end
  return t, observe.exchange(m:_state(), observe.current(), method, path, 1, copts.traceparent, t)
end

--- The end of a stream: t:result(), reported (once) and metered by its
-- Exchange. Returns what t:result() does.
function M.result(t, ex)
  local resp, kind, msg, info = t:result()
  ex:finish(resp, kind, info)
  return resp, kind, msg, info
end

--- A protocol error of the client's own checks of a reply (§6: 502).
function M.bad_reply(message, resp)
  return Error.new { kind = "protocol", status = 502, message = message,
    request_id = resp and resp.request_id }
end

return M
