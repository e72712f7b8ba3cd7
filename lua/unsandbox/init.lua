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
local transport = require "unsandbox.transport"
local calls = require "unsandbox.calls"
local check = require "unsandbox.check"
local Error = require "unsandbox.errors"
local execute = require "unsandbox.execute"
local languages = require "unsandbox.languages"
local results = require "unsandbox.results"
local observe = require "unsandbox.observe"
local retry = require "unsandbox.retry"
local shape = require "unsandbox.shape"
local wrap = require "unsandbox.wrap"

local unsandbox = {
  VERSION = core.VERSION,
  Error = Error,
  core = core,
}

local Client = core.Client   -- the methods table of the C userdata

-- The task functions are lua/unsandbox/tasks.lua's, loaded on first use
-- (public.lua's LAZY_FIELDS); their reference is here.

--- spawn(fn, ...) -> Task: fn(...) runs as a task from the next step on;
-- inside it every call yields instead of blocking (a fn that cannot be
-- called raises here). A Task has t:wait(), t:result(), t:cancel() (its
-- transfers closed, its remote job cancelled; its error is kind
-- interrupted, with job_id and cancelled) and t:status().
-- @function spawn

--- step(timeout_ms) -> the number of tasks not yet ended: resumes what can
-- go on and waits at most timeout_ms (0: never blocks), the call a game
-- loop makes once a frame; nil, Error(interrupted) after Ctrl-C (every
-- task cancelled). Raises inside a task.
-- @function step

--- run([timeout]) -> true once every task has ended, or nil, Error
-- (interrupted, or timeout after `timeout` seconds: the tasks go on).
-- @function run

--- pollfds() -> {{fd =, events = "r"|"w"|"rw"}, ...}, timeout_ms: what an
-- external loop waits on before calling step(0) (timeout_ms 0: a task can
-- go on now; -1: nothing scheduled).
-- @function pollfds

--- completed(list) -> an iterator of i, task in the order the tasks of
-- list end (yielding inside a task, driving the loop elsewhere).
-- @function completed

--- current_task() -> the Task whose code is running, or nil.
-- @function current_task

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

local one = calls.one
local wait_result, wait_started = calls.wait_result, calls.wait_started

------------------------------------------------------------------------
-- Execution and jobs
------------------------------------------------------------------------

-- The client's own timeout in seconds: the longest one request may take.
local function request_limit(client)
  return (TIMEOUTS[client] or 120000) / 1000
end

--- Runs code and returns its result once finished (polling when the
-- service answers with a pending job). opts: env ({NAME = value}),
-- input_files (paths or {filename, content}), network_mode ("zerotrust",
-- "semitrusted"), ttl (1-900 s), vcpu (1-8), return_artifacts, timeout
-- (s, the whole call: default the ttl plus a minute), on_poll(job,
-- attempt); module functions also take url, public_key, secret_key,
-- account, ca_file. The result: stdout, stderr, exit_code, status
-- ("completed", "failed", "timeout", "cancelled"), job_id, language,
-- execution_time_ms, stdout_truncated, stderr_truncated, error,
-- created_at, completed_at, request_id, timing, and artifacts ({filename,
-- content}) when asked. The code runs synchronously (POST /execute) only
-- when the call's deadline and the client's timeout both leave room for
-- the longest synchronous answer (the ttl plus 30 s); otherwise it is
-- submitted as a job (POST /execute/async) and polled, so the deadline
-- never fires while a job of the call's own is unknown. Giving up
-- (timeout, Ctrl-C) cancels the job; the Error names job_id and cancelled.
function Client:execute_code(language, code, opts)
  local body, err
  opts, body, err = execute_args("execute_code", language, code, opts)
  if not body then return nil, err end
  local ttl = body.ttl or 60
  local budget = opts.timeout or default_wait(ttl)
  local deadline = core.monotonic_ms() + budget * 1000
  local left = function() return math.max(0.001, (deadline - core.monotonic_ms()) / 1000) end
  local sync = math.min(budget, request_limit(self)) >= execute.sync_limit(ttl)
  local doc, rid = transport.request(self, "POST", sync and "/execute" or "/execute/async", body,
    { timeout = math.min(budget, request_limit(self)) })
  if not doc then return nil, rid end
  if sync and not results.is_pending(doc) then
    return results.normalise(doc, rid, opts.return_artifacts)
  end
  local id, bad = shape.id(doc, "job_id", rid)
  if not id then return nil, bad end
  return wait_started(self, id, left(), opts.on_poll, opts.return_artifacts, nil,
    { call_timeout = budget })
end

--- Submits code as a job and returns its id. opts: those of
-- execute_code (timeout: of this request).
function Client:execute_async(language, code, opts)
  local body, err
  opts, body, err = execute_args("execute_async", language, code, opts)
  if not body then return nil, err end
  local doc, rid = transport.request(self, "POST", "/execute/async", body, { timeout = opts.timeout })
  if not doc then return nil, rid end
  local id, bad = shape.id(doc, "job_id", rid)
  if not id then return nil, bad end
  return id
end

--- The job's current state; when it is finished, its result fields too.
-- opts: timeout.
function Client:get_job(job_id, opts)
  check.id("get_job", "job_id", job_id)
  opts = calls.plain("get_job", opts)
  local doc, rid = transport.request(self, "GET", "/jobs/" .. job_id, nil, calls.request_opts(opts))
  if not doc then return nil, rid end
  return results.normalise(doc, rid, doc.artifacts ~= nil)   -- checks the shape
end

local WAIT_OPTIONS = { timeout = true, on_poll = true, return_artifacts = true }

--- Polls a job until it is finished: once at once, then on the schedule
-- (300, 450, 700, 900, 650, 1600, 2000 ms, then every 2 s). opts: timeout
-- (s, default 16 minutes), on_poll(job, attempt), return_artifacts. An id
-- the service does not know is its 404 whatever the timeout; a job still
-- running at the deadline is a timeout naming it (err.job_id), left
-- running: it is the caller's.
function Client:wait_for_job(job_id, opts)
  check.id("wait_for_job", "job_id", job_id)
  opts = check.options("wait_for_job", opts, WAIT_OPTIONS)
  check.positive("wait_for_job", "timeout", opts.timeout)
  check.type("wait_for_job", "on_poll", opts.on_poll, "function", true)
  local r, err = wait_result(self, job_id, opts.timeout or default_wait(900), opts.on_poll,
    opts.return_artifacts, nil, { at_once = true, unknown_is_404 = true })
  if r then return r end
  if err.job_id == nil and err.status ~= 404 then err.job_id = job_id end
  return nil, err
end

-- execute_many, execute_each, map and map_each: lua/unsandbox/batch.lua,
-- which documents them, loaded on first use (public.lua).

--- Cancels a pending or running job: {job_id, status = "cancelled",
-- request_id}. A finished job cannot be cancelled (an http error; 409
-- job_finished from unsandboxd). opts: timeout.
function Client:cancel_job(job_id, opts)
  check.id("cancel_job", "job_id", job_id)
  opts = calls.plain("cancel_job", opts)
  return one(transport.request(self, "DELETE", "/jobs/" .. job_id, nil, calls.request_opts(opts)))
end

--- The jobs still pending or running (the service lists active jobs
-- only; a finished one is read with get_job). opts: timeout; module
-- function: url and the other connection options too.
function Client:list_jobs(opts)
  return calls.get_list(self, "/jobs", "jobs", calls.plain("list_jobs", opts), true)
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
  return one(transport.request(self, method:upper(), path, body, opts))
end

-- Sessions, services and snapshots are lua/unsandbox/resources.lua, the
-- rest of the routes (power, administration, env vault, images)
-- lua/unsandbox/execapi.lua: both loaded on first use (public.lua).

--- detect_language as a method too, for symmetry; no network.
function Client.detect_language(_, filename, content) return unsandbox.detect_language(filename, content) end

--- c:on_request(fn): this client's request hook (nil removes it); returns
-- the previous one. See unsandbox.on_request.
function Client:on_request(fn)
  check.type("on_request", "fn", fn, "function", true)
  local st = self:_state()
  local prev = st.on_request
  st.on_request = fn
  return prev
end

-- Every call of a client runs in the frame of wrap.lua: one trace, one
-- meter (its timing), interrupts as Errors. Plumbing and calls without a
-- request are not wrapped; execute_many and map return tables indexed
-- like their input, whose items carry their own timing.
local UNWRAPPED = { request = true, _open = true, _state = true, _info = true, info = true,
  url = true, close = true, on_request = true, detect_language = true }
local WRAP = { trace = true, unstamped = { execute_many = true, map = true } }
wrap.methods(Client, UNWRAPPED, WRAP)

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

-- The longest first line read from a file for its shebang: the kernel
-- reads no more of one either (BINPRM_BUF_SIZE on Linux is 256).
local SHEBANG_MAX = 256

-- The first line of the regular file at path (at most SHEBANG_MAX bytes
-- are read), or nil when there is none: no such file, a directory, a FIFO
-- (never waited on), no permission.
local function first_line(path)
  local head = core.file_head(path, SHEBANG_MAX)
  return head and head:match("^[^\n]*") or nil
end

--- detect_language(filename [, content]) -> language name, or nil when
-- unknown. One rule, no network: the extension of filename first (spec 5.6's
-- map, any case); else the shebang of content's first line; with no
-- content, the first line of the file at filename when there is one (at most
-- 256 bytes are read). A shebang names its interpreter directly
-- (#!/usr/bin/python3.11 -u) or through env, whose options and
-- assignments are passed over (#!/usr/bin/env -S python3 -u,
-- #!/usr/bin/env LC_ALL=C perl); version suffixes are cut (python3.11,
-- lua5.4). A first line that is no shebang gives nil.
function unsandbox.detect_language(filename, content)
  check.type("detect_language", "filename", filename, "string", true)
  check.type("detect_language", "content", content, "string", true)
  local known = filename ~= nil and filename ~= ""
  local lang = known and core.detect_language(filename)
  if lang then return lang end
  if content == nil and known then content = first_line(filename) end
  if content == nil then return nil end
  return core.detect_shebang(content:match("^[^\n]*")) or nil
end

--- on_request(fn): the hook called once after every exchange of every
-- client and Manager (REST calls and retries, polls, MCP calls, streams
-- when they end, ticket transfers, WebSocket handshakes), with {method,
-- path (no query), status, request_id, traceparent, ms, bytes_out,
-- bytes_in, attempt, error_kind}: never a key, a header value or a body.
-- An error in it is reported once on stderr and never breaks the call.
-- nil removes it; returns the previous one.
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
-- A lazy group's methods are wrapped like the others once loaded.
require("unsandbox.public").install(unsandbox, Client, CONNECTION, function(module)
  require(module).install(Client)
  wrap.methods(Client, UNWRAPPED, WRAP)
end)

return unsandbox
