--- Runs and jobs of the execution API (spec §4.1, §5.2) as methods of
-- every unsandbox.Client: a run polled to its end, a job submitted, read,
-- waited for, cancelled and listed. Each is declared in public.lua, so it
-- is also unsandbox.<name>(...) on the default client. Many runs at once
-- are exec/batch.lua. Internal module; its methods are documented as the
-- Client's.
-- @submodule unsandbox
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

--- Submits code as a job and returns its id. opts: those of
-- execute_code (timeout: of this request).
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

return Client
