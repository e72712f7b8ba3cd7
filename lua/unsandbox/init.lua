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
-- `nil, err` (an unsandbox.Error); misuse raises. Success is one value.
-- @module unsandbox
local core = require "unsandbox.core"
local abandon = require "unsandbox.abandon"
local api = require "unsandbox.api"
local check = require "unsandbox.check"
local Error = require "unsandbox.errors"
local execute = require "unsandbox.execute"
local languages = require "unsandbox.languages"
local poll = require "unsandbox.poll"
local results = require "unsandbox.results"
local tasks = require "unsandbox.tasks"
local batch = require "unsandbox.batch"
local observe = require "unsandbox.observe"
local retry = require "unsandbox.retry"
local shape = require "unsandbox.shape"

local unsandbox = {
  VERSION = core.VERSION,
  Error = Error,
  core = core,
}

local Client = core.Client   -- the methods table of the C userdata

--- spawn(fn, ...) -> Task: fn(...) runs as a task from the next step on;
-- inside it every call yields instead of blocking. A Task has
-- t:wait(), t:result(), t:cancel() (its transfers closed, its remote job
-- cancelled) and t:status().
-- @function spawn
unsandbox.spawn = tasks.spawn
--- step(timeout_ms) -> the number of tasks not yet ended: resumes what can
-- go on and waits at most timeout_ms (0: never blocks), the call a game
-- loop makes once a frame; nil, Error(interrupted) after Ctrl-C (every
-- task cancelled). Raises inside a task.
-- @function step
unsandbox.step = tasks.step
--- run([timeout]) -> true once every task has ended, or nil, Error
-- (interrupted, or timeout after `timeout` seconds: the tasks go on).
-- @function run
unsandbox.run = tasks.run
--- pollfds() -> {{fd =, events = "r"|"w"|"rw"}, ...}, timeout_ms: what an
-- external loop waits on before calling step(0) (timeout_ms 0: a task can
-- go on now; -1: nothing scheduled).
-- @function pollfds
unsandbox.pollfds = tasks.pollfds
--- completed(list) -> an iterator of i, task in the order the tasks of
-- list end (yielding inside a task, driving the loop elsewhere).
-- @function completed
unsandbox.completed = tasks.completed
unsandbox.Task = tasks.Task
--- current_task() -> the Task whose code is running, or nil.
-- @function current_task
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
  opts = check.options("client", opts, CONNECTION)
  local c = {}
  for k, v in pairs(opts) do c[k] = v end
  check.positive("client", "timeout", opts.timeout)
  check.positive("client", "connect_timeout", opts.connect_timeout)
  check.type("client", "on_request", opts.on_request, "function", true)
  check.int_range("client", "max_concurrency", opts.max_concurrency, 1, 1024)
  local policy = retry.policy("client", opts.retry)
  -- seconds for the user, whole milliseconds for the core, never rounded
  -- down to 0 (which the core would refuse in its own unit)
  if opts.timeout then c.timeout = math.ceil(opts.timeout * 1000) end
  if opts.connect_timeout then c.connect_timeout = math.ceil(opts.connect_timeout * 1000) end
  c.retry, c.on_request = nil, nil
  -- the core's refusals (a bad URL, UNSANDBOX_URL included) point at the
  -- caller's line, not at this one
  local ok, client = pcall(core.client, c)
  if not ok then
    check.raise(tostring(client):gsub("bad argument #1 to '[^']*'", "bad argument 'opts' to 'client'"))
  end
  TIMEOUTS[client] = c.timeout
  local state = client:_state()
  state.retry, state.on_request = policy, opts.on_request
  return client
end

--- A client of the execution API: its own credentials, base URL,
-- timeouts and kept-alive connection. Made by `unsandbox.client{}`; closed
-- by `c:close()`, a `<close>` variable or the collector (the secret is
-- wiped). Its methods are also module functions of the same name.
-- @type Client

--- The base URL this client talks to.
-- @function Client:url

--- Closes the client and wipes its secret; idempotent. Using it afterwards
-- raises "attempt to use a closed Client".
-- @function Client:close

--- c:info() -> {url, public_key, source, timeout (s)}, or nil, Error when
-- no credentials can be found. Never the secret.
function Client:info()
  local t, kind, msg = self:_info()
  if not t then return nil, Error.new { kind = kind, message = msg } end
  t.timeout = t.timeout / 1000
  return t
end

local default_wait = execute.default_wait
local execute_args = execute.args

-- Success is one value: the document with its request id (api.one).
local one = api.one

-- A result or an error of a call, with the call's timing (issue 16).
-- Success stays one value (issue 13).
local function timed(meter, r, err)
  if type(r) == "table" then
    r.timing = meter:timing()
    return r
  end
  if Error.is(err) then err.timing = meter:timing() end
  return nil, err
end

local function wait_result(self, job_id, timeout, on_poll, want_artifacts, meter)
  local job, rid = poll.wait(self, job_id, timeout, on_poll, meter)
  if not job then return nil, rid end
  return results.normalise(job, rid, want_artifacts)
end

local function never() return false end

-- Waits for a job this call started itself: given up (Ctrl-C, the call's
-- deadline), the job is cancelled and the Error names it (abandon.lua).
local function wait_started(self, job_id, timeout, on_poll, want_artifacts, meter)
  return abandon.guard(self, { job_id }, never, function()
    local r, err = wait_result(self, job_id, timeout, on_poll, want_artifacts, meter)
    if not r then return nil, abandon.note(self, job_id, err) end
    return r
  end)
end

------------------------------------------------------------------------
-- Execution and jobs
------------------------------------------------------------------------

--- Runs code and returns its result once finished (polling when the
-- service answers with a pending job). opts: env ({NAME = value}),
-- input_files (paths or {filename, content}), network_mode ("zerotrust",
-- "semitrusted"), ttl (1-900 s), vcpu (1-8), return_artifacts, timeout
-- (s, the whole call), on_poll(job, attempt); module functions also take
-- url, public_key, secret_key, account, ca_file. The result: stdout,
-- stderr, exit_code, status ("completed", "failed", "timeout",
-- "cancelled"), job_id, language, execution_time_ms, stdout_truncated,
-- stderr_truncated, error, created_at, completed_at, request_id, and
-- artifacts ({filename, content}) when asked. Giving up (timeout, Ctrl-C)
-- cancels the job; the Error names job_id and cancelled.
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
    return timed(meter, wait_started(self, id, math.max(budget, 0.001), opts.on_poll,
      opts.return_artifacts, meter))
  end
  return timed(meter, results.normalise(doc, rid, opts.return_artifacts))
end

--- Submits code as a job and returns its id.
function Client:execute_async(language, code, opts)
  local body, err
  opts, body, err = execute_args("execute_async", language, code, opts)
  if not body then return nil, err end
  local doc, rid = api.call(self, "POST", "/execute/async", body, { timeout = opts.timeout })
  if not doc then return nil, rid end
  local id, bad = shape.id(doc, "job_id", rid)
  if not id then return nil, bad end
  return id
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
  opts = check.options("wait_for_job", opts, WAIT_OPTIONS)
  check.positive("wait_for_job", "timeout", opts.timeout)
  check.type("wait_for_job", "on_poll", opts.on_poll, "function", true)
  -- the caller's own job: named in the error, never cancelled here
  local meter = observe.meter()
  local r, err = timed(meter, wait_result(self, job_id, opts.timeout or default_wait(900),
    opts.on_poll, opts.return_artifacts, meter))
  if r then return r end
  if err.job_id == nil then err.job_id = job_id end
  return nil, err
end

-- execute_many, execute_each, map and map_each (lua/unsandbox/batch.lua,
-- which documents them)
batch.install(Client)

--- Cancels a pending or running job: {job_id, status = "cancelled",
-- request_id}. A finished job cannot be cancelled (an http error; 409
-- job_finished from unsandboxd).
function Client:cancel_job(job_id)
  check.id("cancel_job", "job_id", job_id)
  return one(api.call(self, "DELETE", "/jobs/" .. job_id))
end

--- The jobs still pending or running (the service lists active jobs
-- only; a finished one is read with get_job).
function Client:list_jobs()
  local doc, rid = api.call(self, "GET", "/jobs")
  if not doc then return nil, rid end
  local list, err = shape.list(doc, "jobs", rid, true)
  if not list then return nil, err end
  return list
end

------------------------------------------------------------------------
-- Languages, keys, health
------------------------------------------------------------------------

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
-- request_id}.
function Client:validate_keys()
  return one(api.call(self, "POST", "/keys/validate"))
end

--- true when the service answers GET /health (unsigned), within 10 s or
-- the client's own timeout when that is shorter.
function Client:health()
  local limit = math.min(10, (TIMEOUTS[self] or 120000) / 1000)
  local doc, err = api.call(self, "GET", "/health", nil, { auth = false, timeout = limit })
  if not doc then return nil, err end
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
  return one(api.call(self, method:upper(), path, body, opts))
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
    return list
  end
end

local function by_id(method, prefix, fname, suffix)
  return function(self, id)
    check.id(fname, "id", id)
    return one(api.call(self, method, prefix .. id .. (suffix or ""), method == "POST" and {} or nil))
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
    opts = check.options(fname, opts, SUDO_OPTIONS)
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
    if doc or not (opts.on_sudo and err.status == 428 and err.challenge_id) then return one(doc, err) end
    local otp = opts.on_sudo(err)
    if otp == nil or otp == "" then return nil, err end
    return one(send(err.challenge_id, tostring(otp)))
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
  return one(doc, rid)
end

local SESSION_OPTIONS = { network_mode = true, ttl = true, shell = true, vcpu = true, input_files = true }

--- Creates a session: a persistent sandbox that runs commands.
function Client:create_session(opts)
  opts = check.options("create_session", opts, SESSION_OPTIONS)
  local body, err = execute.sandbox_fields("create_session", opts)
  if not body then return nil, err end
  body.ttl = check.int_range("create_session", "ttl", opts.ttl, 1, 86400)
  body.shell = check.type("create_session", "shell", opts.shell, "string", true)
  local doc, rid = api.call(self, "POST", "/sessions", body)
  return with_id(doc, rid, "session_id")
end

--- The sessions of this key: a list of {id, status, shell, network_mode, ...}.
-- @function Client:list_sessions
Client.list_sessions = list_of("sessions")
--- One session's document (with request_id).
-- @function Client:get_session
Client.get_session = by_id("GET", "/sessions/", "get_session")
--- Deletes a session. opts: on_sudo, or challenge_id and otp (see above).
-- @function Client:delete_session
Client.delete_session = destructive("DELETE", "/sessions/", "delete_session")

--- Runs a shell command in a session; returns a result like execute_code.
function Client:session_execute(id, command, opts)
  check.id("session_execute", "id", id)
  check.type("session_execute", "command", command, "string")
  opts = check.options("session_execute", opts, { timeout = true })
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
  check.options("create_service", opts, SERVICE_OPTIONS, true)
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

--- The services of this key: a list of {id, name, status, ...}.
-- @function Client:list_services
Client.list_services = list_of("services")
--- One service's document (with request_id).
-- @function Client:get_service
Client.get_service = by_id("GET", "/services/", "get_service")
--- Deletes a service. opts: on_sudo, or challenge_id and otp.
-- @function Client:delete_service
Client.delete_service = destructive("DELETE", "/services/", "delete_service")

--- The service's bootstrap output; opts.all asks for all of it.
function Client:service_logs(id, opts)
  check.id("service_logs", "id", id)
  opts = check.options("service_logs", opts, { all = true })
  local all = check.type("service_logs", "all", opts.all, "boolean", true)
  local doc, rid = api.call(self, "GET", "/services/" .. id .. "/logs" .. (all and "?all=true" or ""))
  if not doc then return nil, rid end
  local log = doc.log or doc.logs or ""
  if type(log) ~= "string" then return shape.fail(rid, "'log' is not a string") end
  return log
end

--- Runs a command in a running service: submitted as a job and waited for.
function Client:service_execute(id, command, opts)
  check.id("service_execute", "id", id)
  check.type("service_execute", "command", command, "string")
  opts = check.options("service_execute", opts, { timeout = true, on_poll = true })
  check.positive("service_execute", "timeout", opts.timeout)
  check.type("service_execute", "on_poll", opts.on_poll, "function", true)
  local timeout = opts.timeout or 30
  local meter = observe.meter()
  local doc, rid = api.call(self, "POST", "/services/" .. id .. "/execute",
    { command = command, timeout = math.floor(timeout * 1000) }, { meter = meter })
  if not doc then return timed(meter, nil, rid) end
  -- the service answers 202 {job_id}, usually without a status
  if doc.job_id == nil or results.TERMINAL[doc.status] then return timed(meter, results.normalise(doc, rid)) end
  local job_id, bad = results.pending_id(doc, rid)
  if not job_id then return timed(meter, nil, bad) end
  return timed(meter, wait_started(self, job_id, timeout + 30, opts.on_poll, nil, meter))
end

local SNAPSHOT_OPTIONS = { name = true, hot = true }

local function snapshot_of(kind)
  local fname = kind .. "_snapshot"
  return function(self, id, opts)
    check.id(fname, "id", id)
    opts = check.options(fname, opts, SNAPSHOT_OPTIONS)
    local body = { name = check.type(fname, "name", opts.name, "string", true),
                   hot = check.type(fname, "hot", opts.hot, "boolean", true) or false }
    local doc, rid = api.call(self, "POST", "/" .. kind .. "s/" .. id .. "/snapshot", body)
    return with_id(doc, rid, "snapshot_id")
  end
end

--- Snapshots a session. opts: name, hot (boolean). Returns the snapshot's document with its id.
-- @function Client:session_snapshot
Client.session_snapshot = snapshot_of("session")
--- Snapshots a service. opts: name, hot (boolean). Returns the snapshot's document with its id.
-- @function Client:service_snapshot
Client.service_snapshot = snapshot_of("service")
--- The snapshots of this key: a list of {id, name, source_type, source_id, size_bytes, ...}.
-- @function Client:list_snapshots
Client.list_snapshots = list_of("snapshots")
--- One snapshot's document (with request_id).
-- @function Client:get_snapshot
Client.get_snapshot = by_id("GET", "/snapshots/", "get_snapshot")
--- Deletes a snapshot (a locked one must be unlocked first). opts: on_sudo, or challenge_id and otp.
-- @function Client:delete_snapshot
Client.delete_snapshot = destructive("DELETE", "/snapshots/", "delete_snapshot")
--- Restores a snapshot into the session or service it was taken of.
-- @function Client:restore_snapshot
Client.restore_snapshot = by_id("POST", "/snapshots/", "restore_snapshot", "/restore")
--- Locks a snapshot against deletion.
-- @function Client:lock_snapshot
Client.lock_snapshot = by_id("POST", "/snapshots/", "lock_snapshot", "/lock")
--- Unlocks a snapshot. opts: on_sudo, or challenge_id and otp.
-- @function Client:unlock_snapshot
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

-- Every call of a client is one trace (api.trace_calls); plumbing and
-- calls without a request are not wrapped.
api.trace_calls(Client, { request = true, _open = true, _state = true, _info = true, info = true,
  url = true, close = true, on_request = true, detect_language = true })

------------------------------------------------------------------------
-- Module functions
------------------------------------------------------------------------

--- Functions of the module alone (the Client's methods above are module
-- functions too, using the default client).
-- @section module

--- Signs a request exactly as the client does (the same C function).
function unsandbox.sign(secret, timestamp, method, path, body)
  return check.protect("sign", 0, core.sign, secret, timestamp, method, path, body)
end

-- home, cwd and env stand in for $HOME, the working directory and the
-- environment (tests and embedders that must not read the real ones).
local CREDENTIAL_OPTIONS = { public_key = true, secret_key = true, account = true,
                             home = true, cwd = true, env = true }

--- Which public key would be used, and which tier supplied it (never the
-- secret). opts: public_key, secret_key, account, home, cwd, env.
function unsandbox.credentials(opts)
  opts = check.options("credentials", opts, CREDENTIAL_OPTIONS)
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

-- The module functions, made from the one declared table of public
-- functions (lua/unsandbox/public.lua).
require("unsandbox.public").install(unsandbox, Client, CONNECTION)

return unsandbox
