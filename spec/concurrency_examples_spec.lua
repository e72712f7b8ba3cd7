-- #integration: the three ways of README "Concurrency and game loops" run
-- against a real unsandboxd: tasks (examples/tasks.lua), a C host's frame
-- loop calling step(0) (examples/embed/frame_loop), and an external loop
-- (examples/luv_loop.lua, luv). Each checks every job's own output; the
-- frame loop reports its timing; the spec asserts nothing of it beyond "it never waited
-- for a job" (a loaded machine stretches frames, a blocking call would
-- stretch one by a whole second).
-- One Lua: the examples run as programs of their own (unlua).
local server = require "spec.helpers.unsandboxd"
local proc = require "spec.helpers.proc"
local fs = require "spec.helpers.fs"

describe("concurrency examples #integration", function()
  local srv, env, home

  setup(function()
    srv = server.start { args = { "--workers", "16" } }
    home = fs.tmpdir("unsb-home")
    env = { UNSANDBOX_URL = srv.url, UNSANDBOX_PUBLIC_KEY = srv.public_key,
            UNSANDBOX_SECRET_KEY = srv.secret_key, HOME = home }
  end)
  teardown(function()
    srv.stop()
    fs.rm_rf(home)
  end)

  it("tasks.lua runs its jobs together and in completion order", function()
    local out, code = proc.run("timeout 120 bin/unlua examples/tasks.lua", env)
    assert.are.equal(0, code, out)
    assert.matches("python %-> py\nbash %-> sh\nlua %-> lua\n", out)
    assert.matches("finished: #2 first\nfinished: #1 second\n", out)
    assert.matches("squares: 1 4 9 16\n", out)
  end)

  it("the C frame loop runs 32 one-second jobs while stepping at 60 Hz", function()
    local out, code = proc.run("timeout 120 examples/embed/frame_loop lua 32", env)
    assert.are.equal(0, code, out)
    assert.matches("jobs 32 of 32 right\n", out)
    local frames = tonumber(out:match("frames (%d+)"))
    local step = tonumber(out:match("longest step%(0%) ([%d.]+) ms"))
    -- 32 jobs of a second each: at least a second of frames went by
    assert.is_true(frames >= 50, out)
    -- a step that waited for a job would take about a second
    assert.is_true(step < 500, out)
  end)

  it("the frame loop refuses a bad job count", function()
    local out, code = proc.run("examples/embed/frame_loop lua 0", env)
    assert.are.equal(1, code)
    assert.matches("usage", out)
  end)

  it("luv_loop.lua drives the jobs from luv's loop while its own timer ticks", function()
    local out, code = proc.run("timeout 120 bin/unlua examples/luv_loop.lua", env)
    assert.are.equal(0, code, out)
    local right, ticks = out:match("(%d+) of 8 jobs right in %d+ ms; the application ticked (%d+) times")
    assert.equal("8", right, out)
    -- the application's 10 ms timer kept running during the ~1 s jobs (a
    -- loop blocked by them would tick about once; a loaded machine ticks
    -- less often than every 10 ms, but far more than that)
    assert.is_true(tonumber(ticks) >= 10, out)
  end)
end)
