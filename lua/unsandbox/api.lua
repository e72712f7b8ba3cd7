--- The one way the facade talks HTTP: encode the body once, hand the exact
-- bytes to the C client (which signs and sends them), decode the answer,
-- and turn every failure into an unsandbox.Error. Every exchange carries
-- the coroutine's trace (a fresh span each), is metered (timing), shown
-- to the hooks (observe.lua) and, when the client opted in, retried
-- (retry.lua). Inside a task the C call yields; so does a retry's sleep.
-- Internal module.
local cjson = require "cjson.safe"
local check = require "unsandbox.check"
local core = require "unsandbox.core"
local context = require "unsandbox.context"
local Error = require "unsandbox.errors"
local observe = require "unsandbox.observe"
local retry = require "unsandbox.retry"
local shape = require "unsandbox.shape"

local M = {}

-- cjson yields cjson.null for JSON null; results read better with nil.
local function strip_nulls(v)
  if type(v) ~= "table" then return v end
  for k, x in pairs(v) do
    if x == cjson.null then v[k] = nil else strip_nulls(x) end
  end
  return v
end

--- Encodes a request body. Encoding problems (a function value, a sparse
-- array) are the caller's misuse and raise.
function M.encode(body)
  local text, err = cjson.encode(body)
  if not text then check.raise("cannot encode request body as JSON: " .. tostring(err)) end
  return text
end

local function message_of(doc, fallback)
  if type(doc) ~= "table" then return fallback end
  local m = doc.message or doc.reason or doc.error
  return type(m) == "string" and m or fallback
end

--- Turns a raw response into a decoded table or an unsandbox.Error.
function M.decode(resp)
  local doc, jerr
  if resp.body and resp.body ~= "" then
    doc, jerr = cjson.decode(resp.body)
  else
    doc = {}
  end
  if resp.status >= 200 and resp.status < 300 then
    if doc == nil or type(doc) ~= "table" then
      return nil, Error.new {
        kind = "protocol", status = resp.status, request_id = resp.request_id,
        message = "malformed JSON in response: " .. tostring(jerr or "not an object or array"),
      }
    end
    return strip_nulls(doc)
  end
  doc = type(doc) == "table" and strip_nulls(doc) or nil
  return nil, Error.new {
    kind = "http",
    status = resp.status,
    code = doc and type(doc.error) == "string" and doc.error or nil,
    message = message_of(doc, "HTTP " .. resp.status),
    request_id = resp.request_id,
    retry_after = resp.retry_after or (doc and shape.retry_after(doc.retry_after)) or nil,
    challenge_id = doc and shape.token(doc.challenge_id) or nil,
    body = doc,
  }
end

-- The C client's options for one attempt: its traceparent joins the
-- caller's headers (a copy: the caller's table is never changed).
local function attempt_opts(opts, traceparent)
  local copts = { headers = { traceparent = traceparent } }
  if opts then
    copts.auth = opts.auth
    for k, v in pairs(opts.headers or {}) do copts.headers[k] = v end
    if opts.timeout then copts.timeout = math.max(1, math.floor(opts.timeout * 1000)) end
  end
  return copts
end

--- The trace of the running coroutine's calls: {trace_id, flags} or nil.
function M.trace()
  return context.get(context.traces, context.TRACE_OWNER)
end

--- Sends one request, with the client's retries. body: a Lua table
-- (encoded here, once) or nil. opts: raw (the exact body bytes, instead
-- of body: the env vault's text), timeout (seconds), auth (false for
-- unsigned routes), headers, meter (the meter summing the exchanges;
-- default: the running call's, observe.current), idempotent (the caller
-- says a repeat is safe). Returns the decoded document, the request id
-- and the response, or nil, Error (with timing: the meter's, else this
-- exchange's).
function M.call(client, method, path, body, opts)
  local payload = opts and opts.raw
  if body ~= nil then payload = M.encode(body) end
  -- (a stand-in client of the unit specs has no state: no hooks, no retries)
  local state = client._state and client:_state() or nil
  local meter = opts and opts.meter or observe.current()
  local trace = M.trace()
  for attempt = 1, math.maxinteger do
    local tp = core.new_traceparent(trace and trace.trace_id, trace and trace.flags)
    -- a method, path or header the core refuses is the caller's misuse
    local resp, kind, msg, info = check.protect("call", 1, client.request, client, method, path,
      payload, attempt_opts(opts, tp))
    local timing = resp and resp.timing or info and info.timing
    if meter then meter:add(timing) end
    observe.report(state, method, path, attempt, tp, resp, kind, info)
    local doc, err
    if resp then doc, err = M.decode(resp)
    else err = Error.new { kind = kind, message = msg } end
    if doc then return doc, resp.request_id, resp end
    local wait = retry.wait(state and state.retry, attempt, { method = method, idempotent = opts and opts.idempotent,
      status = resp and resp.status, retry_after = err.retry_after, kind = kind,
      sent = info and info.sent })
    if not wait then
      err.attempts = attempt
      err.timing = meter and meter:timing() or observe.single(timing)
      return nil, err
    end
    local t0 = core.monotonic_us()
    local slept = core.sleep(math.max(1, math.floor(wait * 1000)))
    if meter then meter.retry_wait_ms = meter.retry_wait_ms + (core.monotonic_us() - t0) / 1000 end
    if not slept then
      return nil, Error.new { kind = "interrupted", attempts = attempt, message =
        "interrupted while waiting to retry " .. method .. " " .. (path:match("^[^?]*")) }
    end
  end
end

--- What a call that returns a document gives back on success: the
-- document alone, with the request id in it (unless the server's document
-- has a field of that name, or is a list), so `local r, err = f(); if err
-- then` is reliable. On failure: nil, Error as given.
function M.one(doc, rid)
  if not doc then return nil, rid end
  if type(doc) == "table" and #doc == 0 and doc.request_id == nil then doc.request_id = rid end
  return doc
end

return M
