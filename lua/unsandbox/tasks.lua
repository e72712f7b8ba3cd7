--- The scheduler: tasks are coroutines the library runs on the
-- event loop of the C core. Inside a task every call of the library —
-- execute_code, wait_for_job, Manager and Sandbox methods, streams —
-- yields instead of blocking: in a registered task thread the binding
-- (csrc/lua/loop.c) returns the sentinel core.loop.YIELD and a
-- continuation instead of waiting; the C functions that can do so are
-- wrapped here (settle) to yield YIELD from Lua and call the continuation
-- when the loop wakes the thread. No C frame is ever suspended, so this
-- works the same on 5.4, 5.3, 5.1 and LuaJIT. A task costs a coroutine
-- and nothing else while it waits: no thread, no busy loop.
--
--   local t = unsandbox.spawn(fn, ...)   -- starts at the next step
--   unsandbox.step(ms)                   -- advance everything once
--   unsandbox.run()                      -- until every task has ended
--   t:wait() / t:result() / t:cancel() / t:status()
--
-- Outside a task nothing changes: calls block as they always did. A
-- task starts with the spawner's per-coroutine bindings (acting subjects,
-- trace) and then has its own. Cancelling a task closes the transfer it
-- waits on at once, closes its coroutine (its <close> variables run) and
-- runs the cleanups its calls registered (cancelling remote jobs) as
-- tasks of their own, each bounded by its own timeout. Internal module;
-- init.lua exports spawn, step, run, pollfds and completed.
local compat = require "unsandbox.compat"
local core = require "unsandbox.core"
local check = require "unsandbox.check"
local context = require "unsandbox.context"
local Error = require "unsandbox.errors"

local YIELD = core.loop.YIELD
local M = { YIELD = YIELD }

local Task = { __name = "unsandbox.Task" }
Task.__index = Task
M.Task = Task

-- FIFO of tasks to resume. Head and tail are counted apart: a taken
-- slot is nil, and # of a table with a nil prefix may be any border
-- (0 too), which once lost ready tasks.
local ready, ready_head, ready_tail = {}, 1, 0
local by_thread = setmetatable({}, { __mode = "k" })   -- thread -> its task
local live, n_live = {}, 0            -- unfinished tasks
local current                         -- the task being resumed, or nil
local next_id = 0

local FINISHED = { done = true, failed = true, cancelled = true }
local CLEANUP_WAIT_MS = 3000          -- how long Ctrl-C lets cleanups run

local function push_ready(t)
  ready_tail = ready_tail + 1
  ready[ready_tail] = t
end

local function has_ready()
  return ready_head <= ready_tail
end

local function register(t, th)
  by_thread[th] = t
  t.threads[th] = true
  core.loop.task_thread(th, true)
end

-- On 5.1 a library pcall inside a task runs in a helper coroutine
-- (compat.pcall): it waits as the task's own thread.
compat.on_helper = function(co, parent)
  local t = by_thread[parent]
  if t then register(t, co) end
end

local function unregister_all(t)
  for th in pairs(t.threads) do
    core.loop.task_thread(th, false)
    by_thread[th] = nil
  end
end

local function notify(t)
  local fns = t.on_finish
  t.on_finish = {}
  for _, fn in ipairs(fns) do fn(t) end
end

local function finish(t, ok, ...)
  live[t] = nil
  n_live = n_live - 1
  unregister_all(t)
  t.cleanups = {}
  if ok then
    t.state, t.results = "done", compat.pack(...)
  else
    t.state, t.err = "failed", (...)
  end
  notify(t)
end

local function resume(t)
  local prev = current
  current = t
  t.state = "running"
  local r = compat.pack(coroutine.resume(t.co))
  current = prev
  if coroutine.status(t.co) == "dead" then
    finish(t, compat.unpack(r, 1, r.n))
  elseif r[2] == YIELD then
    t.state = "waiting"                -- woken by the loop (or unpark)
  else
    t.state = "ready"                  -- a plain coroutine.yield(): others go first
    push_ready(t)
  end
end

-- Resumes the tasks that were ready when it started (those that become
-- ready meanwhile wait for the next call, so a step stays bounded), and,
-- given a deadline (core.loop.monotonic_us), no more once it has passed: the
-- rest stay ready, first in line for the next call.
local function run_ready(deadline_us)
  local last = ready_tail
  while ready_head <= last do
    if deadline_us and core.loop.monotonic_us() >= deadline_us then return end
    local t = ready[ready_head]
    ready[ready_head] = nil
    ready_head = ready_head + 1
    if t.state == "ready" then resume(t) end
  end
  if ready_head > ready_tail then ready, ready_head, ready_tail = {}, 1, 0 end
end

local function wake(threads)
  for _, th in ipairs(threads) do
    local t = by_thread[th]
    if t and t.state == "waiting" then
      t.state = "ready"
      push_ready(t)
    end
  end
end

------------------------------------------------------------------------
-- tasks
------------------------------------------------------------------------

local function callable(v)
  if type(v) == "function" then return true end
  local mt = getmetatable(v)
  return type(mt) == "table" and mt.__call ~= nil
end

--- spawn(fn, ...) -> Task: fn(...) runs as a task from the next step on.
-- fn that cannot be called raises here, at the caller's line.
function M.spawn(fn, ...)
  if not callable(fn) then
    check.fail("spawn", 1, "function expected, got " .. type(fn))
  end
  local args = compat.pack(...)
  next_id = next_id + 1
  local t = setmetatable({ id = next_id, state = "ready", on_finish = {}, cleanups = {},
                           threads = setmetatable({}, { __mode = "k" }),
                           children = setmetatable({}, { __mode = "k" }),
                           transfers = setmetatable({}, { __mode = "k" }) }, Task)
  if current then current.children[t] = true end
  t.co = coroutine.create(function() return fn(compat.unpack(args, 1, args.n)) end)
  context.apply(context.capture(), t.co)
  register(t, t.co)
  live[t] = true
  n_live = n_live + 1
  push_ready(t)
  return t
end

--- The task whose code is running, or nil.
function M.current()
  return current
end

--- How many tasks have not ended.
function M.live()
  return n_live
end

function Task:__tostring()
  return "unsandbox.Task " .. self.id .. " (" .. self.state .. ")"
end

--- "ready", "running", "waiting", "done", "failed" or "cancelled".
function Task:status() return self.state end

--- true once it has ended, however.
function Task:done() return FINISHED[self.state] == true end

-- What the task's function returned, or nil and what it raised (or the
-- cancellation Error).
local function outcome(t)
  if t.state == "done" then return compat.unpack(t.results, 1, t.results.n) end
  return nil, t.err
end

--- The outcome of an ended task (as wait() returns it); raises while it runs.
function Task:result()
  if not self:done() then check.raise("task " .. self.id .. " has not ended yet: wait() for it or check done()") end
  return outcome(self)
end

--- Runs fn(task) when the task ends (at once if it has).
function Task:_on_finish(fn)
  if self:done() then fn(self) else self.on_finish[#self.on_finish + 1] = fn end
end

local function timed_out(t, timeout)
  return Error.new { kind = "timeout", message = string.format(
    "task %d still running after %g s", t.id, timeout) }
end

--- wait([timeout s]): the task's outcome once it ends; inside a task this
-- yields, elsewhere it drives the loop. A timeout leaves the task running
-- and returns nil, Error(timeout).
function Task:wait(timeout)
  if timeout ~= nil and (type(timeout) ~= "number" or timeout <= 0 or timeout ~= timeout) then
    check.fail("wait", 1, "timeout: a positive number of seconds expected")
  end
  if self:done() then return outcome(self) end
  if self == current then check.raise("a task cannot wait for itself") end
  local deadline = timeout and core.loop.monotonic_ms() + timeout * 1000
  if current then
    if not core.loop.can_yield() then
      check.raise("wait: a task can only wait from its own coroutine (not a coroutine of its own making)")
    end
    local me = coroutine.running()
    self:_on_finish(function() core.loop.unpark(me) end)
    while not self:done() do
      local left = deadline and deadline - core.loop.monotonic_ms()
      if left and left <= 0 then return nil, timed_out(self, timeout) end
      core.loop.park(left and math.max(1, left))
    end
    return outcome(self)
  end
  while not self:done() do
    local left = deadline and deadline - core.loop.monotonic_ms()
    if left and left <= 0 then return nil, timed_out(self, timeout) end
    local n, err = M.step(left and math.min(left, 100) or 100)
    if not n then return nil, err end
  end
  return outcome(self)
end

-- The error of a cancelled task: kind interrupted, as every interruption
-- is (Ctrl-C, a deadline, a cancel). job_id names the job its call had
-- started (a cleanup registered with own), cancelled says whether that
-- job's cleanup cancelled it (set when the cleanup ends: false until).
local function cancelled_error(t, why, job_id)
  local err = Error.new { kind = "interrupted", status = 499, job_id = job_id,
    message = "task " .. t.id .. " cancelled" .. (why and (": " .. why) or "") }
  if job_id then err.cancelled = false end
  return err
end

--- cancel(): ends the task now. The tasks it spawned that still run are
-- cancelled first; its open transfer is closed, its coroutine closed
-- (pending <close> variables run), the cleanups of its calls (cancelling
-- its remote jobs) start as tasks. true, or false when it had already
-- ended.
function Task:cancel(why)
  if self:done() then return false end
  if current and by_thread[coroutine.running()] == self then
    check.raise("a task cannot cancel itself: return from it instead")
  end
  local kids = {}
  for child in pairs(self.children) do kids[#kids + 1] = child end
  table.sort(kids, function(a, b) return a.id < b.id end)
  for _, child in ipairs(kids) do child:cancel(why) end
  for th in pairs(self.threads) do core.loop.loop_abort(th) end
  -- streams it opened and was not waiting on right now (pcall: a
  -- Transfer whose Client was closed raises on nothing, but be sure)
  for x in pairs(self.transfers) do pcall(x.close, x) end
  live[self] = nil
  n_live = n_live - 1
  self.state = "cancelled"
  local job_id
  for _, c in pairs(self.cleanups) do job_id = job_id or c.job_id end
  local err = cancelled_error(self, why, job_id)
  self.err = err
  -- unregistered first: its <close> handlers then run as plain code that
  -- blocks (they cannot yield: the coroutine is being closed)
  unregister_all(self)
  local prev = current
  current = nil
  compat.close_coroutine(self.co)
  current = prev
  local cleanups = self.cleanups
  self.cleanups = {}
  for _, c in pairs(cleanups) do
    local t = M.spawn(function()
      local ok, done = compat.pcall(c.fn)
      if c.job_id and c.job_id == err.job_id then err.cancelled = ok and done == true end
    end)
    t.system = true
  end
  notify(self)
  return true
end

--- Registers fn to run (as a task) if the current task is cancelled
-- before it calls M.disown(handle): how a call that started something
-- remote (a job, job_id) makes sure it is stopped; fn returns true when
-- it was. nil outside a task.
function M.own(fn, job_id)
  if not current then return nil end
  local handle = {}
  current.cleanups[handle] = { fn = fn, job_id = job_id }
  return { task = current, key = handle }
end

function M.disown(h)
  if h then h.task.cleanups[h.key] = nil end
end

------------------------------------------------------------------------
-- driving
------------------------------------------------------------------------

local function cancel_all(system_too, why)
  local list = {}
  for t in pairs(live) do
    if system_too or not t.system then list[#list + 1] = t end
  end
  table.sort(list, function(a, b) return a.id < b.id end)
  for _, t in ipairs(list) do t:cancel(why) end
end
M.cancel_all = cancel_all

-- core.loop.loop_step, with unlua's Ctrl-C: its signal hook raises
-- "interrupted!" in the main thread as the step returns (as lua.c does);
-- here that is the interrupt the step reports, so the tasks are cancelled
-- rather than abandoned. Tokens the step took are lost then, which only
-- matters to tasks about to be cancelled.
local function loop_step(ms)
  local ok, woken, intr = pcall(core.loop.loop_step, ms)
  if ok then return woken, intr end
  if type(woken) == "string" and woken:find("interrupted!$") then return {}, true end
  error(woken, 0)
end

-- Ctrl-C: every task is cancelled, their cleanups get a few seconds.
local function interrupted()
  cancel_all(false, "interrupted")
  local deadline = core.loop.monotonic_ms() + CLEANUP_WAIT_MS
  while n_live > 0 and core.loop.monotonic_ms() < deadline do
    run_ready()
    local woken, again = loop_step(math.min(100, math.max(0, deadline - core.loop.monotonic_ms())))
    wake(woken)
    if again then break end             -- a second Ctrl-C: no more waiting
  end
  cancel_all(true, "interrupted")
  return nil, Error.new { kind = "interrupted", message = "interrupted: every task was cancelled" }
end

local function check_ms(fname, ms)
  if ms == nil then return 0 end
  if type(ms) ~= "number" or ms ~= ms or ms < 0 then
    check.fail(fname, 1, "timeout_ms: a number >= 0 expected")
  end
  return math.min(math.ceil(ms), 86400000)
end

local function not_in_task(fname)
  if current then check.raise(fname .. ": called from inside a task (it drives the tasks)") end
end

-- How long one step resumes tasks, at least: a frame loop's step(0)
-- stays short when many tasks are ready at once (32 new tasks each
-- building a request take ~10 ms); the others go on at the next step.
local STEP_BUDGET_US = 1000

--- step(timeout_ms): resumes the tasks that can go on (for about a
-- millisecond, or timeout_ms if longer: the rest on the next step), drives
-- the loop once, waiting at most timeout_ms (0: not at all) for something
-- to happen, and resumes what that woke. Returns the number of tasks not
-- yet ended, or nil, Error(interrupted) after Ctrl-C (every task
-- cancelled).
function M.step(timeout_ms)
  local ms = check_ms("step", timeout_ms)
  not_in_task("step")
  local started = core.loop.monotonic_ms()
  local deadline = core.loop.monotonic_us() + math.max(STEP_BUDGET_US, ms * 1000)
  run_ready(deadline)
  local wait = 0
  if n_live > 0 and not has_ready() then wait = math.max(0, ms - (core.loop.monotonic_ms() - started)) end
  local woken, intr = loop_step(wait)
  wake(woken)
  if intr then return interrupted() end
  run_ready(deadline)
  return n_live
end

--- run([timeout s]): steps until every task has ended. true, or nil and
-- Error(interrupted) / Error(timeout) (the tasks go on then).
function M.run(timeout)
  not_in_task("run")
  if timeout ~= nil and (type(timeout) ~= "number" or timeout <= 0) then
    check.fail("run", 1, "timeout: a positive number of seconds expected")
  end
  local deadline = timeout and core.loop.monotonic_ms() + timeout * 1000
  while n_live > 0 do
    local left = deadline and deadline - core.loop.monotonic_ms()
    if left and left <= 0 then
      return nil, Error.new { kind = "timeout", message = string.format(
        "%d task(s) still running after %g s", n_live, timeout) }
    end
    local n, err = M.step(left and math.min(left, 100) or 100)
    if not n then return nil, err end
  end
  return true
end

--- pollfds() -> {{fd=, events="r"|"w"|"rw"}, ...}, timeout_ms: what a
-- host's own loop waits on before calling step(0). timeout_ms is 0 when a
-- task can go on now, -1 when nothing is scheduled.
function M.pollfds()
  local fds, timeout = core.loop.loop_pollfds()
  if has_ready() then timeout = 0 end
  return fds, timeout
end

local Channel = {}
Channel.__index = Channel

--- channel(): a queue a task (or the main thread) can wait on: push()
-- from anywhere, pop() waits for an item (yielding inside a task,
-- driving the loop elsewhere).
function M.channel()
  -- head and tail counted apart: a popped slot is nil, so #items would lie
  return setmetatable({ items = {}, head = 1, tail = 0, closed = false }, Channel)
end

function Channel:push(v)
  self.tail = self.tail + 1
  self.items[self.tail] = v
  if self.waiter then core.loop.unpark(self.waiter) end
end

--- No more items will come: pop() returns nil once the queue is empty.
function Channel:close()
  self.closed = true
  if self.waiter then core.loop.unpark(self.waiter) end
end

--- The next item, or nil once closed and empty, or nil, Error(interrupted).
function Channel:pop()
  while self.head > self.tail do
    if self.closed then return nil end
    if current then
      if not core.loop.can_yield() then
        check.raise("a task can only wait from its own coroutine (not a coroutine of its own making)")
      end
      self.waiter = coroutine.running()
      core.loop.park()
      self.waiter = nil
    else
      local n, err = M.step(100)
      if not n then return nil, err end
    end
  end
  local v = self.items[self.head]
  self.items[self.head] = nil
  self.head = self.head + 1
  return v
end

--- completed(list) -> iterator of i, task in the order the tasks end
-- (list: tasks, or false/nil holes, which are skipped). Inside a task it
-- yields between them, elsewhere it drives the loop (Ctrl-C: the tasks
-- are cancelled and the iteration ends).
function M.completed(list)
  if type(list) ~= "table" then
    check.fail("completed", 1, "table of tasks expected, got " .. type(list))
  end
  local ch, pending = M.channel(), 0
  for i, t in pairs(list) do
    if t then
      pending = pending + 1
      t:_on_finish(function() ch:push(i) end)
    end
  end
  return function()
    if pending == 0 then return nil end
    local i = ch:pop()
    if i == nil then return nil end
    pending = pending - 1
    return i, list[i]
  end
end

--- Waits for every task of list to end (see completed): true, or nil and
-- Error(interrupted) after Ctrl-C (the tasks were cancelled).
function M.wait_all(list)
  -- the iterator called, not looped over with for-in: PUC 5.1 cannot
  -- yield from inside a for-in's call of its iterator
  local next_done = M.completed(list)
  while next_done() do end
  for _, t in pairs(list) do
    if t and not t:done() then
      return nil, Error.new { kind = "interrupted", message = "interrupted while waiting for tasks" }
    end
  end
  return true
end

------------------------------------------------------------------------
-- waits inside a task
------------------------------------------------------------------------

-- A C function that would wait inside a task returns YIELD, k, ...: the
-- thread yields YIELD to the scheduler (resume() above sees it) and, once
-- woken, k(...) goes on with the call (it may wait again). Tail calls: a
-- wait of many rounds takes no stack.
local settle

local function wait_then(k, ...)
  coroutine.yield(YIELD)
  return settle(k(...))
end

function settle(first, ...)
  if first == YIELD then return wait_then(...) end
  return first, ...
end

-- Every C function that can wait, wrapped in place in each table that
-- holds it (a facade loaded again finds Lua wrappers there, and leaves
-- them).
local function settle_all(where, names)
  for _, name in ipairs(names) do
    local f = where[name]
    if type(f) == "function" and debug.getinfo(f, "S").what == "C" then
      where[name] = function(...) return settle(f(...)) end
    end
  end
end
settle_all(core, { "sleep", "park", "terminal_open" })
settle_all(core.loop, { "sleep", "park" })
settle_all(core.term, { "terminal_open" })
settle_all(core.exec.Client, { "request", "_request" })
settle_all(core.cp.Manager, { "_request" })
settle_all(core.loop.Transfer, { "step" })
settle_all(core.Terminal, { "_service" })

------------------------------------------------------------------------
-- streams opened inside a task
------------------------------------------------------------------------

-- A Transfer opened by a task (Client:_open, Manager:_open: every
-- stream, the library's and a caller's own) belongs to it: cancelling the
-- task closes it even when the task was waiting on something else at that
-- moment. Weak keys: a Transfer the task dropped is not kept alive by
-- this. (The C openers are wrapped in place: a behaviour of the task
-- scheduler, not a method of its own.)
local function adopt(x, ...)
  if x and current then current.transfers[x] = true end
  return x, ...
end

for _, class in ipairs { core.exec.Client, core.cp.Manager } do
  local open = class._open
  class._open = function(self, ...) return adopt(open(self, ...)) end
end

------------------------------------------------------------------------
-- coroutines of the library inside a task
------------------------------------------------------------------------

--- coroutine(fn): coroutine.create, but created inside a task its calls
-- may yield to the scheduler too, when resumed with M.resume.
function M.coroutine(fn)
  local co = coroutine.create(fn)
  local t = by_thread[coroutine.running()]
  if t then register(t, co) end
  return co
end

--- resume(co, ...): coroutine.resume that passes the scheduler's yields
-- of co on to the scheduler (this thread is a task's then) and resumes
-- co once woken, so the caller sees only co's own yields.
function M.resume(co, ...)
  local r = compat.pack(coroutine.resume(co, ...))
  while r[1] and r[2] == YIELD and coroutine.status(co) == "suspended" do
    coroutine.yield(YIELD)
    r = compat.pack(coroutine.resume(co))
  end
  return compat.unpack(r, 1, r.n)
end

return M
