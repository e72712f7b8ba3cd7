-- #unit specs of the terminal's pure parts (no server, no socket): the
-- detach key of `un session attach`, the decoding of control messages,
-- the option and argument checks of session_attach, session_shell and
-- Terminal methods (misuse raises before anything is sent), the module
-- functions, and the tty helpers' refusals. The URL rules are in C
-- (csrc/tests/core_ws_url_test.c).
local unsandbox = require "unsandbox"
local core = require "unsandbox.core"
local terminal = require "unsandbox.exec.terminal"
local lua = require "spec.helpers.lua"

describe("unsandbox.terminal #unit", function()
  describe("detach_filter()", function()
    local D = "\29"

    it("passes ordinary bytes through", function()
      local f = terminal.detach_filter()
      assert.are.same({ "ls -l\r", false }, { f("ls -l\r") })
      assert.are.same({ "", false }, { f("") })
    end)

    it("detaches on Ctrl-] then d, dropping what follows", function()
      local f = terminal.detach_filter()
      assert.are.same({ "ab", true }, { f("ab" .. D .. "dzz") })
    end)

    it("sends one Ctrl-] for two, and both bytes for Ctrl-] then another", function()
      local f = terminal.detach_filter()
      assert.are.same({ "a" .. D .. "b", false }, { f("a" .. D .. D .. "b") })
      assert.are.same({ D .. "x", false }, { f(D .. "x") })
      assert.are.same({ D .. "D", false }, { f(D .. "D") })   -- only a lower-case d detaches
    end)

    it("keeps a Ctrl-] at the end of one chunk for the next", function()
      local f = terminal.detach_filter()
      assert.are.same({ "a", false }, { f("a" .. D) })
      assert.are.same({ "", true }, { f("d") })
      f = terminal.detach_filter()
      assert.are.same({ "", false }, { f(D) })
      assert.are.same({ D .. "q", false }, { f("q") })
      assert.are.same({ "", false }, { f(D) })
      assert.are.same({ D, false }, { f(D) })
      assert.are.same({ "d", false }, { f("d") })   -- the pair was spent: d is a d
    end)

    it("handles a long paste with many Ctrl-] in linear time", function()
      local f = terminal.detach_filter()
      local paste = string.rep("x" .. D .. D, 100000)
      local out, detached = f(paste)
      assert.is_false(detached)
      assert.are.equal(string.rep("x" .. D, 100000), out)
    end)
  end)

  describe("event_of()", function()
    it("decodes exit and detached", function()
      assert.are.same({ type = "exit", exit_code = 3 }, terminal.event_of('{"type":"exit","exit_code":3}'))
      assert.are.same({ type = "exit" }, terminal.event_of('{"type":"exit"}'))
      assert.are.same({ type = "detached" }, terminal.event_of('{"type":"detached"}'))
      assert.are.equal("integer", lua.math_type(terminal.event_of('{"type":"exit","exit_code":7.0}').exit_code))
    end)

    it("passes an unknown type on without nulls", function()
      assert.are.same({ type = "bell" }, terminal.event_of('{"type":"bell","x":null}'))
    end)

    it("refuses malformed, typeless and wrongly typed messages", function()
      for _, bad in ipairs { "", "{", "[]", "42", '{"type":1}', '{"kind":"exit"}', "null" } do
        local ev, err = terminal.event_of(bad)
        assert.is_nil(ev, bad)
        assert.are.equal("protocol", err.kind)
      end
      for _, bad in ipairs { '"three"', "3.5", "true", "{}" } do
        local ev, err = terminal.event_of('{"type":"exit","exit_code":' .. bad .. '}')
        assert.is_nil(ev, bad)
        assert.matches("exit_code", err.message)
      end
    end)
  end)

  describe("checks before anything is sent", function()
    -- nothing listens here: a check that let a call through would fail
    -- with a transport error instead of raising
    local c
    setup(function()
      c = unsandbox.client { url = "http://127.0.0.1:9", public_key = "pk", secret_key = "s3cr3t-value" }
    end)
    teardown(function() c:close() end)

    it("session_attach refuses bad ids and options", function()
      assert.has_error(function() c:session_attach() end)
      assert.has_error(function() c:session_attach(42) end)
      assert.has_error(function() c:session_attach("a/b") end)
      assert.has_error(function() c:session_attach("..") end)
      assert.has_error(function() c:session_attach(string.rep("a", 200)) end)
      assert.has_error(function() c:session_attach("s", "opts") end)
      assert.has_error(function() c:session_attach("s", { unknown = 1 }) end)
      assert.has_error(function() c:session_attach("s", { cols = 80 }) end)
      assert.has_error(function() c:session_attach("s", { cols = 80, rows = 1001 }) end)
      assert.has_error(function() c:session_attach("s", { cols = 1.5, rows = 10 }) end)
      assert.has_error(function() c:session_attach("s", { connect_timeout = 0 }) end)
      assert.has_error(function() c:session_attach("s", { connect_timeout = "1" }) end)
      assert.has_error(function() c:session_attach("s", { max_input = 0 }) end)
    end)

    it("names the caller's line, not the library's", function()
      local ok, err = pcall(function() c:session_attach("s", { colour = 1 }) end)
      assert.is_false(ok)
      assert.matches("terminal_unit_spec.lua", err)
      assert.matches("colour", err)
    end)

    it("session_shell refuses bad input and options", function()
      assert.has_error(function() c:session_shell("s") end)
      assert.has_error(function() c:session_shell("s", 42) end)
      assert.has_error(function() c:session_shell("s", "x", { timeout = -1 }) end)
      assert.has_error(function() c:session_shell("s", "x", { max_output = 0 }) end)
      assert.has_error(function() c:session_shell("s", "x", { debug = true }) end)
    end)

    it("a refused connection is nil, Error, not a raise", function()
      local t, err = c:session_attach("s", { connect_timeout = 5 })
      assert.is_nil(t)
      assert.are.equal("transport", err.kind)
      assert.matches("ws://127.0.0.1:9/sessions/s/shell", err.message)
      assert.is_nil(tostring(err):find("s3cr3t", 1, true))
    end)

    it("Terminal methods check their arguments first", function()
      local T = core.Terminal
      assert.has_error(function() T.resize(nil, 0, 24) end)
      assert.has_error(function() T.resize(nil, 80, 1001) end)
      assert.has_error(function() T.resize(nil, 80.5, 24) end)
      assert.has_error(function() T.send(nil, {}) end)
      assert.has_error(function() T.read(nil, -1) end)
      assert.has_error(function() T._send(nil, "x") end)   -- not a Terminal
    end)

    it("core.terminal_open refuses a closed client and bad options", function()
      local dead = unsandbox.client { url = "http://127.0.0.1:9", public_key = "pk", secret_key = "sk" }
      assert.has_error(function() core.terminal_open(dead, "s", { nope = 1 }) end)
      assert.has_error(function() core.terminal_open(dead, "s", { max_input = 0 }) end)
      dead:close()
      assert.has_error(function() core.terminal_open(dead, "s") end, "attempt to use a closed Client")
      local t, kind, msg = core.terminal_open(c, "bad/id", { connect_timeout = 1000 })
      assert.is_nil(t)
      assert.are.equal("validation", kind)
      assert.matches("session id", msg)
    end)
  end)

  describe("the module", function()
    it("has session_attach and session_shell as module functions", function()
      assert.is_function(unsandbox.session_attach)
      assert.is_function(unsandbox.session_shell)
    end)
  end)

  describe("tty helpers", function()
    it("refuse what is not a terminal or a saved state", function()
      local cols, msg = core.tty_size(99999)
      assert.is_nil(cols)
      assert.is_string(msg)
      assert.has_error(function() core.tty_restore(0, "short") end)
      assert.has_error(function() core.tty_size(-1) end)
      assert.has_error(function() core.fd_read(0, 0) end)
      assert.has_error(function() core.fd_read(0, 2 ^ 30) end)
    end)

    it("write all of a string to a fd, or say why not", function()
      assert.is_true(core.fd_write(1, ""))
      local ok, msg = core.fd_write(99999, "x")
      assert.is_nil(ok)
      assert.matches("^write: ", msg)
      assert.has_error(function() core.fd_write(-1, "x") end)
      assert.has_error(function() core.fd_write(1, {}) end)
      assert.has_error(function() core.fd_write(1) end)
    end)

    it("take no signal that did not come", function()
      assert.is_true(core.tty_signals(true))
      assert.is_nil(core.tty_signal_take())
      assert.is_true(core.tty_signals(false))
    end)
  end)
end)
