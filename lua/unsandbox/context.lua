--- Values bound per coroutine (spec §3, §7.1; ARCHITECTURE "Ambient
-- acting subject"): the Control Plane's X-Acting-Subject of a Manager and
-- the trace id of unsandbox.trace(). A Manager is shared by every
-- coroutine of a program, so a subject bound on the Manager itself would
-- leak into requests of other coroutines; here each coroutine (the main
-- thread included) has its own value, and a coroutine created inside a
-- binding starts with none. Bindings nest: closing one restores the value
-- that was bound before it. Internal module.
local compat = require "unsandbox.compat"

local M = {}

-- every store made by M.store(), so a task can copy all of a coroutine's
-- bindings at once (weak: a store nobody uses goes away). A task
-- (unsandbox.spawn) starts with a copy of what its spawner had bound
-- (capture/apply), and after that has its own.
local stores = setmetatable({}, { __mode = "k" })

-- store[owner][coroutine] = value; weak keys, so neither a Manager nor a
-- finished coroutine is kept alive by a binding it never closed.
local function slot(store, owner)
  local per = store[owner]
  if not per then
    per = setmetatable({}, { __mode = "k" })
    store[owner] = per
  end
  return per
end

local function current_co()
  return compat.running()
end

--- The value bound for the running coroutine, or nil.
function M.get(store, owner)
  local per = store[owner]
  return per and per[current_co()]
end

local Binding = { __name = "unsandbox.Binding" }
Binding.__index = Binding

--- Restores what was bound before; idempotent. A binding is closed by
-- close() (or the `<close>` of a 5.4 caller's block).
function Binding:close()
  if self.closed then return end
  self.closed = true
  local per = self.store[self.owner]
  if per then per[self.co] = self.previous end
end
Binding.__close = Binding.close

function Binding:__tostring()
  return "unsandbox.Binding (" .. (self.closed and "closed" or "open") .. ")"
end

--- Binds value for the running coroutine; returns the Binding to close.
function M.bind(store, owner, value)
  local per = slot(store, owner)
  local co = current_co()
  local b = setmetatable({ store = store, owner = owner, co = co, previous = per[co] }, Binding)
  per[co] = value
  return b
end

--- Runs fn(...) with value bound, and unbinds whatever way fn ends
-- (return or error; a coroutine dropped while suspended inside it takes
-- its bindings with it).
function M.with(store, owner, value, fn, ...)
  return compat.closing({ M.bind(store, owner, value), n = 1 }, fn, ...)
end

--- A weak-keyed store for M.bind / M.get.
function M.store()
  local s = setmetatable({}, { __mode = "k" })
  stores[s] = true
  return s
end

--- Everything bound for the running coroutine, in every store: a list of
-- {store, owner, value}.
function M.capture()
  local co, out = current_co(), {}
  for store in pairs(stores) do
    for owner, per in pairs(store) do
      local v = per[co]
      if v ~= nil then out[#out + 1] = { store, owner, v } end
    end
  end
  return out
end

--- Binds a capture for coroutine co (a new task's, before it runs; it
-- needs no unbinding: the coroutine's entries go with it).
function M.apply(captured, co)
  for _, b in ipairs(captured) do
    local store, owner, v = b[1], b[2], b[3]
    local per = store[owner]
    if per then per[co] = v end
  end
end

-- The trace bound per coroutine, shared by both clients: unsandbox.trace
-- binds it, every request sends traceparent 00-<trace>-<span>-<flags>.
M.traces = M.store()
M.TRACE_OWNER = M.traces

-- The Control Plane's acting subject, bound per Manager and coroutine:
-- Manager -> coroutine -> X-Acting-Subject.
M.subjects = M.store()

return M
