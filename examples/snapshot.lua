-- snapshot.lua: keep state in a session, snapshot it, break it, restore it.
local unsandbox = require "unsandbox"

local session = assert(unsandbox.create_session())
print("session " .. session.id)

local function sh(command)
  local r = assert(unsandbox.session_execute(session.id, command))
  return r.stdout
end

sh("echo 'version 1' > app.conf")
local snap = assert(unsandbox.session_snapshot(session.id, { name = "good config" }))
print("snapshot " .. snap.id .. " (" .. snap.name .. ")")

sh("echo 'broken' > app.conf")
io.write("after the change:  ", sh("cat app.conf"))

assert(unsandbox.restore_snapshot(snap.id))
io.write("after the restore: ", sh("cat app.conf"))

assert(unsandbox.delete_snapshot(snap.id))
assert(unsandbox.delete_session(session.id))
print("cleaned up")
