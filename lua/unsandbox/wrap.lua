--- The frame every public method of both APIs runs in (Client, Manager,
-- Sandbox, Shell): made once here, so no method can forget a part of it.
--
--   * one meter for the whole call (observe.call): every exchange inside
--     it, retries, polls and nested library calls included, adds to it,
--     and what the call returns carries its `timing`;
--   * for a Client, one trace for the call unless the coroutine bound one
--     (a job's submission and all its polls share a trace id);
--   * an interrupt raised as a Lua error (unlua's Ctrl-C hook raises the
--     string "interrupted!" at whatever Lua instruction runs next) leaves
--     the call as an unsandbox.Error of kind interrupted, the shape every
--     other interruption has (abandon.lua adds job_id and cancelled for a
--     job the call started itself).
--
-- The outermost public call of a coroutine does all of this; a public
-- method that another one calls just runs inside it. Methods that run the
-- caller's own code around their calls (with_subject, lines) or make no
-- exchange are left out. Internal module.
local core = require "unsandbox.core"
local compat = require "unsandbox.compat"
local context = require "unsandbox.context"
local Error = require "unsandbox.errors"
local observe = require "unsandbox.observe"

local M = {}

local wrapped = setmetatable({}, { __mode = "k" })   -- functions made here

--- Is e the host's Ctrl-C raised as a Lua error ("interrupted!", maybe
-- with a position in front)?
function M.is_interrupt(e)
  return type(e) == "string" and e:find("interrupted!$") ~= nil
end

--- The Error an interrupt raised as a Lua error becomes.
function M.interrupted(what)
  return Error.new { kind = "interrupted", message = "interrupted" .. (what and (" " .. what) or "") }
end

-- Raises again what a call raised: the host's interrupt as an Error.
local function rethrow(e)
  if M.is_interrupt(e) then e = M.interrupted() end
  error(e, 0)
end

-- The trace binding b (or nil) closed, then the call's outcome.
local function outcome(b, ok, ...)
  if b then b:close() end
  if ok then return ... end
  rethrow((...))
end

local function new_trace()
  return { trace_id = core.trace.new_traceparent():sub(4, 35), flags = "01" }
end

-- The frame of one call of method (a nested call just runs).
local function frame(stamp, traced, method, ...)
  if observe.current() then return method(...) end
  local b = traced and not context.get(context.traces, context.TRACE_OWNER)
    and context.bind(context.traces, context.TRACE_OWNER, new_trace()) or nil
  return outcome(b, compat.pcall(observe.call, stamp, method, ...))
end

--- Wraps every function of class (a method table) but those named in
-- skip and those starting with "_". opts: trace (a Client: one trace per
-- call), unstamped (names whose results are not documents: only their
-- errors get timing). Called again when methods are added (a group loaded
-- on first use), it wraps only the new ones.
function M.methods(class, skip, opts)
  opts = opts or {}
  local unstamped = opts.unstamped or {}
  for name, method in pairs(class) do
    if type(method) == "function" and not skip[name] and not name:match("^_")
       and not wrapped[method] then
      local stamp, traced = not unstamped[name], opts.trace or false
      local f = function(...) return frame(stamp, traced, method, ...) end
      wrapped[f] = true
      class[name] = f
    end
  end
end

--- Runs fn(...) outside the running call's frame: the caller's own code
-- (on_chunk, on_poll, on_sudo, on_data) whose library calls are its own.
function M.outside(fn, ...)
  return observe.outside(fn, ...)
end

return M
