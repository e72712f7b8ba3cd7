--- unsandbox: run untrusted code in remote sandboxes from Lua 5.4, 5.3,
-- 5.1 and LuaJIT 2.1 (LÖVE, Neovim, OpenResty and other hosts).
--
-- Two services: the execution API (a `Client`: runs, jobs, sessions,
-- services, snapshots, images) and the sandbox platform's Control Plane
-- (a `Manager` made by `unsandbox.manager{...}`, and named `Sandbox`es on
-- it).
--
-- Every method of a Client is also a module function of the same name
-- (`unsandbox.execute_code(...)`), which uses the default client
-- configured from the environment (`default_client`); given connection
-- options (url, public_key, secret_key, account, ca_file,
-- connect_timeout, max_response, max_concurrency, retry, on_request) in
-- its options table, it makes a one-off client for that call. The
-- exceptions are `execute_each` and `map_each`, whose iterators outlive
-- the call: they always use the default client. A Client of its own
-- (`unsandbox.client{...}`) keeps its credentials, base URL, timeouts and
-- a reused connection.
--
-- The contract of every function, in the classes too: an expected
-- failure (the network, the service, the sandbox) returns `nil, err`, err
-- an `Error` whose `kind` says what went wrong; success is one value (a
-- Manager's calls add the request id as a second). Misuse (an argument of
-- the wrong type or shape, an unknown option, a closed object) raises an
-- error message at the caller's line: `bad argument 'ttl' to
-- 'execute_code' (integer 1..900 expected, got 0)`. Inside a task
-- (`spawn`) every call yields instead of blocking.
--
-- The module's fields: `VERSION` (the library's version string),
-- `Error` (the error class), `Manager` and `Sandbox` (the Control Plane's
-- classes), `Task` (the class of tasks), `core` (the C binding: internal).
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

local Client = core.exec.Client   -- the methods table of the C userdata

--- Clients, keys and hooks
-- @section clients

-- The options of a client: the core's (core.exec.CLIENT_OPTIONS: public_key,
-- secret_key, account, url, timeout, connect_timeout, ca_file,
-- max_response, max_concurrency), but home, cwd and env (stand-ins of the
-- environment for the core's own tests), and the facade's retry and
-- on_request. A module function takes them to make a one-off client.
local CONNECTION = { retry = true, on_request = true }
for k in pairs(core.exec.CLIENT_OPTIONS) do
  if k ~= "home" and k ~= "cwd" and k ~= "env" then CONNECTION[k] = true end
end

--- Makes a client of the execution API. Every option may be left out:
-- the credentials then come from the environment and files, in the
-- order `credentials` reports (UNSANDBOX_PUBLIC_KEY and
-- UNSANDBOX_SECRET_KEY, then ~/.unsandbox/accounts.csv, then
-- ./accounts.csv, at row UNSANDBOX_ACCOUNT or 0), the URL from
-- UNSANDBOX_URL. Nothing is sent
-- until a call needs it; a missing key fails then, as kind credentials.
-- @tparam[opt] table opts
-- @tparam[opt] string opts.public_key the key pair's public key
-- @tparam[opt] string opts.secret_key and its secret
-- @tparam[opt=0] integer opts.account the row of accounts.csv to use
-- @tparam[opt] string opts.url the service's base URL (http or https, no
-- path; default UNSANDBOX_URL, else https://api.unsandbox.com)
-- @tparam[opt=120] number opts.timeout seconds one request may take
-- @tparam[opt=10] number opts.connect_timeout seconds to connect
-- @tparam[opt] string opts.ca_file a PEM bundle to verify TLS with
-- @tparam[opt] integer opts.max_response bytes of one response at most
-- (default 64 MiB)
-- @tparam[opt=16] integer opts.max_concurrency requests in flight at
-- once (more wait in a queue)
-- @tparam[opt] table opts.retry opt-in retries: `{max =, on = {429, 503,
-- "transport", ...}, max_wait =, base =}` (docs/guide/observability.md)
-- @tparam[opt] function opts.on_request this client's hook, called as
-- `on_request` describes
-- @treturn Client the client
-- @raise an unknown option, a value of the wrong type or range, a
-- malformed URL (also UNSANDBOX_URL's)
-- @usage local c <close> = unsandbox.client{timeout = 30}
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

-- Every call of a client runs in the frame of wrap.lua: one trace, one
-- meter (its timing), interrupts as Errors. Plumbing and calls without a
-- request are not framed; execute_many and map return tables indexed
-- like their input, whose items carry their own timing. The methods come
-- in groups (public.lua): those loaded here, and those loaded on first use.
local FRAME = { trace = true, unstamped = { execute_many = true, map = true },
  skip = { request = true, url = true, close = true, info = true, on_request = true,
           detect_language = true } }

-- sign's arguments: name, the types it takes, whether it may be nil
local SIGN_ARGS = { { "secret", "string" }, { "timestamp", "string or integer" },
  { "method", "string" }, { "path", "string" }, { "body", "string", true } }

--- Signs a request exactly as a client does (the same C function): the
-- hex HMAC-SHA256 of `timestamp:METHOD:path:body` under the secret key,
-- for the Authorization scheme of the execution API.
-- @tparam string secret the secret key
-- @tparam string|integer timestamp Unix seconds
-- @tparam string method the HTTP method
-- @tparam string path the request path, with its query
-- @tparam[opt] string body the request body (nil: empty)
-- @treturn string the signature (64 hex)
-- @raise an argument of the wrong type
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

--- Which public key a client would use, and where it came from (never
-- the secret): what `unsandbox.client` would find, without a request.
-- @tparam[opt] table opts `public_key`, `secret_key`, `account` as for
-- `client`; `home`, `cwd`, `env` (a table of variables) stand in for
-- $HOME, the working directory and the environment
-- @treturn[1] table `{public_key =, source =}`, source the tier that
-- supplied it: "arguments", "environment" or "FILE:ROW" (an accounts.csv)
-- @return[2] nil
-- @treturn[2] Error kind credentials: no key pair anywhere (its hint says
-- how to run with none: `unlua --local`)
-- @raise an unknown option
function unsandbox.credentials(opts)
  opts = check.options("credentials", opts, CREDENTIAL_OPTIONS)
  local creds, kind, msg = core.exec.credentials(opts)
  if not creds then return nil, Error.new { kind = kind, message = msg } end
  return creds
end

--- The language of a program, by one rule and no network: the
-- extension of filename first (any case); else the shebang of content's
-- first line; with no content, the first line of the file at filename
-- when there is one (at most 256 bytes are read). A shebang names its
-- interpreter directly (#!/usr/bin/python3.11 -u) or through env, whose
-- options and assignments are passed over (#!/usr/bin/env -S python3 -u,
-- #!/usr/bin/env LC_ALL=C perl); version suffixes are cut (python3.11,
-- lua5.4). A first line that is no shebang gives nil.
-- @tparam string filename the program's file name (or path)
-- @tparam[opt] string content the program's text
-- @treturn string|nil the language name ("python", "lua", ...), or nil
-- when unknown
function unsandbox.detect_language(filename, content)
  return require("unsandbox.exec.languages").detect(filename, content)
end

--- Sets the hook called once after every exchange of every client and
-- Manager (REST calls and retries, polls, MCP calls, streams when they
-- end, ticket transfers, WebSocket handshakes). It gets one table:
-- `{method, path (no query), status, request_id, traceparent, ms,
-- bytes_out, bytes_in, attempt, error_kind}`, never a key, a header value
-- or a body. An error in it is reported once on stderr and never breaks
-- the call. A Client's or Manager's own hook (their `on_request`) runs
-- too.
-- @tparam function|nil fn the hook; nil removes it
-- @treturn function|nil the previous hook
-- @raise fn neither a function nor nil
function unsandbox.on_request(fn)
  check.type("on_request", "fn", fn, "function", true)
  return observe.set_global(fn)
end

--- Turns on (or off) one line per exchange on stderr, in the hook's
-- shape; UNSANDBOX_DEBUG=1 in the environment turns it on too.
-- @tparam boolean on
-- @treturn boolean the previous setting
function unsandbox.debug(on)
  return observe.set_debug(on)
end

local default
--- The client the module functions use, made with no options (so
-- configured from the environment) the first time it is needed.
-- @treturn Client the default client
-- @raise when UNSANDBOX_URL (or another variable the client reads) is
-- malformed
function unsandbox.default_client()
  if not default then default = unsandbox.client() end
  return default
end

-- The task functions are lua/unsandbox/tasks.lua's, loaded on first use
-- (public.lua's LAZY_FIELDS); their reference is here.

--- Tasks: many calls at once, on one thread
-- @section tasks

--- Starts fn(...) as a task: it runs from the next `step` on (or the
-- next wait of the main thread: `run`, `Task:wait`, `completed`), and
-- inside it every call of the library yields instead of blocking, so
-- many tasks wait together on one event loop. The task starts with the
-- spawner's per-coroutine bindings (acting subjects, trace).
-- @function spawn
-- @tparam function fn the task's body (or a callable table)
-- @param ... its arguments
-- @treturn Task the task, in status "ready"
-- @raise "bad argument #1 to 'spawn'" when fn cannot be called
-- @usage local t = unsandbox.spawn(unsandbox.execute_code, "python", "print(1)")
-- local result, err = t:wait()

--- Advances every task once: resumes those that can go on (for about a
-- millisecond, or timeout_ms if longer; the rest at the next step), waits
-- at most timeout_ms for the network, and resumes what that woke. The
-- call a game loop makes once a frame (with 0).
-- @function step
-- @tparam[opt=0] integer timeout_ms the longest wait in milliseconds (0: never blocks)
-- @treturn[1] integer the number of tasks not yet ended
-- @return[2] nil after Ctrl-C
-- @treturn[2] Error kind interrupted (every task was cancelled)
-- @raise when called inside a task, or with a negative timeout_ms

--- Steps until every task has ended.
-- @function run
-- @tparam[opt] number timeout seconds at most (default: no limit)
-- @treturn[1] boolean true once every task has ended
-- @return[2] nil
-- @treturn[2] Error kind timeout (the tasks go on) or interrupted (Ctrl-C:
-- every task was cancelled)
-- @raise when called inside a task, or with a timeout that is not a
-- positive number

--- What a host's own event loop waits on before calling `step`(0).
-- @function pollfds
-- @treturn table a list of `{fd = integer, events = "r"|"w"|"rw"}`
-- @treturn integer timeout_ms: how long the host may wait (0: a task can
-- go on now; -1: nothing is scheduled)

--- Iterates over tasks in the order they end. Inside a task it yields
-- between them; elsewhere it drives the loop. Ctrl-C cancels the tasks
-- and ends the iteration.
-- @function completed
-- @tparam table list tasks (false or nil holes are skipped)
-- @treturn function an iterator of `i, task` (i the task's key in list)
-- @raise when list is not a table
-- @usage for i, t in unsandbox.completed(tasks) do print(i, t:result()) end

--- The task whose code is running.
-- @function current_task
-- @treturn Task|nil the task, or nil in the main thread

--- A task: a coroutine the library runs on its event loop (`spawn`).
-- `unsandbox.Task` is the class table.
-- @type Task

--- Waits for the task to end: inside a task this yields, elsewhere it
-- drives the loop.
-- @function Task:wait
-- @tparam[opt] number timeout seconds at most (default: no limit)
-- @return[1] what the task's function returned, when it returned
-- @return[2] nil when it raised or was cancelled
-- @return[2] what it raised (an Error of kind interrupted when cancelled,
-- with job_id and cancelled when its call had started a job)
-- @return[3] nil when the timeout passed (the task goes on)
-- @treturn[3] Error kind timeout
-- @raise when a task waits for itself, or timeout is not a positive number

--- The outcome of an ended task, as `Task:wait` returns it.
-- @function Task:result
-- @return what the task's function returned, or nil and its error
-- @raise when the task has not ended yet

--- Cancels the task now: the tasks it spawned that still run are
-- cancelled first, its open transfer is closed, its coroutine closed
-- (pending `<close>` variables run), and the cleanups of its calls
-- (cancelling its remote jobs) start as tasks of their own.
-- @function Task:cancel
-- @tparam[opt] string why words for the task's error message
-- @treturn boolean true, or false when it had already ended
-- @raise when a task cancels itself

--- The task's state.
-- @function Task:status
-- @treturn string "ready", "running", "waiting", "done", "failed" or "cancelled"

--- Whether the task has ended, however it ended.
-- @function Task:done
-- @treturn boolean

--- Artifacts
-- @section artifacts

--- Saves the artifacts of runs made with `return_artifacts = true`: to a
-- local directory, at their relative paths (refusing absolute names and
-- `..`), or handed to a function. Each file is written whole or not at
-- all (a temporary renamed over the name). Loaded on first use.
-- @function save_artifacts
-- @tparam table result_or_list a result of execute_code (or of
-- wait_for_job, get_job) with `artifacts`, or a list of artifacts
-- `{filename =, content =}`
-- @tparam string|function dest a directory (made with its parents), or
-- dest(filename, content) called for each artifact
-- @tparam[opt] table opts `flatten` (true: "/" in a name becomes "_")
-- @treturn[1] table the paths written (or the names given to dest)
-- @return[2] nil
-- @treturn[2] Error kind validation: a file that cannot be written, or a
-- name that is not a relative path inside dest
-- @raise when result_or_list is not a table, dest is empty, or an
-- option is unknown

--- Resources
-- @section resources

--- Runs fn(resource, ...) and closes resource however fn ends: it
-- returns, raises, or its task is cancelled while it waits. On Lua 5.4
-- `local x <close> = resource` does the same; this is the way on 5.1,
-- LuaJIT and 5.3, which have no to-be-closed variables. A resource closes
-- as its `<close>` would: a Sandbox, Shell, Process or Context whose close
-- fails raises that Error, unless fn raised (whose error is kept).
-- @function with
-- @tparam Client|Manager|Sandbox|Shell|Terminal|Process|Context|Binding resource
-- anything with a close method or a __close metamethod
-- @tparam function fn called as fn(resource, ...)
-- @param ... more arguments for fn
-- @return what fn returns
-- @raise what fn raised, raised again once resource is closed;
-- "bad argument #1 to 'with'" when resource has no close,
-- "bad argument #2" when fn cannot be called
-- @usage local out = unsandbox.with(unsandbox.client{}, function(c)
--   return assert(c:execute_code("python", "print(1)")).stdout
-- end)

--- pcall that a task's calls can wait across. PUC Lua 5.1 cannot yield
-- across its own pcall (LuaJIT and 5.2+ can, and there this is pcall
-- itself): inside a task on 5.1, protect library calls with it.
-- @function pcall
-- @tparam function f the function to call
-- @param ... its arguments
-- @treturn boolean true when f returned, false when it raised
-- @return what f returned, or what it raised

-- The Client's methods, group by group, and the module functions, made
-- from the one declared table of public functions (public.lua).
public.install(unsandbox, Client, CONNECTION, function(group, from)
  methods.add(Client, group, FRAME, from)
end)

return unsandbox
