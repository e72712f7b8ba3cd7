--- The one way the facade talks HTTP: encode the body once, hand the exact
-- bytes to the C client (which signs and sends them), decode the answer,
-- and turn every failure into an unsandbox.Error. Internal module.
local cjson = require "cjson.safe"
local check = require "unsandbox.check"
local Error = require "unsandbox.errors"
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

--- Sends one request. body: a Lua table (encoded here, once) or nil.
-- opts: timeout (seconds), auth (false for unsigned routes), headers.
-- Returns the decoded document and the request id, or nil, Error.
function M.call(client, method, path, body, opts)
  local payload = body ~= nil and M.encode(body) or nil
  local copts
  if opts then
    copts = { auth = opts.auth, headers = opts.headers }
    if opts.timeout then copts.timeout = math.max(1, math.floor(opts.timeout * 1000)) end
  end
  -- a method, path or header the core refuses is the caller's misuse
  local resp, kind, msg = check.protect("call", 1, client.request, client, method, path, payload, copts)
  if not resp then
    return nil, Error.new { kind = kind, message = msg }
  end
  local doc, err = M.decode(resp)
  if not doc then return nil, err end
  return doc, resp.request_id
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
