--- Runs and jobs of the execution API (spec §4.1, §5.2) as methods of
-- every unsandbox.Client: a run polled to its end, a job submitted, read,
-- waited for, cancelled and listed. Each is declared in public.lua, so it
-- is also unsandbox.<name>(...) on the default client. Many runs at once
-- are exec/batch.lua. Internal module; its methods are documented as the
-- Client's.
-- @classmod Client
local core = require "unsandbox.core"
local transport = require "unsandbox.transport"
local calls = require "unsandbox.exec.calls"
local check = require "unsandbox.check"
local execute = require "unsandbox.exec.execute"
local languages = require "unsandbox.exec.languages"
local results = require "unsandbox.exec.results"
local shape = require "unsandbox.shape"

local Client = {}   -- the methods this file adds to unsandbox.Client

local default_wait = execute.default_wait
local execute_args = execute.args
local request_limit = calls.request_limit

local one = calls.one
local wait_result, wait_started = calls.wait_result, calls.wait_started

--- Runs and jobs
-- @section jobs

--- Runs code and returns its result once it has finished. The code runs
-- synchronously (POST /execute) when the call's deadline and the
-- client's timeout both leave room for the longest synchronous answer
-- (the ttl plus 30 s); otherwise it is submitted as a job (POST
-- /execute/async) and polled, so the deadline never fires while a job of
-- the call's own is unknown. Giving up (the timeout, Ctrl-C, a cancelled
-- task) cancels the job. A program that fails, or exceeds its ttl, is a
-- result (its status says so), not an error.
-- @tparam string language a language the service runs ("python",
-- "bash", ...; aliases such as "python3", "node", "js" and any case
-- are accepted)
-- @tparam string code the program's text
-- @tparam[opt] table opts
-- @tparam[opt] table opts.env `{NAME = "value"}`, at most 256 variables
-- @tparam[opt] table opts.input_files a list of local paths (sent under
-- their base names) or `{filename = "rel/path", content = "bytes" | path
-- = "local/file" | file = handle}`; at most 1000 files, 100 MB each, 4 GB
-- in all
-- @tparam[opt="zerotrust"] string opts.network_mode "zerotrust" (no
-- network) or "semitrusted"
-- @tparam[opt] integer opts.ttl the run's time limit, 1..900 s (the
-- service's default: 60)
-- @tparam[opt=1] integer opts.vcpu 1..8
-- @tparam[opt] boolean opts.return_artifacts files the program wrote come
-- back in `artifacts` (see `unsandbox.save_artifacts`)
-- @tparam[opt] number opts.timeout seconds for the whole call (default
-- the ttl plus a minute)
-- @tparam[opt] function opts.on_poll on_poll(job, attempt) after each
-- poll; returning false stops waiting (kind validation)
-- @tparam[opt] string opts.url as a module function, the connection options too
-- (`url`, `public_key`, `secret_key`, `account`, `ca_file`, ...): a
-- one-off client for this call
-- @treturn[1] table the result: `stdout`, `stderr` (strings),
-- `exit_code` (integer), `status` ("completed", "failed", "timeout",
-- "cancelled"), `job_id`, `language`, `execution_time_ms`,
-- `stdout_truncated`, `stderr_truncated` (booleans), `error` (the
-- service's text, if any), `created_at`, `completed_at`, `request_id`,
-- `timing` (see docs/guide/observability.md), and `artifacts`
-- (`{{filename =, content =}, ...}`) when asked
-- @return[2] nil
-- @treturn[2] Error http (an unknown language: err.hint names the
-- nearest), transport, timeout or interrupted (err.job_id, and
-- err.cancelled: whether the job was cancelled), validation (an input
-- file that cannot be read, or on_poll said stop), credentials
-- @raise an empty language, code not a string, an unknown option, an
-- option out of range (ttl, vcpu, env names, input file names)
-- @usage local r = assert(unsandbox.execute_code("python", "print(6 * 7)"))
-- print(r.stdout, r.exit_code)
function Client:execute_code(language, code, opts)
  local body, err
  opts, body, err = execute_args("execute_code", language, code, opts)
  if not body then return nil, err end
  local ttl = body.ttl or 60
  local budget = opts.timeout or default_wait(ttl)
  local deadline = core.loop.monotonic_ms() + budget * 1000
  local left = function() return math.max(0.001, (deadline - core.loop.monotonic_ms()) / 1000) end
  local sync = math.min(budget, request_limit(self)) >= execute.sync_limit(ttl)
  local doc, rid = transport.request(self, "POST", sync and "/execute" or "/execute/async", body,
    { timeout = math.min(budget, request_limit(self)) })
  if not doc then return nil, languages.explain(self, body.language, rid) end
  if sync and not results.is_pending(doc) then
    return results.normalise(doc, rid, opts.return_artifacts)
  end
  local id, bad = shape.id(doc, "job_id", rid)
  if not id then return nil, bad end
  return wait_started(self, id, left(), opts.on_poll, opts.return_artifacts, nil,
    { call_timeout = budget })
end

--- Submits code as a job (POST /execute/async) and returns at once.
-- @tparam string language as for `execute_code`
-- @tparam string code the program's text
-- @tparam[opt] table opts those of `execute_code` (timeout: of this
-- request; on_poll is not used)
-- @treturn[1] string the job id, for `get_job`, `wait_for_job`, `cancel_job`
-- @return[2] nil
-- @treturn[2] Error
-- @raise as `execute_code`
function Client:execute_async(language, code, opts)
  local body, err
  opts, body, err = execute_args("execute_async", language, code, opts)
  if not body then return nil, err end
  local doc, rid = transport.request(self, "POST", "/execute/async", body, { timeout = opts.timeout })
  if not doc then return nil, languages.explain(self, body.language, rid) end
  local id, bad = shape.id(doc, "job_id", rid)
  if not id then return nil, bad end
  return id
end

--- A job's current state (one request, no waiting).
-- @tparam string job_id
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table the result as `execute_code` gives it: `status`
-- "pending" or "running" while it runs (the output fields then empty)
-- @return[2] nil
-- @treturn[2] Error (http 404: no such job)
-- @raise job_id not an id
function Client:get_job(job_id, opts)
  check.id("get_job", "job_id", job_id)
  opts = calls.plain("get_job", opts)
  local doc, rid = transport.request(self, "GET", "/jobs/" .. job_id, nil, calls.request_opts(opts))
  if not doc then return nil, rid end
  return results.normalise(doc, rid, doc.artifacts ~= nil)   -- checks the shape
end

local WAIT_OPTIONS = { timeout = true, on_poll = true, return_artifacts = true }

--- Polls a job until it has finished: once at once, then on the
-- schedule (300, 450, 700, 900, 650, 1600, 2000 ms, then every 2 s).
-- @tparam string job_id
-- @tparam[opt] table opts `timeout` (s, default 16 minutes),
-- `on_poll(job, attempt)` (returning false stops waiting),
-- `return_artifacts`
-- @treturn[1] table the result as `execute_code` gives it
-- @return[2] nil
-- @treturn[2] Error http 404 (an id the service does not know, whatever
-- the timeout), timeout (err.job_id: the job is left running, it is the
-- caller's), interrupted, validation (on_poll said stop)
-- @raise job_id not an id, an unknown option
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

--- Cancels a pending or running job.
-- @tparam string job_id
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table `{job_id, status = "cancelled", request_id}`
-- @return[2] nil
-- @treturn[2] Error http 404 (no such job), or http for a finished job,
-- which cannot be cancelled (409, err.code "job_finished", from unsandboxd)
-- @raise job_id not an id
function Client:cancel_job(job_id, opts)
  check.id("cancel_job", "job_id", job_id)
  opts = calls.plain("cancel_job", opts)
  return one(transport.request(self, "DELETE", "/jobs/" .. job_id, nil, calls.request_opts(opts)))
end

--- The jobs still pending or running (the service lists active jobs
-- only; a finished one is read with `get_job`).
-- @tparam[opt] table opts `timeout`
-- @treturn[1] table a list of `{job_id, status, language, ...}`
-- @return[2] nil
-- @treturn[2] Error
function Client:list_jobs(opts)
  return calls.get_list(self, "/jobs", "jobs", calls.plain("list_jobs", opts), true)
end

return Client
