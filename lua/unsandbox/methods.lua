--- The one way methods are added to a class: the method tables of the C
-- userdata (core.exec.Client, core.cp.Manager, core.cp.Sandbox). A module gives its
-- methods as a table (`local Client = {}; function Client:x() ... end;
-- return Client`) and add() copies them into the class and runs every
-- public one in the frame of a public call (wrap.lua: its meter, its
-- trace, interrupts as Errors). A name the class already has from another
-- module (or from C) is refused, so two modules never silently replace
-- each other's method; the same module added again (the facade loaded a
-- second time, as specs do) replaces its own. The
-- Client's groups are added when init.lua loads or on first use
-- (public.lua); the Manager's and the Sandbox's by cp/init.lua.
-- Internal module.
local wrap = require "unsandbox.wrap"

local M = {}

local origins = setmetatable({}, { __mode = "k" })   -- class -> name -> module

--- Adds the functions of group (the methods of module from, a name) to
-- class. frame: {skip = {name = true} (methods that make no exchange or
-- run the caller's code around their calls: not framed), trace = true (a
-- Client: one trace per call), unstamped = {name = true} (results that
-- are not documents)}.
function M.add(class, group, frame, from)
  local origin = origins[class] or {}
  origins[class] = origin
  for name, fn in pairs(group) do
    if rawget(class, name) ~= nil and origin[name] ~= from then
      error("unsandbox: method '" .. tostring(name) .. "' of " .. from .. " is defined by " ..
        (origin[name] or "the C module") .. " already", 2)
    end
    class[name], origin[name] = fn, from
  end
  wrap.methods(class, frame.skip or {}, frame)
  return class
end

return M
