-- #integration: the library in the hosts people embed Lua in, each a real
-- program against a real unsandboxd: the stock interpreters of every
-- supported Lua running the quickstart, a LÖVE game under xvfb-run that
-- runs jobs while it draws frames, and a Neovim plugin driven by the
-- editor's own event loop. Each uses the module built for its Lua
-- (build/<lua>/unsandbox/core.so; 5.4: lua/unsandbox/core.so).
-- One Lua: LÖVE and Neovim run the examples under their own LuaJIT.
local server = require "spec.helpers.unsandboxd"
local proc = require "spec.helpers.proc"
local fs = require "spec.helpers.fs"

-- the library's paths in this checkout for the interpreter of lua
local function paths(lua)
  local cdir = lua == "5.4" and "lua" or ("build/" .. lua)
  return { LUA_PATH = "lua/?.lua;lua/?/init.lua;;", LUA_CPATH = cdir .. "/?.so;;" }
end

describe("hosts #integration", function()
  local srv, home

  setup(function()
    srv = server.start()
    home = fs.tmpdir("unsb-home")
  end)
  teardown(function()
    srv.stop()
    fs.rm_rf(home)
  end)

  local function env(extra)
    local e = { UNSANDBOX_URL = srv.url, UNSANDBOX_PUBLIC_KEY = srv.public_key,
                UNSANDBOX_SECRET_KEY = srv.secret_key, SANDBOX_CONTROL_PLANE_URL = srv.cp_url,
                SANDBOX_TOKEN = srv.token, HOME = home, LUA_PATH_5_3 = false, LUA_PATH_5_4 = false,
                LUA_CPATH_5_3 = false, LUA_CPATH_5_4 = false }
    for k, v in pairs(extra or {}) do e[k] = v end
    return e
  end

  for _, t in ipairs { { "luajit", "luajit" }, { "5.1", "lua5.1" }, { "5.3", "lua5.3" },
                       { "5.4", "lua5.4" } } do
    local lua, interp = t[1], t[2]
    it("stock " .. interp .. " runs the quickstart, both APIs", function()
      local out, code = proc.run("timeout 300 " .. interp .. " examples/quickstart.lua", env(paths(lua)))
      assert.are.equal(0, code, out)
      assert.matches("[python] stdout: Python 3", out, 1, true)
      assert.matches("[bash] exit code 3", out, 1, true)
      assert.matches("step 2\n", out, 1, true)
      assert.matches("Hello from Python 3", out, 1, true)
      assert.matches("== A sandbox of the Control Plane\nsandbox quickstart runs as sb%-%x+\n", out)
      assert.matches("stream: tick 1\nstream: tick 2\nstream: tick 3\n", out, 1, true)
      assert.matches("checkpoint cp%-%d+%-%x+", out)
      assert.not_matches("the sandbox tour stopped", out, 1, true)
    end)
  end

  -- Under the sanitizers, LÖVE would need ASan's runtime preloaded to
  -- load the instrumented module, and with it preloaded LÖVE hangs in
  -- its own threads' start-up (SDL, OpenAL): the game runs in make test.
  local it_love = os.getenv("UNSB_SANITIZE") == "1" and pending or it
  it_love("a LÖVE game runs jobs as tasks while it draws frames, shows the results and quits", function()
    local out, code = proc.run("timeout 300 xvfb-run -a love examples/love", env { UNSB_LOVE_JOBS = "6" })
    assert.are.equal(0, code, out)
    for i, want in ipairs { "(python): 1", "(lua): xxx", "(bash): 28", "(python): 10", "(lua): xxxxxx",
                            "(bash): 49" } do
      assert.matches("job " .. i .. " " .. want .. "\n", out, 1, true)
    end
    local summary = out:match("6 of 6 jobs right in [^\n]*")
    assert.is_string(summary, out)
    local frames = tonumber(summary:match("(%d+) frames"))
    assert.is_true(frames > 1, summary)   -- frames went on while the jobs ran
    print("\n# LÖVE: " .. summary)
  end)

  it("a Neovim plugin runs the buffer without blocking the editor: its timer kept firing", function()
    local out, code = proc.run("timeout 180 nvim --headless -u NONE -c 'luafile examples/nvim/unsandbox.lua'",
      env())
    assert.are.equal(0, code, out)
    assert.matches("scratch buffer:\n  hello from nvim 42\n  %-%- python: exit code 0\n", out)
    assert.matches("self-test ok", out, 1, true)
    local ticks = tonumber(out:match("timer fired (%d+) times while the job ran"))
    -- the job sleeps 1 s and the timer fires every 10 ms: a blocked
    -- editor would have fired it not at all while the job ran
    assert.is_true(ticks ~= nil and ticks >= 2, out)
  end)
end)
