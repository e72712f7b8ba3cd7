--- The one way the facade talks HTTP, for both services: the body
-- encoded once (cjson), the exact bytes handed to the C client (which
-- signs or authorises and sends them), the answer decoded and normalised
-- (JSON null is nil, an integral number an integer, so an exit code
-- prints as 0 and not 0.0, for both APIs alike), and every failure an
-- unsandbox.Error. Every exchange carries the coroutine's trace (a new
-- span each), adds to the running call's meter, is shown to the hooks
-- once (observe.lua) and, when its owner opted in, is retried
-- (retry.lua); inside a task the C call yields, and so does a retry's
-- sleep. Streams (M.open) share the request options and the failure
-- mapping, so a stream carries exactly the headers a plain call does.
--
-- What differs between the services is a small policy (M.exec, M.cp):
-- how the C client is called (a Client's request, a Manager's _request),
-- the options of one exchange (signing and headers; the token, the acting
-- subject and the object-call rule), what a failure of the C client
-- becomes (the Control Plane's spec gives transport failures 502 and
-- cancellations 499), how an HTTP error reads (the execution API's
-- {error, message, reason}, the Control Plane's {error} or its raw text),
-- and how a 2xx body that is not JSON is taken (a protocol error, or the
-- Control Plane's {raw = text}). Internal module.
local compat = require "unsandbox.compat"
local cjson = require "cjson.safe"
local core = require "unsandbox.core"
local advice = require "unsandbox.advice"
local check = require "unsandbox.check"
local context = require "unsandbox.context"
local Error = require "unsandbox.errors"
local observe = require "unsandbox.observe"
local retry = require "unsandbox.retry"
local shape = require "unsandbox.shape"

local M = {}

--- Decoded JSON as Lua values read best: cjson.null becomes nil, and a
-- number with an integral value (cjson decodes every number as a float)
-- an integer. Changes v in place and returns it.
local function normalise(v)
  if type(v) ~= "table" then return v end
  for k, x in pairs(v) do
    if x == cjson.null then v[k] = nil
    elseif compat.math_type(x) == "float" then v[k] = compat.tointeger(x) or x
    else normalise(x) end
  end
  return v
end
M.normalise = normalise

--- text decoded as JSON and normalised, or nil and why not.
function M.decode_json(text)
  local v, err = cjson.decode(text)
  if v == nil then return nil, err end
  if compat.math_type(v) == "float" then return compat.tointeger(v) or v end
  return normalise(v)
end

--- Encodes a request body. Encoding problems (a function value, a sparse
-- array) are the caller's misuse and raise at the caller's line.
function M.encode(body)
  local text, err = cjson.encode(body)
  if not text then check.raise("cannot encode request body as JSON: " .. tostring(err)) end
  return text
end

--- The trace of the running coroutine's calls: {trace_id, flags} or nil.
function M.trace()
  return context.get(context.traces, context.TRACE_OWNER)
end

local function seconds_to_ms(s, round)
  return s and math.max(1, round(s * 1000)) or nil
end

------------------------------------------------------------------------
-- the execution API's policy
------------------------------------------------------------------------

local exec = { name = "exec" }
M.exec = exec

-- The C client's options for one attempt: its traceparent (a header
-- line the C client adds), or, when the caller gave headers, the
-- traceparent among them (a copy: the caller's table is never changed;
-- a traceparent of the caller's wins).
function exec.options(_, o, traceparent)
  local copts = { auth = o.auth, timeout = seconds_to_ms(o.timeout, math.floor) }
  if not o.headers then
    copts.traceparent = traceparent
    return copts
  end
  copts.headers = { traceparent = traceparent }
  for k, v in pairs(o.headers) do copts.headers[k] = v end
  return copts
end

function exec.send(c, method, path, payload, copts)
  return c:_request(method, path, payload, copts)
end

function exec.open(c, method, path, payload, copts)
  return c:_open(method, path, payload, copts)
end

-- A value the C client refused before sending (kind validation: a
-- method, path or header of the caller's) is misuse: raised at the
-- caller's line as an argument of the public call (o.fname, default
-- "call": its method #1, path #2, body #3, options #4, as the C client
-- numbers them in info.arg), or by itself when it names none.
local function misuse(o, msg, info)
  local arg = info and info.arg
  if compat.math_type(arg) == "integer" then check.fail(o.fname or "call", arg, msg) end
  check.raise(msg)
end

--- An Error for a failure of the C client (nothing was answered).
function exec.fail(_, kind, msg, info, o)
  if kind == "validation" then misuse(o, msg, info) end
  return Error.new { kind = kind, message = msg }
end

function exec.is_error(status)
  return status < 200 or status >= 300
end

local function message_of(doc, fallback)
  if type(doc) ~= "table" then return fallback end
  local m = doc.message or doc.reason or doc.error
  return type(m) == "string" and m or fallback
end

--- An HTTP error of the execution API: message from the body's message,
-- reason or error, code its error, retry_after from the header (clamped
-- by the core) or the body (clamped here), a sudo challenge_id when it
-- can be sent back in a header.
function exec.http_error(resp)
  local doc = resp.body and resp.body ~= "" and M.decode_json(resp.body) or nil
  doc = type(doc) == "table" and doc or nil
  return Error.new {
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

--- A 2xx body: a JSON object or array (empty: {}), else a protocol error.
function exec.decode(resp)
  if not resp.body or resp.body == "" then return {} end
  local doc, jerr = M.decode_json(resp.body)
  if type(doc) ~= "table" then
    return nil, Error.new {
      kind = "protocol", status = resp.status, request_id = resp.request_id,
      message = "malformed JSON in response: " .. tostring(jerr or "not an object or array"),
    }
  end
  return doc
end

------------------------------------------------------------------------
-- the Control Plane's policy (spec §6, §7.1-§7.4)
------------------------------------------------------------------------

local cp = { name = "cp" }
M.cp = cp

--- §7.4: an object call needs the coroutine's subject or an owner; else
-- raises at the user's line naming fname and the path. Methods that make
-- several calls check first, under their own name.
function cp.check_object(m, fname, path, owner)
  if core.cp.is_object_call(path) and not owner and not context.get(context.subjects, m) then
    check.fail(fname, "locator", (path:match("^[^?]*")) ..
      " is an object call: bind an acting subject (m:with_subject) or pass an owner")
  end
end

-- The C client's options of one exchange of the running coroutine: its
-- acting subject, the traceparent made here (the hook shows the one that
-- was sent). o.timeout in seconds; none = the Manager's timeout (the
-- spec's "100 s" calls).
function cp.options(m, o, traceparent)
  cp.check_object(m, o.fname, o.path, o.owner)
  return {
    token = o.token, subject = context.get(context.subjects, m), owner = o.owner and true or nil,
    traceparent = traceparent, content_type = o.content_type, tool = o.tool,
    streaming = o.streaming, timeout = seconds_to_ms(o.timeout, math.ceil), capture = o.capture,
    from = o.from, to = o.to,
  }
end

function cp.send(m, method, path, payload, copts)
  return m:_request(method, path, payload, copts)
end

function cp.open(m, method, path, payload, copts)
  return m:_open(method, path, payload, copts)
end

--- An Error for a failure of the C client (nothing was answered): the
-- spec's 502 for a service that cannot be reached or answers nonsense,
-- 499 for a call cancelled or interrupted. A method, path or header value
-- the core refused is the caller's misuse and raises.
function cp.fail(m, kind, msg, info, o)
  if kind == "validation" then misuse(o or {}, msg, info) end
  if kind == "transport" or kind == "timeout" or kind == "protocol" then
    return Error.new { kind = kind, status = 502,
      message = "Sandbox Control Plane unavailable at " .. m:url() .. ": " .. msg }
  end
  if kind == "cancelled" or kind == "interrupted" then
    return Error.new { kind = kind, status = 499, message = msg }
  end
  return Error.new { kind = kind, message = msg }
end

function cp.is_error(status)
  return status >= 400
end

--- §7.2: an HTTP error is (status, body.error, else the raw text, else
-- "Control Plane returned HTTP <code>").
function cp.http_error(resp)
  local doc = M.decode_json(resp.body or "")
  doc = type(doc) == "table" and doc or nil
  local msg
  if doc and type(doc.error) == "string" then msg = doc.error
  elseif resp.body and not core.rules.blank(resp.body) then msg = resp.body
  else msg = "Control Plane returned HTTP " .. resp.status end
  return Error.new {
    kind = "http", status = resp.status, message = msg, request_id = resp.request_id,
    retry_after = (doc and shape.retry_after(doc.retry_after_seconds)) or resp.retry_after,
    hint = doc and type(doc.hint) == "string" and doc.hint or nil, body = doc,
  }
end

--- §7.2 for a 2xx body: JSON, else {raw = text}; empty = {}; o.text: the
-- body as it is.
function cp.decode(resp, o)
  local body = resp.body or ""
  if o.text then return body end
  if body == "" then return {} end
  local doc = M.decode_json(body)
  if type(doc) ~= "table" then return { raw = body } end
  return doc
end

cp.interrupted_status = 499

--- A protocol error of the client's own checks of a reply (§6: 502).
function cp.bad_reply(message, resp)
  return Error.new { kind = "protocol", status = 502, message = message,
    request_id = resp and resp.request_id }
end

------------------------------------------------------------------------
-- exchanges
------------------------------------------------------------------------

local function payload_of(o)
  if o.body ~= nil then return M.encode(o.body) end
  return o.raw
end

-- Sleeps before a retry (a loop timer inside a task), adding the time to
-- the meter; nil, Error when interrupted.
local function backoff(p, meter, wait, n, method, path)
  local t0 = core.loop.monotonic_us()
  local slept = core.loop.sleep(math.max(1, math.floor(wait * 1000)))
  if meter then meter.retry_wait_ms = meter.retry_wait_ms + (core.loop.monotonic_us() - t0) / 1000 end
  if slept then return true end
  return nil, Error.new { kind = "interrupted", status = p.interrupted_status, attempts = n,
    message = "interrupted while waiting to retry " .. method .. " " .. (path:match("^[^?]*")) }
end

-- One attempt: sent, metered, reported to the hooks, decoded. Returns
-- doc, resp or nil, Error, resp, and the failure's kind and info.
local function attempt(p, owner, state, method, path, payload, o, n, trace, meter)
  local tp = core.trace.new_traceparent(trace and trace.trace_id, trace and trace.flags)
  local resp, kind, msg, info = p.send(owner, method, path, payload, p.options(owner, o, tp))
  if kind == "validation" then p.fail(owner, kind, msg, info, o) end   -- misuse: nothing was sent
  local timing = resp and resp.timing or info and info.timing
  if meter then meter:add(timing) end
  observe.report(state, method, path, n, tp, resp, kind, info)
  local doc, err
  if not resp then err = p.fail(owner, kind, msg, info, o)
  elseif p.is_error(resp.status) then err = p.http_error(resp)
  else doc, err = p.decode(resp, o) end
  if err then
    err.timing = meter and meter:timing() or observe.single(timing)
    advice.add(p.name, err, owner:url(), method, path)
  end
  return doc, err, resp, kind, info
end

--- One call of policy p (M.exec or M.cp) by owner (a Client or a
-- Manager), with the owner's retries. o: body (a Lua table: JSON, encoded
-- once) or raw (exact bytes), query (form-encoded by the core), timeout
-- (seconds), meter (default: the running call's, observe.current),
-- idempotent (the caller says a repeat is safe), once (never repeated: a
-- single-use ticket's), and the policy's own fields (exec: auth, headers;
-- cp: fname, token, owner, content_type, tool, streaming, capture, text).
-- Returns the decoded document and the response, or nil, Error (with
-- timing: the meter's, else this exchange's, and attempts).
-- path with o.query form-encoded by the core (nil and "" values dropped);
-- a query it refuses is the caller's misuse.
local function with_query(path, o)
  if not o.query then return path end
  local q = check.value(o.fname or "call", "query", core.cp.form_encode(o.query))
  return q == "" and path or path .. "?" .. q
end

function M.call(p, owner, method, path, o)
  path = with_query(path, o)
  o.path = path
  local payload = payload_of(o)
  local state = owner:_state()
  local meter = o.meter or observe.current()
  local trace = M.trace()
  for n = 1, compat.maxinteger do
    local doc, err, resp, kind, info = attempt(p, owner, state, method, path, payload, o, n, trace, meter)
    if not err then return doc, resp end
    local wait = not o.once and retry.wait(state.retry, n, { method = method,
      idempotent = o.idempotent, status = resp and resp.status, retry_after = err.retry_after,
      kind = kind, sent = info and info.sent })
    if not wait then
      err.attempts = n
      return nil, err
    end
    local slept, ierr = backoff(p, meter, wait, n, method, path)
    if not slept then return nil, ierr end
  end
end

--- A stream of policy p: the Transfer of one exchange (o as for call,
-- with mode = "sse" or "raw"), and its Exchange (observe.exchange), which
-- the caller closes with its block and finishes with M.result. Never
-- retried. Returns transfer, exchange or nil, Error.
function M.open(p, owner, method, path, o)
  path = with_query(path, o)
  o.path = path
  local trace = M.trace()
  local copts = p.options(owner, o, core.trace.new_traceparent(trace and trace.trace_id, trace and trace.flags))
  copts.mode = o.mode
  local t, kind, msg, info = p.open(owner, method, path, payload_of(o), copts)
  local meter = observe.current()
  if not t then
    if kind == "validation" then p.fail(owner, kind, msg, info, o) end
    if meter then meter:add(info and info.timing) end
    observe.report(owner:_state(), method, path, 1, copts.traceparent, nil, kind, info)
    return nil, p.fail(owner, kind, msg, info, o)
  end
  return t, observe.exchange(owner:_state(), meter, method, path, 1, copts.traceparent, t)
end

--- The end of a stream: t:result(), reported (once) and metered by its
-- Exchange. Returns what t:result() does.
function M.result(t, ex)
  local resp, kind, msg, info = t:result()
  ex:finish(resp, kind, info)
  return resp, kind, msg, info
end

------------------------------------------------------------------------
-- the two services' calls
------------------------------------------------------------------------

--- An execution API request by Client c, body a Lua table or nil. opts:
-- raw (the exact body bytes instead: the env vault's text), timeout (s),
-- auth (false for unsigned routes), headers, meter, idempotent. Returns
-- the decoded document, the request id and the response, or nil, Error.
function M.request(c, method, path, body, opts)
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  o.body = body
  local doc, resp = M.call(exec, c, method, path, o)
  if not doc then return nil, resp end
  return doc, resp.request_id, resp
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

--- A Control Plane call by Manager m for its public method fname (named
-- by the object-call check). o: as for M.call. Returns doc, resp or nil,
-- Error.
function M.cp_call(m, fname, method, path, o)
  o = o or {}
  o.fname = fname
  return M.call(cp, m, method, path, o)
end

--- A Control Plane call whose caller wants the document and its
-- request id: doc, request_id or nil, Error.
function M.cp_request(m, fname, method, path, o)
  local doc, resp = M.cp_call(m, fname, method, path, o)
  if not doc then return nil, resp end
  return doc, resp.request_id
end

--- A Control Plane stream (o.mode "sse" or "raw"): transfer, exchange or
-- nil, Error.
function M.cp_open(m, fname, method, path, o)
  o.fname = fname
  return M.open(cp, m, method, path, o)
end

return M
