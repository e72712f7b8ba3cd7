--- unsandbox: run untrusted code in remote sandboxes from Lua 5.4.
--
-- Two services: the execution API (a Client, below) and the sandbox
-- platform's Control Plane (unsandbox.manager{...} and unsandbox.Sandbox,
-- see lua/unsandbox/cp.lua).
--
-- Every function is available two ways: as a method of a Client
-- (`local c = unsandbox.client{...}; c:execute_code(...)`), which keeps its
-- own credentials, base URL, timeouts and a reused connection; and as a
-- module function (`unsandbox.execute_code(...)`), which uses a default
-- client configured from the environment. Expected failures return
-- `nil, err` (an unsandbox.Error); misuse raises.
local core = require "unsandbox.core"
local api = require "unsandbox.api"
local check = require "unsandbox.check"
local Error = require "unsandbox.errors"
local execute = require "unsandbox.execute"
local languages = require "unsandbox.languages"
local poll = require "unsandbox.poll"
local results = require "unsandbox.results"
local tasks = require "unsandbox.tasks"
local batch = require "unsandbox.batch"
local context = require "unsandbox.context"
local observe = require "unsandbox.observe"
local retry = require "unsandbox.retry"
local shape = require "unsandbox.shape"

local unsandbox = {
  VERSION = core.VERSION,
  Error = Error,
  core = core,
}

local Client = core.Client   -- the methods table of the C userdata

-- Tasks (lua/unsandbox/tasks.lua): spawn, step, run, pollfds, completed.
unsandbox.spawn = tasks.spawn
unsandbox.step = tasks.step
unsandbox.run = tasks.run
unsandbox.pollfds = tasks.pollfds
unsandbox.completed = tasks.completed
unsandbox.Task = tasks.Task
unsandbox.current_task = tasks.current

-- The Control Plane client (lua/unsandbox/cp.lua), loaded on first use of
-- one of its names: a script that only runs code does not pay for its
-- dozen modules when it requires unsandbox (half the require's time).
local CP_NAMES = { manager = true, Manager = true, Sandbox = true, acting_subject = true,
                   trace = true, current_trace = true, new_trace_id = true }
setmetatable(unsandbox, { __index = function(t, k)
  if not CP_NAMES[k] then return nil end
  for name, v in pairs(require "unsandbox.cp") do rawset(t, name, v) end
  return rawget(t, k)
end })
-- Each client's timeout in ms as it was made (weak keys): health() never
-- waits longer than the client would.
local TIMEOUTS = setmetatable({}, { __mode = "k" })

local CONNECTION = { public_key = true, secret_key = true, account = true, url = true,
                     timeout = true, connect_timeout = true, ca_file = true, max_response = true,
                     max_concurrency = true, retry = true, on_request = true }

--- unsandbox.client{public_key=, secret_key=, account=, url=, timeout=,
-- connect_timeout=, ca_file=, max_response=, max_concurrency=, retry=,
-- on_request=} -> Client. Timeouts in seconds. max_concurrency: requests
-- in flight at once (default 16; more wait in a queue); retry: see
-- retry.lua (off by default); on_request(ev): this client's hook.
function unsandbox.client(opts)
  opts = check.type("client", "opts", opts, "table", true) or {}
  execute.check_options("client", opts, CONNECTION)
  local c = {}
  for k, v in pairs(opts) do c[k] = v end
  check.positive("client", "timeout", opts.timeout)
  check.positive("client", "connect_timeout", opts.connect_timeout)
  check.type("client", "on_request", opts.on_request, "function", true)
  check.int_range("client", "max_concurrency", opts.max_concurrency, 1, 1024)
  local policy = retry.policy("client", opts.retry)
  if opts.timeout then c.timeout = math.floor(opts.timeout * 1000) end
  if opts.connect_timeout then c.connect_timeout = math.floor(opts.connect_timeout * 1000) end
  c.retry, c.on_request = nil, nil
  local client = core.client(c)
  TIMEOUTS[client] = c.timeout
  local state = client:_state()
  state.retry, state.on_request = policy, opts.on_request
  return client
end

local default_wait = execute.default_wait
local execute_args = execute.args

-- A result or an error of a call, with the call's timing.
local function timed(meter, r, err)
  if type(r) == "table" then r.timing = meter:timing()
  elseif Error.is(err) then err.timing = meter:timing() end
  return r, err
end

local function wait_result(self, job_id, timeout, on_poll, want_artifacts, meter)
  local job, rid = poll.wait(self, job_id, timeout, on_poll, meter)
  if not job then return nil, rid end
  return results.normalise(job, rid, want_artifacts)
end

------------------------------------------------------------------------
-- Execution and jobs
------------------------------------------------------------------------

--- Runs code and returns its result once finished (polling when the
-- service answers with a pending job).
function Client:execute_code(language, code, opts)
  local body, err
  opts, body, err = execute_args("execute_code", language, code, opts)
  if not body then return nil, err end
  local started = core.monotonic_ms()
  local meter = observe.meter()
  local ttl = body.ttl or 60
  local req_timeout = opts.timeout or (ttl + 30 > 120 and ttl + 30 or nil)
  local doc, rid = api.call(self, "POST", "/execute", body, { timeout = req_timeout, meter = meter })
  if not doc then return timed(meter, nil, rid) end
  if results.is_pending(doc) then
    local id, bad = results.pending_id(doc, rid)
    if not id then return timed(meter, nil, bad) end
    local budget = opts.timeout and opts.timeout - (core.monotonic_ms() - started) / 1000
                   or default_wait(ttl)
    return timed(meter, wait_result(self, id, math.max(budget, 0.001), opts.on_poll,
      opts.return_artifacts, meter))
  end
  return timed(meter, results.normalise(doc, rid, opts.return_artifacts))
end

--- Submits code as a job and returns its id (and the request id).
function Client:execute_async(language, code, opts)
  local body, err
  opts, body, err = execute_args("execute_async", language, code, opts)
  if not body then return nil, err end
  local doc, rid = api.call(self, "POST", "/execute/async", body, { timeout = opts.timeout })
  if not doc then return nil, rid end
  local id, bad = shape.id(doc, "job_id", rid)
  if not id then return nil, bad end
  return id, rid
end

--- The job's current state; when it is finished, its result fields too.
function Client:get_job(job_id)
  check.id("get_job", "job_id", job_id)
  local meter = observe.meter()
  local doc, rid = api.call(self, "GET", "/jobs/" .. job_id, nil, { meter = meter })
  if not doc then return timed(meter, nil, rid) end
  return timed(meter, results.normalise(doc, rid, doc.artifacts ~= nil))   -- checks the shape
end

local WAIT_OPTIONS = { timeout = true, on_poll = true, return_artifacts = true }

--- Polls a job until it is finished (schedule 300, 450, 700, 900, 650,
-- 1600, 2000 ms, then every 2 s). opts: timeout (s), on_poll(job, attempt).
function Client:wait_for_job(job_id, opts)
  check.id("wait_for_job", "job_id", job_id)
  opts = check.type("wait_for_job", "opts", opts, "table", true) or {}
  execute.check_options("wait_for_job", opts, WAIT_OPTIONS)
  check.positive("wait_for_job", "timeout", opts.timeout)
  check.type("wait_for_job", "on_poll", opts.on_poll, "function", true)
  local meter = observe.meter()
  return timed(meter, wait_result(self, job_id, opts.timeout or default_wait(900), opts.on_poll,
    opts.return_artifacts, meter))
end

-- execute_many, execute_each, map and map_each (lua/unsandbox/batch.lua)
batch.install(Client)

function Client:cancel_job(job_id)
  check.id("cancel_job", "job_id", job_id)
  return api.call(self, "DELETE", "/jobs/" .. job_id)
end

function Client:list_jobs()
  local doc, rid = api.call(self, "GET", "/jobs")
  if not doc then return nil, rid end
  local list, err = shape.list(doc, "jobs", rid, true)
  if not list then return nil, err end
  return list, rid
end

------------------------------------------------------------------------
-- Languages, keys, health
------------------------------------------------------------------------

--- The languages the service runs; cached for an hour in
-- ~/.unsandbox/languages.json. opts.refresh = true skips the cache.
function Client:get_languages(opts)
  opts = check.type("get_languages", "opts", opts, "table", true) or {}
  execute.check_options("get_languages", opts, { refresh = true, timeout = true })
  check.positive("get_languages", "timeout", opts.timeout)
  return languages.get(self, self:url(), opts)
end

function Client:validate_keys()
  return api.call(self, "POST", "/keys/validate")
end

--- true when the service answers GET /health (unsigned), within 10 s or
-- the client's own timeout when that is shorter.
function Client:health()
  local limit = math.min(10, (TIMEOUTS[self] or 120000) / 1000)
  local doc, err = api.call(self, "GET", "/health", nil, { auth = false, timeout = limit })
  if not doc then return nil, err end
  return true, doc
end

--- Low-level: a signed request to any route, body a Lua table or nil.
-- Returns the decoded JSON document and the request id, or nil, Error.
function Client:call(method, path, body, opts)
  check.nonempty("call", "method", method)
  check.nonempty("call", "path", path)
  check.type("call", "opts", opts, "table", true)
  return api.call(self, method:upper(), path, body, opts)
end

------------------------------------------------------------------------
-- Sessions, services, snapshots
------------------------------------------------------------------------

local function list_of(key)
  return function(self)
    local doc, rid = api.call(self, "GET", "/" .. key)
    if not doc then return nil, rid end
    local list, err = shape.list(doc, key, rid)
    if not list then return nil, err end
    return list, rid
  end
end

local function by_id(method, prefix, fname, suffix)
  return function(self, id)
    check.id(fname, "id", id)
    return api.call(self, method, prefix .. id .. (suffix or ""), method == "POST" and {} or nil)
  end
end

local SUDO_OPTIONS = { otp = true, challenge_id = true, on_sudo = true }

-- Deletions and unlocks may meet a sudo challenge (428 {challenge_id}).
-- opts.on_sudo(err) is then asked for the one-time password (nil or ""
-- cancels) and the request is sent again, freshly signed, with it; or the
-- caller answers a challenge it already has with opts.challenge_id and
-- opts.otp. The library itself never reads a terminal.
local function destructive(method, prefix, fname, suffix)
  return function(self, id, opts)
    check.id(fname, "id", id)
    opts = check.type(fname, "opts", opts, "table", true) or {}
    execute.check_options(fname, opts, SUDO_OPTIONS)
    check.type(fname, "on_sudo", opts.on_sudo, "function", true)
    if opts.challenge_id ~= nil or opts.otp ~= nil then
      check.nonempty(fname, "challenge_id", opts.challenge_id)
      check.nonempty(fname, "otp", opts.otp)
    end
    local path = prefix .. id .. (suffix or "")
    local body = method == "POST" and {} or nil
    local function send(challenge, otp)
      return api.call(self, method, path, body,
        challenge and { headers = { ["X-Sudo-Challenge"] = challenge, ["X-Sudo-OTP"] = otp } })
    end
    local doc, err = send(opts.challenge_id, opts.otp)
    if doc or not (opts.on_sudo and err.status == 428 and err.challenge_id) then return doc, err end
    local otp = opts.on_sudo(err)
    if otp == nil or otp == "" then return nil, err end
    return send(err.challenge_id, tostring(otp))
  end
end

-- A created resource's document with `id` filled from its own key; both
-- are ids the caller will put in paths, so they are checked like one.
local function with_id(doc, rid, key)
  if not doc then return nil, rid end
  local id, err = shape.id(doc, doc.id ~= nil and "id" or key, rid)
  if not id then return nil, err end
  if doc[key] ~= nil and not shape.valid_id(doc[key]) then return shape.id(doc, key, rid) end
  doc.id = id
  return doc, rid
end

local SESSION_OPTIONS = { network_mode = true, ttl = true, shell = true, vcpu = true, input_files = true }

--- Creates a session: a persistent sandbox that runs commands.
function Client:create_session(opts)
  opts = check.type("create_session", "opts", opts, "table", true) or {}
  execute.check_options("create_session", opts, SESSION_OPTIONS)
  local body, err = execute.sandbox_fields("create_session", opts)
  if not body then return nil, err end
  body.ttl = check.int_range("create_session", "ttl", opts.ttl, 1, 86400)
  body.shell = check.type("create_session", "shell", opts.shell, "string", true)
  local doc, rid = api.call(self, "POST", "/sessions", body)
  return with_id(doc, rid, "session_id")
end

Client.list_sessions = list_of("sessions")
Client.get_session = by_id("GET", "/sessions/", "get_session")
Client.delete_session = destructive("DELETE", "/sessions/", "delete_session")

--- Runs a shell command in a session; returns a result like execute_code.
function Client:session_execute(id, command, opts)
  check.id("session_execute", "id", id)
  check.type("session_execute", "command", command, "string")
  opts = check.type("session_execute", "opts", opts, "table", true) or {}
  check.positive("session_execute", "timeout", opts.timeout)
  local body = { command = command, timeout = opts.timeout and math.floor(opts.timeout * 1000) or nil }
  local meter = observe.meter()
  local doc, rid = api.call(self, "POST", "/sessions/" .. id .. "/shell", body,
    { timeout = opts.timeout and opts.timeout + 30, meter = meter })
  if not doc then return timed(meter, nil, rid) end
  return timed(meter, results.normalise(doc, rid))
end

local SERVICE_OPTIONS = { name = true, bootstrap = true, bootstrap_content = true, ports = true,
  custom_domains = true, network_mode = true, vcpu = true, input_files = true }

--- Creates a service: a persistent sandbox whose bootstrap command keeps
-- running.
function Client:create_service(opts)
  check.type("create_service", "opts", opts, "table")
  execute.check_options("create_service", opts, SERVICE_OPTIONS)
  check.nonempty("create_service", "name", opts.name)
  if opts.bootstrap == nil and opts.bootstrap_content == nil then
    check.fail("create_service", "bootstrap", "a bootstrap command or bootstrap_content is required")
  end
  local body, err = execute.sandbox_fields("create_service", opts)
  if not body then return nil, err end
  body.name = opts.name
  body.bootstrap = check.type("create_service", "bootstrap", opts.bootstrap, "string", true)
  body.bootstrap_content = check.type("create_service", "bootstrap_content", opts.bootstrap_content, "string", true)
  body.ports = check.type("create_service", "ports", opts.ports, "table", true)
  body.custom_domains = check.type("create_service", "custom_domains", opts.custom_domains, "table", true)
  local doc, rid = api.call(self, "POST", "/services", body)
  return with_id(doc, rid, "service_id")
end

Client.list_services = list_of("services")
Client.get_service = by_id("GET", "/services/", "get_service")
Client.delete_service = destructive("DELETE", "/services/", "delete_service")

--- The service's bootstrap output; opts.all asks for all of it.
function Client:service_logs(id, opts)
  check.id("service_logs", "id", id)
  opts = check.type("service_logs", "opts", opts, "table", true) or {}
  execute.check_options("service_logs", opts, { all = true })
  local all = check.type("service_logs", "all", opts.all, "boolean", true)
  local doc, rid = api.call(self, "GET", "/services/" .. id .. "/logs" .. (all and "?all=true" or ""))
  if not doc then return nil, rid end
  local log = doc.log or doc.logs or ""
  if type(log) ~= "string" then return shape.fail(rid, "'log' is not a string") end
  return log, rid
end

--- Runs a command in a running service: submitted as a job and waited for.
function Client:service_execute(id, command, opts)
  check.id("service_execute", "id", id)
  check.type("service_execute", "command", command, "string")
  opts = check.type("service_execute", "opts", opts, "table", true) or {}
  check.positive("service_execute", "timeout", opts.timeout)
  local timeout = opts.timeout or 30
  local meter = observe.meter()
  local doc, rid = api.call(self, "POST", "/services/" .. id .. "/execute",
    { command = command, timeout = math.floor(timeout * 1000) }, { meter = meter })
  if not doc then return timed(meter, nil, rid) end
  -- the service answers 202 {job_id}, usually without a status
  if doc.job_id == nil or results.TERMINAL[doc.status] then return timed(meter, results.normalise(doc, rid)) end
  local job_id, bad = results.pending_id(doc, rid)
  if not job_id then return timed(meter, nil, bad) end
  return timed(meter, wait_result(self, job_id, timeout + 30, opts.on_poll, nil, meter))
end

local SNAPSHOT_OPTIONS = { name = true, hot = true }

local function snapshot_of(kind)
  local fname = kind .. "_snapshot"
  return function(self, id, opts)
    check.id(fname, "id", id)
    opts = check.type(fname, "opts", opts, "table", true) or {}
    execute.check_options(fname, opts, SNAPSHOT_OPTIONS)
    local body = { name = check.type(fname, "name", opts.name, "string", true),
                   hot = check.type(fname, "hot", opts.hot, "boolean", true) or false }
    local doc, rid = api.call(self, "POST", "/" .. kind .. "s/" .. id .. "/snapshot", body)
    return with_id(doc, rid, "snapshot_id")
  end
end

Client.session_snapshot = snapshot_of("session")
Client.service_snapshot = snapshot_of("service")
Client.list_snapshots = list_of("snapshots")
Client.get_snapshot = by_id("GET", "/snapshots/", "get_snapshot")
Client.delete_snapshot = destructive("DELETE", "/snapshots/", "delete_snapshot")
Client.restore_snapshot = by_id("POST", "/snapshots/", "restore_snapshot", "/restore")
Client.lock_snapshot = by_id("POST", "/snapshots/", "lock_snapshot", "/lock")
Client.unlock_snapshot = destructive("POST", "/snapshots/", "unlock_snapshot", "/unlock")

-- the rest of the execution API (power, administration, env vault, images)
require("unsandbox.execapi").install(Client, { by_id = by_id, destructive = destructive, with_id = with_id })

--- detect_language as a method too, for symmetry; no network.
function Client.detect_language(_, filename) return unsandbox.detect_language(filename) end

--- c:on_request(fn): this client's request hook (nil removes it); returns
-- the previous one. See unsandbox.on_request.
function Client:on_request(fn)
  check.type("on_request", "fn", fn, "function", true)
  local st = self:_state()
  local prev = st.on_request
  st.on_request = fn
  return prev
end

-- Every call of a client is one trace: the coroutine's bound one
-- (unsandbox.trace), else a new one for the call, so a job's submission
-- and all its polls (and retries) share a trace id, each with its own span.
local UNTRACED = { request = true, _open = true, _state = true, info = true, url = true,
                   close = true, on_request = true, detect_language = true }
for name, method in pairs(Client) do
  if type(method) == "function" and not UNTRACED[name] then
    Client[name] = function(self, ...)
      if api.trace() then return method(self, ...) end
      local b <close> = context.bind(context.traces, context.TRACE_OWNER,
        { trace_id = core.new_traceparent():sub(4, 35), flags = "01" })
      return method(self, ...)
    end
  end
end


------------------------------------------------------------------------
-- Module functions
------------------------------------------------------------------------

--- Signs a request exactly as the client does (the same C function).
function unsandbox.sign(secret, timestamp, method, path, body)
  return core.sign(secret, timestamp, method, path, body)
end

--- Which public key would be used, and which tier supplied it (never the
-- secret). opts: public_key, secret_key, account.
function unsandbox.credentials(opts)
  opts = check.type("credentials", "opts", opts, "table", true) or {}
  local creds, kind, msg = core.credentials(opts)
  if not creds then return nil, Error.new { kind = kind, message = msg } end
  return creds
end

--- Language name for a file name's extension, nil when unknown. Pure.
function unsandbox.detect_language(filename)
  if filename == nil then return nil end
  check.type("detect_language", "filename", filename, "string")
  if filename == "" then return nil end
  return core.detect_language(filename)
end

--- on_request(fn): the hook called after every HTTP exchange of every
-- client and Manager, with {method, path (no query), status, request_id,
-- traceparent, ms, bytes_out, bytes_in, attempt, error_kind}: never a key,
-- a header value or a body. An error in it is reported once on stderr and
-- never breaks the call. nil removes it; returns the previous one.
function unsandbox.on_request(fn)
  check.type("on_request", "fn", fn, "function", true)
  return observe.set_global(fn)
end

--- debug(on): one line per exchange on stderr, in the hook's shape (also
-- UNSANDBOX_DEBUG=1 in the environment). Returns the previous setting.
function unsandbox.debug(on)
  return observe.set_debug(on)
end

local default
--- The client the module functions use, configured from the environment
-- the first time it is needed.
function unsandbox.default_client()
  if not default then default = unsandbox.client() end
  return default
end

-- For module functions: options that name a connection make a one-off
-- client for that call; everything else goes to the default client.
local OPTS_POSITION = {
  execute_code = 3, execute_async = 3, wait_for_job = 2, get_languages = 1, execute_many = 2,
  create_session = 1, create_service = 1, session_execute = 3, service_execute = 3, map = 4,
}
-- (execute_each and map_each return iterators that outlive the call: they
-- always use the default client, never a one-off one)

local function connection_opts(opts)
  if type(opts) ~= "table" then return nil end
  local conn
  for k in pairs(CONNECTION) do
    if k ~= "timeout" and opts[k] ~= nil then
      conn = conn or {}
      conn[k] = opts[k]
    end
  end
  return conn
end

local function strip(opts)
  local rest = {}
  for k, v in pairs(opts) do
    if not CONNECTION[k] or k == "timeout" then rest[k] = v end
  end
  return rest
end

for name, method in pairs(Client) do
  if type(method) == "function" and name ~= "close" and name ~= "request" and name:sub(1, 1) ~= "_"
     and unsandbox[name] == nil then
    local pos = OPTS_POSITION[name]
    unsandbox[name] = function(...)
      local conn = pos and connection_opts((select(pos, ...)))
      if not conn then return method(unsandbox.default_client(), ...) end
      local args = table.pack(...)
      args[pos] = strip(args[pos])
      local c <close> = unsandbox.client(conn)
      return method(c, table.unpack(args, 1, args.n))
    end
  end
end

return unsandbox
