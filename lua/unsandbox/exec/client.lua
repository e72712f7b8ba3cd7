--- The Client's own methods (info, on_request, detect_language) and the
-- routes about the service itself (languages, the key pair, health) and
-- the low-level call, as methods of every unsandbox.Client. All but info,
-- on_request and detect_language are declared in public.lua, so they are
-- also unsandbox.<name>(...) on the default client. Internal module; its
-- methods are documented as the Client's.
-- @submodule unsandbox
local core = require "unsandbox.core"
local transport = require "unsandbox.transport"
local calls = require "unsandbox.exec.calls"
local check = require "unsandbox.check"
local Error = require "unsandbox.errors"
local languages = require "unsandbox.exec.languages"

local Client = {}   -- the methods this file adds to unsandbox.Client

local one = calls.one
local request_limit = calls.request_limit

--- c:info() -> {url, public_key, source, timeout (s)}, or nil, Error when
-- no credentials can be found. Never the secret.
function Client:info()
  local t, kind, msg = self:_info()
  if not t then return nil, Error.new { kind = kind, message = msg } end
  t.timeout = t.timeout / 1000
  return t
end

--- The languages the service runs; cached for an hour in
-- ~/.unsandbox/languages.json. opts.refresh = true skips the cache.
function Client:get_languages(opts)
  opts = check.options("get_languages", opts, { refresh = true, timeout = true })
  check.positive("get_languages", "timeout", opts.timeout)
  local list, err = languages.get(self, self:url(), opts)
  if not list then return nil, err end
  return list
end

--- Checks the key pair with the service: {valid, public_key, tier, ...,
-- request_id}. opts: timeout.
function Client:validate_keys(opts)
  opts = calls.plain("validate_keys", opts)
  return one(transport.request(self, "POST", "/keys/validate", nil, calls.request_opts(opts)))
end

--- true when the service answers GET /health (unsigned), within
-- opts.timeout, else 10 s or the client's own timeout when that is
-- shorter. Module function: opts.url (and the other connection options)
-- asks another service.
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

--- c:warm_up{connections = 1, timeout} -> true, or nil, Error. Does now
-- what the client's first calls would otherwise do inside them: maps the
-- network and crypto libraries, resolves the credentials and keys the
-- signature, loads the task scheduler, and opens `connections` kept-alive
-- connections at once (GET /health, unsigned; 0 opens none; up to
-- max_concurrency are kept). A host with a frame loop calls
-- unsandbox.warm_up() before its first frame, so that no step(0) pays
-- for any of it; a fan-out of n calls from a fresh client warms n
-- connections first. timeout (s): each health check's, default 10.
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

--- Low-level: a signed request to any route, body a Lua table or nil.
-- opts: timeout (s), auth (false: unsigned), headers, idempotent (true: a
-- repeat is safe, so the client's retry policy may repeat a POST that got
-- no answer). Returns the decoded JSON document (an object gets its
-- request_id), or nil, Error.
function Client:call(method, path, body, opts)
  check.nonempty("call", "method", method)
  check.nonempty("call", "path", path)
  opts = check.options("call", opts, CALL_OPTIONS)
  check.positive("call", "timeout", opts.timeout)
  check.type("call", "headers", opts.headers, "table", true)
  return one(transport.request(self, method:upper(), path, body, opts))
end

--- detect_language as a method too, for symmetry; no network.
function Client.detect_language(_, filename, content) return languages.detect(filename, content) end

--- c:on_request(fn): this client's request hook (nil removes it); returns
-- the previous one. See unsandbox.on_request.
function Client:on_request(fn)
  check.type("on_request", "fn", fn, "function", true)
  local st = self:_state()
  local prev = st.on_request
  st.on_request = fn
  return prev
end

return Client
