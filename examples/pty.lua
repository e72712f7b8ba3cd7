-- pty.lua: an interactive program in a sandbox's PTY shell session.
--   unlua --local examples/pty.lua
-- A session is one bash on a pseudo-terminal that lives between calls:
-- the working directory and variables carry over, and a program that
-- reads its terminal (read, python3 -i) gets what send() types.
local unsandbox = require "unsandbox"

local sb <close> = assert(unsandbox.Sandbox.create {})
local sh = sb:shell()
print("sandbox " .. sb:name() .. ", shell session " .. sh.id)

local r = assert(sh:exec("cd /tmp && GREETING=hello && tty"))
io.write("terminal: ", r.stdout)
io.write("state kept: ", assert(sh:exec("echo $GREETING from $(pwd)")).stdout)

-- an interactive program: started async, then fed line by line
r = assert(sh:exec("read -p 'your name? ' who; echo \"hi, $who\"", { async = true }))
io.write("prompt: ", r.stdout, "\n")
r = assert(sh:send("Ada"))
io.write("answer: ", r.stdout)

-- a long command, interrupted: kill gives a fresh shell
assert(sh:exec("sleep 60", { async = true }))
r = assert(sh:kill())
print(string.format("killed: exit code %d, restarted %s", r.exit_code, tostring(r.session_restarted)))
io.write("after the kill: ", assert(sh:exec("echo \"a fresh shell: GREETING='$GREETING'\"")).stdout)
