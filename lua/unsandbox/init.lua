--- unsandbox: run untrusted code in remote sandboxes from Lua 5.4, 5.3,
-- 5.1 and LuaJIT 2.1 (LÖVE, Neovim, OpenResty and other hosts).
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
local compat = require "unsandbox.compat"
local core = require "unsandbox.core"
local check = require "unsandbox.check"
local Error = require "unsandbox.errors"
local methods = require "unsandbox.methods"
local observe = require "unsandbox.observe"
local public = require "unsandbox.public"
local retry = require "unsandbox.retry"

local unsandbox = {
  VERSION = core.VERSION,
  Error = Error,
  core = core,
  with = compat.with,
  pcall = compat.pcall,
}

--- with(resource, fn, ...) -> what fn(resource, ...) returns: resource (a
-- Client, Manager, Sandbox, Shell, Terminal, binding: anything with
-- close) is closed however fn ends, and what fn raised is raised again.
-- On Lua 5.4 `local x <close> = resource` does the same; this is the way
-- on 5.1, LuaJIT and 5.3, which have no to-be-closed variables.
-- @function with

--- pcall(f, ...): pcall that a task's calls can wait across. PUC Lua 5.1
-- cannot yield across its own pcall (LuaJIT and 5.2+ can, and there this
-- is pcall itself): inside a task on 5.1, protect library calls with it.
-- @function pcall

local Client = core.exec.Client   -- the methods table of the C userdata

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

--- save_artifacts(result_or_list, dest[, {flatten =}]) -> the paths
-- written, or nil, Error: a run's artifacts (return_artifacts = true)
-- saved whole under the local directory dest at their relative paths
-- (flatten: "/" becomes "_"), or given to dest(filename, content)
-- (lua/unsandbox/exec/artifacts.lua, loaded on first use).
-- @function save_artifacts

-- The options of a client: the core's (core.exec.CLIENT_OPTIONS: public_key,
-- secret_key, account, url, timeout, connect_timeout, ca_file,
-- max_response, max_concurrency), but home, cwd and env (stand-ins of the
-- environment for the core's own tests), and the facade's retry and
-- on_request. A module function takes them to make a one-off client.
local CONNECTION = { retry = true, on_request = true }
for k in pairs(core.exec.CLIENT_OPTIONS) do
  if k ~= "home" and k ~= "cwd" and k ~= "env" then CONNECTION[k] = true end
end

--- unsandbox.client{public_key=, secret_key=, account=, url=, timeout=,
-- connect_timeout=, ca_file=, max_response=, max_concurrency=, retry=,
-- on_request=} -> Client. Timeouts in seconds. max_concurrency: requests
-- in flight at once (default 16; more wait in a queue); retry: see
-- retry.lua (off by default); on_request(ev): this client's hook.
function unsandbox.client(opts)
  opts = check.options("client", opts, CONNECTION)
  local c = {}
  for k, v in pairs(opts) do c[k] = v end
  for _, k in ipairs { "public_key", "secret_key", "url", "ca_file" } do
    check.type("client", k, opts[k], "string", true)
  end
  check.int_range("client", "account", opts.account, 0, compat.maxinteger)
  check.int_range("client", "max_response", opts.max_response, 1, compat.maxinteger)
  check.positive("client", "timeout", opts.timeout)
  check.positive("client", "connect_timeout", opts.connect_timeout)
  check.type("client", "on_request", opts.on_request, "function", true)
  check.int_range("client", "max_concurrency", opts.max_concurrency, 1,
    core.rules.MAX_CONCURRENCY)
  local policy = retry.policy("client", opts.retry)
  -- seconds for the user, whole milliseconds for the core, never rounded
  -- down to 0 (which the core would refuse in its own unit)
  if opts.timeout then c.timeout = math.ceil(opts.timeout * 1000) end
  if opts.connect_timeout then c.connect_timeout = math.ceil(opts.connect_timeout * 1000) end
  c.retry, c.on_request = nil, nil
  -- the core's refusals (a bad URL; UNSANDBOX_URL's) point at the caller's line
  local client = check.value("client", "opts", core.exec.client(c))
  local state = client:_state()
  -- health() never waits longer than the client would
  state.timeout_ms = c.timeout
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

-- Every call of a client runs in the frame of wrap.lua: one trace, one
-- meter (its timing), interrupts as Errors. Plumbing and calls without a
-- request are not framed; execute_many and map return tables indexed
-- like their input, whose items carry their own timing. The methods come
-- in groups (public.lua): those loaded here, and those loaded on first use.
local FRAME = { trace = true, unstamped = { execute_many = true, map = true },
  skip = { request = true, url = true, close = true, info = true, on_request = true,
           detect_language = true } }

-- Module functions --

--- Functions of the module alone (the Client's methods above are module
-- functions too, using the default client).
-- @section module

-- sign's arguments: name, the types it takes, whether it may be nil
local SIGN_ARGS = { { "secret", "string" }, { "timestamp", "string or integer" },
  { "method", "string" }, { "path", "string" }, { "body", "string", true } }

--- Signs a request exactly as the client does (the same C function).
function unsandbox.sign(secret, timestamp, method, path, body)
  local args = { secret, timestamp, method, path, body }
  for i, a in ipairs(SIGN_ARGS) do
    local v, t = args[i], type(args[i])
    local fine = t == a[2] or (a[3] and v == nil) or (i == 2 and (t == "string" or compat.math_type(v) == "integer"))
    if not fine then check.fail("sign", i, a[1] .. ": " .. a[2] .. " expected, got " .. t) end
  end
  return core.exec.sign(secret, timestamp, method, path, body)
end

-- home, cwd and env stand in for $HOME, the working directory and the
-- environment (tests and embedders that must not read the real ones).
local CREDENTIAL_OPTIONS = { public_key = true, secret_key = true, account = true,
                             home = true, cwd = true, env = true }

--- Which public key would be used, and which tier supplied it (never the
-- secret). opts: public_key, secret_key, account, home, cwd, env.
function unsandbox.credentials(opts)
  opts = check.options("credentials", opts, CREDENTIAL_OPTIONS)
  local creds, kind, msg = core.exec.credentials(opts)
  if not creds then return nil, Error.new { kind = kind, message = msg } end
  return creds
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
  return require("unsandbox.exec.languages").detect(filename, content)
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

-- The Client's methods, group by group, and the module functions, made
-- from the one declared table of public functions (public.lua).
public.install(unsandbox, Client, CONNECTION, function(group, from)
  methods.add(Client, group, FRAME, from)
end)

return unsandbox
