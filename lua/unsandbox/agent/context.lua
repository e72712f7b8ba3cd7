--- unsandbox.Context: a stateful interpreter in a Sandbox, run cell by
-- cell as a notebook kernel is (variables, imports and functions of one
-- cell are there in the next).
--
-- The protocol has no kernel; a context is a background Process
-- (process.lua) running a small driver of its language (drivers.lua):
-- python3, node, lua (lua5.4, lua, lua5.3, luajit or lua5.1) or bash.
-- A cell is one exec of the helper: its code is written to
-- cells/N.code (inline, or through the file routes when large), "N
-- TIMEOUT" is queued on the driver's stdin, and the exec waits in the
-- sandbox for cells/N.res. The driver points fd 1 and 2 at cells/N.out
-- and cells/N.err while the cell runs, so each cell's output is its own
-- whatever it prints (binary, partial lines, a prompt-like string), and
-- reports an exception as data. A cell over its timeout is interrupted by
-- the driver (python, node, lua) or, past a grace period, by SIGINT; if
-- it still runs, the interpreter is killed and the next run starts a
-- fresh one (result.restarted says so).
--
-- Like every resource a Context is closed by close() or a `<close>`
-- variable, which ends its interpreter. Made by `Sandbox:context`; its
-- field `language` names its interpreter. Using a closed Context raises
-- "attempt to use a closed Context".
-- @classmod Context
local check = require "unsandbox.check"
local core = require "unsandbox.core"
local transport = require "unsandbox.transport"
local helper = require "unsandbox.agent.helper"
local drivers = require "unsandbox.agent.drivers"
local Process = require "unsandbox.agent.process"

local Context = { __name = "unsandbox.Context" }
Context.__index = Context

local M = { class = Context }

local INLINE = 4000        -- code bytes sent inside the exec command
local WAIT_MS = 25000      -- longest wait of one exec
local GRACE_S = 3          -- after the timeout, before SIGINT, and again before the kill
local DEFAULT_TIMEOUT = 60

local LANGUAGES = { python = true, node = true, lua = true, bash = true }
local ALIASES = { python3 = "python", javascript = "node", js = "node", sh = "bash", shell = "bash" }

local function driver_file(language)
  local content = drivers[language]
  return { path = helper.path_of("ctx-" .. language, content, drivers.start[language].ext),
           content = content }
end

local function start(self)
  local f = driver_file(self.language)
  local cells = helper.ROOT .. "/p/" .. "%s/cells"
  local id = "c-" .. helper.random_hex()
  local line = string.format(drivers.start[self.language].run, f.path, string.format(cells, id))
  local ok, ierr = helper.run(self.m, self.key, "ready", {}, { needs = { f }, fname = "context" })
  if not ok then return nil, ierr end
  local p, err = Process.spawn(self.m, self.key, line, { id = id })
  if not p then return nil, err end
  self.process, self.n, self.need = p, 0, { f }
  return true
end

-- new(m, key, language, opts): see Sandbox:context. Runs an empty cell
-- to make sure the interpreter is there.
function M.new(m, key, language, opts)
  check.type("context", "language", language, "string")
  language = ALIASES[language] or language
  if not LANGUAGES[language] then
    check.fail("context", "language", "python, node, lua or bash expected, got '" .. language .. "'")
  end
  opts = check.options("context", opts, { timeout = true })
  check.positive("context", "timeout", opts.timeout)
  local self = setmetatable({ m = m, key = key, language = language,
    timeout = opts.timeout or DEFAULT_TIMEOUT }, Context)
  local ok, err = start(self)
  if not ok then return nil, err end
  local r, rerr = self:run("", { timeout = 30 })
  if not r then self:close(); return nil, rerr end
  if r.exit ~= nil and r.error and r.error.name == "Exit" then
    local _, stderr = self.process:read(0)
    self:close()
    return nil, helper.fail("sandbox", "context: the " .. language .. " interpreter did not start (exit " ..
      r.exit .. "): " .. tostring(stderr), { code = "unavailable" })
  end
  return self
end

function Context:__tostring()
  return "unsandbox.Context (" .. self.language .. (self.closed and ", closed" or "") .. ")"
end

local function open(self, fname)
  if self.closed then check.raise("attempt to use a closed Context (" .. fname .. ")") end
end

-- One exec of the cell op: "pending", "exited", status, or "done" and the
-- cell's {stdout, stderr, res = the driver's result}.
local function cell_call(self, n, tms, wait_ms, code)
  local out, err = helper.run(self.m, self.key, "cell", { self.process.id, tostring(n), tostring(tms),
    tostring(wait_ms), code }, { timeout = math.ceil(wait_ms / 1000) + 5, fname = "run", needs = self.need })
  if not out then return nil, err end
  local state, rest = out:match("^(%S+) ?([^\n]*)")
  if state == "pending" then return state end
  if state == "exited" then return state, tonumber(rest) end
  local res = state == "done" and transport.decode_json(rest)
  if type(res) ~= "table" or type(res.nout) ~= "number" or type(res.nerr) ~= "number" then
    return nil, helper.fail("protocol", "run: a malformed answer from the " .. self.language .. " driver")
  end
  local body = out:sub(#state + #rest + 3)
  return state, { stdout = body:sub(1, res.nout), stderr = body:sub(res.nout + 1, res.nout + res.nerr),
    res = res }
end

local function code_arg(self, code)
  if #code <= INLINE then return core.codec.base64_encode(code) end
  local name = ".unsb-cell-" .. helper.random_hex()
  local r, err = self.m:upload_file(name, code, self.key)
  if not r then return nil, err end
  return "@" .. name
end

local function result_of(a)
  local doc = a.res
  return { stdout = a.stdout, stderr = a.stderr, error = doc.error, value = doc.value, exit = doc.exit }
end

local function dead(self, status, why)
  self.dead = true
  return { stdout = "", stderr = "", exit = status, error = { name = why and "Timeout" or "Exit",
    message = why or ("the interpreter exited with status " .. tostring(status) ..
      "; its state is lost (the next run starts a fresh one)"), traceback = "" } }
end

-- Waits for cell n until deadline (monotonic ms); nil state = not done.
local function await(self, n, deadline, code)
  while true do
    local wait = math.max(0, math.min(WAIT_MS, deadline - core.loop.monotonic_ms()))
    local state, a = cell_call(self, n, math.floor(self.cell_timeout * 1000), wait, code)
    if not state then return nil, a end
    code = "-"
    if state ~= "pending" then return state, a end
    if core.loop.monotonic_ms() >= deadline then return "pending" end
  end
end

--- Runs one cell. A cell over its timeout is interrupted; if it does
-- not stop, the interpreter is killed (its state is lost) and the next
-- run starts a fresh one.
-- @tparam string code the cell
-- @tparam[opt] table opts `timeout` (s, default the context's, 60)
-- @treturn[1] table `{stdout, stderr, error, value, exit, restarted}`:
-- error nil or `{name, message, traceback}` (the interpreter's
-- exception, as data; name "Timeout" or "Exit" when it was killed or
-- died), value the repr of a last expression (python, node, lua), exit
-- the cell's status (bash) or the interpreter's if it died, restarted
-- true when this run had to start a fresh interpreter
-- @return[2] nil
-- @treturn[2] Error when the cell could not be run
-- @raise code not a string, a closed Context
function Context:run(code, opts)
  open(self, "run")
  check.type("run", "code", code, "string")
  opts = check.options("run", opts, { timeout = true })
  check.positive("run", "timeout", opts.timeout)
  local restarted
  if self.dead then
    local ok, err = self:restart()
    if not ok then return nil, err end
    restarted = true
  end
  self.cell_timeout = opts.timeout or self.timeout
  self.n = self.n + 1
  local n = self.n
  local arg, aerr = code_arg(self, code)
  if not arg then return nil, aerr end
  local deadline = core.loop.monotonic_ms() + math.floor((self.cell_timeout + GRACE_S) * 1000)
  local state, a = await(self, n, deadline, arg)
  if state == "pending" then
    helper.run(self.m, self.key, "kill", { self.process.id, "INT",
      self.language == "bash" and "children" or "pid" }, { fname = "run" })
    state, a = await(self, n, core.loop.monotonic_ms() + GRACE_S * 1000, "-")
    if state == "pending" then
      self.process:close()
      local r = dead(self, nil, "the cell ran longer than " .. self.cell_timeout ..
        " s and did not stop; the interpreter was killed and its state is lost")
      r.restarted = restarted
      return r
    end
  end
  if not state then return nil, a end
  local r
  if state == "exited" then r = dead(self, a)
  else r = result_of(a) end
  r.restarted = restarted
  return r
end

--- Ends the interpreter and starts a fresh one (the state is lost).
-- @treturn[1] boolean true
-- @return[2] nil
-- @treturn[2] Error
function Context:restart()
  open(self, "restart")
  if self.process then self.process:close() end
  self.dead = nil
  return start(self)
end

--- Ends the interpreter and closes the Context. Idempotent; `<close>`
-- and `unsandbox.with` call it.
-- @treturn[1] boolean true
-- @return[2] nil
-- @treturn[2] Error
function Context:close()
  if self.closed then return true end
  self.closed = true
  if self.process then return self.process:close() end
  return true
end

function Context:__close(block_err)
  local ok, err = self:close()
  if not ok and block_err == nil then error(err, 0) end
end

return M
