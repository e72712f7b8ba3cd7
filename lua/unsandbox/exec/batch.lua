--- Many programs at once, built on tasks (tasks.lua). Each program is a
-- task, so they wait for their jobs together on the event loop, and the
-- whole batch runs inside a task too (then it yields) or blocks its
-- caller (then it drives the loop). Results come all at once, indexed like
-- the input, or through an iterator in the order they finish:
--
--   c:execute_many(list, opts)                 -> results, errors
--   c:execute_each(list, opts)                 -> for i, result, err in ...
--   c:map(language, inputs, fn, opts)          -> results, errors
--   c:map_each(language, inputs, fn, opts)     -> for i, result, err in ...
--
-- execute_many submits every program first (POST /execute/async, all at
-- once), then follows the jobs: the service queues what it cannot run yet.
-- map runs execute_code for each input through at most opts.concurrency
-- workers (default 16): fn(input, i) returns the code, or code and that
-- call's options. Cancelling the task that runs a batch (Ctrl-C cancels
-- every task) cancels its programs' tasks and their jobs; a program still
-- running at the batch's deadline has its job cancelled (abandon.note).
-- Internal module; its methods are documented as the Client's.
-- @classmod Client
local abandon = require "unsandbox.exec.abandon"
local transport = require "unsandbox.transport"
local check = require "unsandbox.check"
local compat = require "unsandbox.compat"
local Error = require "unsandbox.errors"
local execute = require "unsandbox.exec.execute"
local observe = require "unsandbox.observe"
local poll = require "unsandbox.exec.poll"
local results = require "unsandbox.exec.results"
local shape = require "unsandbox.shape"
local tasks = require "unsandbox.tasks"
local core = require "unsandbox.core"

local Client = {}   -- the methods this file adds to unsandbox.Client

local MANY_OPTIONS = { timeout = true, on_poll = true }

-- The checked bodies of an execute_many list (an Error where an input
-- file could not be read) and the longest ttl.
local function bodies_of(fname, list, opts)
  check.type(fname, "list", list, "table")
  check.positive(fname, "timeout", opts.timeout)
  check.type(fname, "on_poll", opts.on_poll, "function", true)
  local bodies, longest = {}, 0
  for i, item in ipairs(list) do
    local where = "list[" .. i .. "]"
    check.type(fname, where, item, "table")
    if type(item[3]) == "table" and (item[3].timeout or item[3].on_poll) then
      check.fail(fname, where, "timeout and on_poll belong to the options of " .. fname)
    end
    local _, body, err = execute.args(fname, item[1], item[2], item[3])
    bodies[i] = body or err
    longest = math.max(longest, body and body.ttl or 60)
  end
  return bodies, longest
end

local function submit(self, body)
  local meter = observe.meter()
  local doc, rid = transport.request(self, "POST", "/execute/async", body, { meter = meter })
  if not doc then return nil, rid end
  local id, bad = shape.id(doc, "job_id", rid)
  if not id then
    bad.timing = meter:timing()
    return nil, bad
  end
  return id, meter
end

-- Polls program i's job until the batch's deadline (the batch was given
-- `seconds` in all).
local function follow(self, job_id, meter, deadline, seconds, on_poll, i, artifacts)
  local cb = on_poll and function(job, attempt) return on_poll(job, attempt, i) end
  local left = math.max(0.001, (deadline - core.loop.monotonic_ms()) / 1000)
  local job, rid = poll.wait(self, job_id, left, cb, meter, { call_timeout = seconds })
  if not job then
    -- the batch's deadline (or an interrupt the wait returned) gives the
    -- job up: it is cancelled and named, as execute_code does (abandon.lua);
    -- a cancelled task's job is cancelled by poll.wait's own cleanup
    rid = abandon.note(self, job_id, rid)
    rid.timing = meter:timing()
    return nil, rid
  end
  local r, err = results.normalise(job, rid, artifacts)   -- checks the shape
  if r then r.timing = meter:timing() else err.timing = meter:timing() end
  return r, err
end

-- Submits every program, then starts a task per job. Returns the tasks
-- (by index) and the errors of the programs that never became jobs.
local function start_many(self, fname, list, opts)
  opts = check.options(fname, opts, MANY_OPTIONS)
  local bodies, longest = bodies_of(fname, list, opts)
  local seconds = opts.timeout or execute.default_wait(longest)
  local deadline = core.loop.monotonic_ms() + seconds * 1000
  local subs, errors, followers = {}, {}, {}
  for i, body in ipairs(bodies) do
    if Error.is(body) then errors[i] = body
    else subs[i] = tasks.spawn(submit, self, body) end
  end
  local ok, stop = tasks.wait_all(subs)
  for i, t in pairs(subs) do
    local id, meter_or_err
    if ok then id, meter_or_err = t:result() else meter_or_err = stop end
    if id then
      followers[i] = tasks.spawn(follow, self, id, meter_or_err, deadline, seconds, opts.on_poll, i,
        bodies[i].return_artifact)
    else
      errors[i] = meter_or_err
    end
  end
  return followers, errors, #list
end

-- The outcome of an ended task as (result, err): a raised error becomes
-- an Error-less value as it was raised.
local function outcome(t)
  local r, err = t:result()
  if r == nil and err == nil then err = Error.new { kind = "protocol", message = "no result" } end
  return r, err
end

local function collect(ts, errors)
  local out = {}
  local _, stop = tasks.wait_all(ts)
  for i, t in pairs(ts) do
    local r, err
    if t:done() then r, err = outcome(t) else err = stop end
    if r then out[i] = r else errors[i] = err end
  end
  return out, errors
end

-- An iterator over (i, result, err): errors known before anything ran
-- first (by index), then the tasks in the order they end.
local function each(ts, errors)
  local early = {}
  for i in pairs(errors) do early[#early + 1] = i end
  table.sort(early)
  local k, it = 0, tasks.completed(ts)
  return function()
    k = k + 1
    if early[k] then return early[k], nil, errors[early[k]] end
    local i, t = it()
    if not i then return nil end
    if not t:done() then return i, nil, Error.new { kind = "interrupted", message = "interrupted" } end
    local r, err = outcome(t)
    return i, r, err
  end
end

-- map's own option, and execute_code's for every call
local MAP_OPTIONS = { concurrency = true }
for k in pairs(execute.OPTIONS) do MAP_OPTIONS[k] = true end

local function map_inputs(fname, language, inputs, fn, opts)
  check.nonempty(fname, "language", language)
  check.type(fname, "inputs", inputs, "table")
  check.type(fname, "fn", fn, "function")
  opts = check.options(fname, opts, MAP_OPTIONS)
  local per_call = {}
  for k, v in pairs(opts) do
    if k ~= "concurrency" then per_call[k] = v end
  end
  local n = check.int_range(fname, "concurrency", opts.concurrency, 1, 1024) or 16
  return per_call, n
end

-- One input of a map: fn's code run by execute_code. A raise (in fn, or
-- misuse in its options) becomes that input's validation error: it
-- happens in a worker task, where there is no caller line to raise at.
local function map_one(self, language, fn, input, i, per_call)
  local ok, r, err = compat.pcall(function()
    local code, call_opts = fn(input, i)
    if type(code) ~= "string" then
      return nil, Error.new { kind = "validation", message = "map: fn returned " .. type(code) ..
        " for input " .. i .. ", code (a string) expected" }
    end
    local o = {}
    for k, v in pairs(per_call) do o[k] = v end
    for k, v in pairs(type(call_opts) == "table" and call_opts or {}) do o[k] = v end
    return self:execute_code(language, code, o)
  end)
  if ok then return r, err end
  if Error.is(r) then return nil, r end
  return nil, Error.new { kind = "validation", message = "map: input " .. i .. ": " .. tostring(r) }
end

-- Starts the workers of a map: each takes the next input, runs it and
-- reports {i, result, err} on ch; ch closes when every input is done.
local function start_map(self, language, inputs, fn, per_call, n, ch)
  local next_i, count, running = 1, #inputs, 0
  local function worker()
    while next_i <= count do
      local i = next_i
      next_i = next_i + 1
      local r, err = map_one(self, language, fn, inputs[i], i, per_call)
      ch:push { i, r, err }
    end
    running = running - 1
    if running == 0 then ch:close() end
  end
  local workers = {}
  running = math.min(n, count)
  if running == 0 then ch:close() end
  for w = 1, running do workers[w] = tasks.spawn(worker) end
  return workers
end

--- Many programs at once
-- @section batch

--- Runs several programs at once, each job a task: every program is
-- submitted (POST /execute/async), then all are followed together, each
-- on its own poll schedule. Inside a task it yields; elsewhere it drives
-- the loop. A program still running at the deadline has its job
-- cancelled, as has every job on Ctrl-C.
-- @function execute_many
-- @tparam table list `{{language, code [, opts]}, ...}`, each opts as
-- for `execute_code` less timeout and on_poll
-- @tparam[opt] table opts `timeout` (s, the whole batch; default the
-- largest ttl plus a minute), `on_poll(job, attempt, index)`
-- @treturn table results, indexed like list: `results[i]` (as
-- `execute_code` gives it, with request_id and timing) for each program
-- that ran
-- @treturn table errors, indexed like list: `errors[i]` (an `Error`) for
-- each program that could not be submitted or did not finish (timeout or
-- interrupted with err.job_id and err.cancelled)
-- @raise list not a table, an item that is not `{language, code [, opts]}`,
-- timeout or on_poll in an item's options, an option out of range
function Client:execute_many(list, opts)
  local ts, errors = start_many(self, "execute_many", list, opts)
  return collect(ts, errors)
end

--- As `execute_many`, but an iterator over the programs in the order they
-- finish (errors known before anything ran come first). As a module
-- function it always uses the default client (the iterator outlives the
-- call).
-- @function execute_each
-- @tparam table list as for `execute_many`
-- @tparam[opt] table opts as for `execute_many`
-- @treturn function an iterator of `i, result, err` (one of result and
-- err is nil)
-- @raise as `execute_many`
-- @usage for i, r, err in c:execute_each(list) do print(i, r and r.stdout or err) end
function Client:execute_each(list, opts)
  local ts, errors = start_many(self, "execute_each", list, opts)
  return each(ts, errors)
end

--- Runs the code fn makes of each input, by `execute_code`, through at
-- most `concurrency` workers (tasks) at once. fn(input, i) returns the
-- code, or the code and that call's options (merged over opts). What fn
-- raises becomes that input's error (kind validation).
-- @function map
-- @tparam string language as for `execute_code`
-- @tparam table inputs a list of values
-- @tparam function fn fn(input, i) -> code [, opts]
-- @tparam[opt] table opts `concurrency` (1..1024, default 16), and
-- `execute_code`'s options for every call
-- @treturn table results indexed like inputs
-- @treturn table errors indexed like inputs (an `Error` each)
-- @raise an empty language, inputs not a table, fn not a function, an
-- unknown option
function Client:map(language, inputs, fn, opts)
  local per_call, n = map_inputs("map", language, inputs, fn, opts)
  local ch = tasks.channel()
  start_map(self, language, inputs, fn, per_call, n, ch)
  local out, errors = {}, {}
  for _ = 1, #inputs do
    local item, err = ch:pop()
    if not item then
      for i = 1, #inputs do
        if out[i] == nil and errors[i] == nil then errors[i] = err end
      end
      break
    end
    if item[2] then out[item[1]] = item[2] else errors[item[1]] = item[3] end
  end
  return out, errors
end

--- As `map`, but an iterator in the order the calls finish. As a module
-- function it always uses the default client.
-- @function map_each
-- @tparam string language
-- @tparam table inputs
-- @tparam function fn
-- @tparam[opt] table opts as for `map`
-- @treturn function an iterator of `i, result, err`; Ctrl-C raises its
-- Error (kind interrupted) from the iterator
-- @raise as `map`
function Client:map_each(language, inputs, fn, opts)
  local per_call, n = map_inputs("map_each", language, inputs, fn, opts)
  local ch = tasks.channel()
  start_map(self, language, inputs, fn, per_call, n, ch)
  return function()
    local item, err = ch:pop()
    if item then return item[1], item[2], item[3] end
    if err then error(err, 0) end
    return nil
  end
end

return Client
