--- A client of the execution API: its own credentials, base URL,
-- timeouts and kept-alive connection, made by `unsandbox.client{...}` and
-- closed by `c:close()`, a `<close>` variable or the collector (the
-- secret is wiped).
--
-- Every method but url, close, info, on_request and detect_language is
-- also a module function of the same name, on the default client
-- (`unsandbox.execute_code(...)`; see the module `unsandbox`).
--
-- The contract of every method: its options table comes last, takes
-- `timeout` (seconds: the whole call) at least, and refuses an option it
-- does not know. Success is one value; a document from the service
-- carries the `request_id` of its exchange. An expected failure returns
-- `nil, err`, err an `Error` of kind:
--
-- - `http`: the service answered an error (err.status, err.code,
--   err.message; 404 for an unknown id, 428 a sudo challenge, 429 with
--   err.retry_after)
-- - `transport`: no answer (nothing listening, TLS, DNS, a reset)
-- - `timeout`: the call's deadline passed (err.job_id when it had a job)
-- - `protocol`: an answer the client cannot use (malformed JSON, a
--   missing field)
-- - `credentials`: no key pair could be found (nothing was sent)
-- - `validation`: a local input that cannot be used (an input file that
--   cannot be read)
-- - `interrupted`: Ctrl-C or a cancelled task (err.job_id, err.cancelled)
--
-- Misuse raises at the caller's line: an argument of the wrong type or
-- shape (`bad argument 'id' to 'get_session' (...)`), an unknown option,
-- a closed client ("attempt to use a closed Client").
-- @classmod Client
local core = require "unsandbox.core"
local transport = require "unsandbox.transport"
local calls = require "unsandbox.exec.calls"
local check = require "unsandbox.check"
local Error = require "unsandbox.errors"
local languages = require "unsandbox.exec.languages"

local Client = {}   -- the methods this file adds to unsandbox.Client

local one = calls.one
local request_limit = calls.request_limit

--- The client
-- @section client

--- The base URL this client talks to.
-- @function url
-- @treturn string the URL, without a trailing slash

--- Closes the client and wipes its secret; idempotent. Using the client
-- afterwards raises "attempt to use a closed Client".
-- @function close

--- What this client would use, without a request; never the secret.
-- @treturn[1] table `{url, public_key, source, timeout}`: source as
-- `unsandbox.credentials` gives it, timeout in seconds
-- @return[2] nil
-- @treturn[2] Error kind credentials: no key pair could be found
function Client:info()
  local t, kind, msg = self:_info()
  if not t then return nil, Error.new { kind = kind, message = msg } end
  t.timeout = t.timeout / 1000
  return t
end

--- About the service
-- @section service

--- The languages the service runs; cached for an hour in
-- ~/.unsandbox/languages.json (per URL).
-- @tparam[opt] table opts `refresh` (true: skip the cache), `timeout`
-- @treturn[1] table a list of language names
-- @return[2] nil
-- @treturn[2] Error
function Client:get_languages(opts)
  opts = check.options("get_languages", opts, { refresh = true, timeout = true })
  check.positive("get_languages", "timeout", opts.timeout)
  local list, err = languages.get(self, self:url(), opts)
  if not list then return nil, err end
  return list
end

--- Checks the key pair with the service (POST /keys/validate).
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table `{valid, public_key, tier, ..., request_id}`
-- @return[2] nil
-- @treturn[2] Error kind http 401 when the service refuses the pair
function Client:validate_keys(opts)
  opts = calls.plain("validate_keys", opts)
  return one(transport.request(self, "POST", "/keys/validate", nil, calls.request_opts(opts)))
end

--- Whether the service answers GET /health (unsigned: no keys needed).
-- As a module function, opts.url (and the other connection options)
-- asks another service.
-- @tparam[opt] table opts `timeout` (default 10 s, or the client's own
-- timeout when that is shorter)
-- @treturn[1] boolean true
-- @return[2] nil
-- @treturn[2] Error (transport: nothing answers at the URL; its hint
-- names a URL that is not the service's root)
function Client:health(opts)
  opts = calls.plain("health", opts)
  local limit = opts.timeout or math.min(10, request_limit(self))
  local doc, err = transport.request(self, "GET", "/health", nil, { auth = false, timeout = limit })
  if not doc then return nil, err end
  return true
end

local WARM_OPTIONS = { connections = true, timeout = true }

-- Steps a stream to its end: nil, or the kind and message of a failure.
local function drain(t)
  while true do
    local pieces, done, msg = t:step(100)
    if not pieces then return done, msg end
    if done then return nil end
  end
end

-- Ends the health checks opened by warm_up; the first failure, or nil.
local function finish_health(opened)
  local failed
  for _, o in ipairs(opened) do
    local t, ex = o[1], o[2]
    local kind, msg = drain(t)
    local resp, rkind, rmsg
    if not kind then resp, rkind, rmsg = transport.result(t, ex) end
    t:close()
    ex:__close()          -- reports a stream that ended early, once
    if not failed then
      if kind then failed = Error.new { kind = kind, message = msg }
      elseif not resp then failed = Error.new { kind = rkind, message = rmsg }
      elseif resp.status ~= 200 then failed = transport.exec.http_error(resp) end
    end
  end
  return failed
end

--- Does now what the client's first calls would otherwise do inside
-- them: maps the network and crypto libraries, resolves the credentials
-- and keys the signature, loads the task scheduler, and opens kept-alive
-- connections at once (GET /health, unsigned). A host with a frame loop
-- calls `unsandbox.warm_up()` before its first frame, so that no
-- `step(0)` pays for any of it; a fan-out of n calls from a fresh client
-- warms n connections first.
-- @tparam[opt] table opts `connections` (default 1; 0 opens none; up to
-- max_concurrency are kept), `timeout` (seconds: each health check's,
-- default 10)
-- @treturn[1] boolean true
-- @return[2] nil
-- @treturn[2] Error (credentials, transport, timeout, http)
-- @raise an unknown option, connections out of range
function Client:warm_up(opts)
  opts = check.options("warm_up", opts, WARM_OPTIONS)
  check.positive("warm_up", "timeout", opts.timeout)
  local n = check.int_range("warm_up", "connections", opts.connections, 0,
    core.rules.MAX_CONCURRENCY) or 1
  require "unsandbox.tasks"
  local ok, kind, msg = self:_prepare()
  if not ok then return nil, Error.new { kind = kind, message = msg } end
  local opened = {}
  for i = 1, n do
    local t, ex = transport.open(transport.exec, self, "GET", "/health",
      { auth = false, mode = "raw", timeout = opts.timeout or math.min(10, request_limit(self)) })
    if not t then
      finish_health(opened)
      return nil, ex
    end
    opened[i] = { t, ex }
  end
  local failed = finish_health(opened)
  if failed then return nil, failed end
  return true
end

local CALL_OPTIONS = { timeout = true, auth = true, headers = true, idempotent = true }

--- Low-level: a signed request to any route of the execution API.
-- @tparam string method the HTTP method (any case)
-- @tparam string path the route, with its query ("/jobs?limit=5")
-- @tparam[opt] table body sent as JSON (nil: no body)
-- @tparam[opt] table opts `timeout` (s), `auth` (false: unsigned),
-- `headers` ({name = value}), `idempotent` (true: a repeat is safe, so the
-- client's retry policy may repeat a POST that got no answer)
-- @treturn[1] table the decoded JSON document (an object gets its request_id)
-- @return[2] nil
-- @treturn[2] Error
-- @raise an empty method or path, an unknown option
function Client:call(method, path, body, opts)
  check.nonempty("call", "method", method)
  check.nonempty("call", "path", path)
  opts = check.options("call", opts, CALL_OPTIONS)
  check.positive("call", "timeout", opts.timeout)
  check.type("call", "headers", opts.headers, "table", true)
  return one(transport.request(self, method:upper(), path, body, opts))
end

--- `unsandbox.detect_language` as a method too, for symmetry; no network.
-- @function detect_language
-- @tparam string filename
-- @tparam[opt] string content
-- @treturn string|nil the language name, or nil when unknown
function Client.detect_language(_, filename, content) return languages.detect(filename, content) end

--- Sets this client's request hook, called after every exchange of this
-- client as `unsandbox.on_request` describes (the global hook runs too).
-- @tparam function|nil fn the hook; nil removes it
-- @treturn function|nil the previous one
-- @raise fn neither a function nor nil
function Client:on_request(fn)
  check.type("on_request", "fn", fn, "function", true)
  local st = self:_state()
  local prev = st.on_request
  st.on_request = fn
  return prev
end

return Client
