-- un's command table is the one source of its parser, its --help and its
-- man page: every command and action has a --help that lists every option
-- the parser takes for it, the parser refuses the options it does not
-- list, and docs/man/un.1 is what the table generates.
-- One Lua: un's command table runs under unlua (5.4) only.
local commands = require "unsandbox.cli.commands"
local help = require "unsandbox.cli.help"
local options = require "unsandbox.cli.options"
local parse = require "unsandbox.cli.parse"
local proc = require "spec.helpers.proc"

-- usage(msg) as the CLI's: raises msg
local function usage(msg) error({ usage = msg }, 0) end

local function parsed(args)
  local ok, o = pcall(parse.parse, args, commands, usage)
  if ok then return o end
  assert(type(o) == "table" and o.usage, tostring(o))
  return nil, o.usage
end

-- An argument list that satisfies an action's `args`.
local function filler(entry)
  local min = parse.arity(entry.args)
  local words = {}
  for i = 1, min do words[i] = "w" .. i end
  return words
end

-- Every (command, action or nil) pair of the table.
local function entries()
  local list = {}
  for _, c in ipairs(commands) do
    if c.actions then
      for _, a in ipairs(c.actions) do list[#list + 1] = { c, a } end
    else list[#list + 1] = { c } end
  end
  return list
end

local function words_of(c, a)
  local w = {}
  if c.name ~= "run" then w[#w + 1] = c.name end
  if a then w[#w + 1] = a.name end
  return w
end

describe("un's command table #unit", function()
  it("every entry has a summary and a function", function()
    for _, e in ipairs(entries()) do
      local c, a = e[1], e[2]
      local entry = a or c
      assert.is_string(entry.summary, c.name)
      assert.is_function(entry.run, c.name .. " " .. (a and a.name or ""))
    end
  end)

  it("help lists every option the parser takes, and the parser takes each of them", function()
    for _, e in ipairs(entries()) do
      local c, a = e[1], e[2]
      local text = a and help.action(c, a) or help.command(c)
      local keys = options.keys_of(c.api, parse.own_options(c, a))
      for _, k in ipairs(keys) do
        local def = options.OPTIONS[k]
        assert.is_truthy(text:find(options.spelling(k), 1, true), k .. " missing from the help of " .. c.name)
        if k ~= "help" then
          local args = words_of(c, a)
          args[#args + 1] = def.flag
          if def.value then
            args[#args + 1] = ({ ttl = "5", account = "0", timeout = "5", limit = "3", network = "zerotrust",
              subject = string.rep("a", 32), env = "A=1" })[k] or "x"
          end
          for _, w in ipairs(filler(a or c)) do args[#args + 1] = w end
          local o, err = parsed(args)
          assert.is_table(o, table.concat(args, " ") .. ": " .. tostring(err))
          assert.is_not_nil(o[k], k)
        end
      end
    end
  end)

  it("refuses an option of another command, naming the command and its help", function()
    local o, err = parsed { "session", "create", "--purge" }
    assert.is_nil(o)
    assert.equal("--purge is not an option of un session create (un session create --help lists them)", err)
    o, err = parsed { "sandbox", "run", "--ttl", "3", "box", "ls" }
    assert.is_nil(o)
    assert.matches("%-%-ttl is not an option of un sandbox run", err)
  end)

  it("counts arguments and names what is missing or extra", function()
    assert.equal("un session get: ID expected (un session get --help)", select(2, parsed { "session", "get" }))
    assert.equal("un session get: unexpected argument 'b' (un session get --help)",
      select(2, parsed { "session", "get", "a", "b" }))
    local o = assert(parsed { "session", "exec", "id", "--", "ls", "-la" })
    assert.same({ "id", "ls", "-la" }, o.words)
  end)

  it("suggests near names for a misspelt action or option", function()
    assert.matches("did you mean 'create'%?", select(2, parsed { "session", "creat" }))
    assert.matches("did you mean '%-%-json'%?", select(2, parsed { "--jsn", "languages" }))
  end)

  it("a command alone is its default action; --help anywhere is help", function()
    assert.equal("list", assert(parsed { "session" }).action.name)
    assert.equal("status", assert(parsed { "local" }).action.name)
    assert.is_true(assert(parsed { "session", "--help" }).help)
    assert.is_true(assert(parsed { "sandbox", "run", "-h" }).help)
  end)
end)

describe("un --help #integration", function()
  it("answers for every command and action, exit 0", function()
    for _, e in ipairs(entries()) do
      local c, a = e[1], e[2]
      local args = table.concat(words_of(c, a), " ")
      local out, code = proc.run("bin/un " .. args .. " --help")
      assert.equal(0, code, args .. ": " .. out)
      assert.matches("^usage: un", out, nil, args)
    end
  end)
end)

describe("docs/man/un.1 #unit", function()
  it("is what the command table generates", function()
    local out, code = proc.run("lua5.4 scripts/man-un.lua --check")
    assert.equal(0, code, out)
  end)

  it("has a section per command", function()
    local page = assert(io.open("docs/man/un.1")):read("a")
    for _, c in ipairs(commands) do
      if c.name ~= "run" then assert.matches("\n.SS un " .. c.name .. "\n", page, 1, true) end
    end
  end)
end)
