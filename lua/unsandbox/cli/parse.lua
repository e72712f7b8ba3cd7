--- The command line of `un`, read against the command table
-- (cli/commands.lua) and the option declarations (cli/options.lua): the
-- command and its action, the options (each checked against what that
-- command takes, its value read and checked), and the positional
-- arguments (counted against the action's `args`). Options may come
-- anywhere before `--`; after it every word is an argument. A word that
-- names a command is that command unless a file of that name exists
-- (`un jobs` runs a file called jobs when there is one). Errors are
-- usage errors naming the user's words (`un session creat: unknown
-- action`, with a near match). Internal module.
local options = require "unsandbox.cli.options"
local suggest = require "unsandbox.suggest"

local M = {}

local OPTIONS, BY_FLAG = options.OPTIONS, options.BY_FLAG

local function is_file(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

local function names_of(list)
  local out = {}
  for i, x in ipairs(list) do out[i] = x.name end
  return out
end

local function flags()
  local out = {}
  for flag in pairs(BY_FLAG) do out[#out + 1] = flag end
  table.sort(out)
  return out
end

-- The words and the options as given: {words, given = {key = raw value or
-- list}, order = {flag as written}, after = index of the first word after
-- `--`}.
local function tokens(args, usage)
  local t = { words = {}, given = {}, flags = {} }
  local i = 1
  while i <= #args do
    local a = args[i]
    if a == "--" then
      t.after = #t.words + 1
      for j = i + 1, #args do t.words[#t.words + 1] = args[j] end
      break
    end
    local flag, inline = a:match("^(%-%-[^=]+)=(.*)$")
    local key = BY_FLAG[flag or a]
    if key then
      local def, v = OPTIONS[key], true
      if def.value then
        if inline then v = inline
        else
          i = i + 1
          v = args[i]
          if v == nil then usage("option " .. a .. " needs a value (" .. def.value .. ")") end
        end
      elseif inline then usage("option " .. flag .. " takes no value") end
      if def.list then
        t.given[key] = t.given[key] or {}
        table.insert(t.given[key], v)
      else t.given[key] = v end
      t.flags[key] = flag or a
    elseif a:sub(1, 1) == "-" and a ~= "-" then
      local near = suggest.phrase(flag or a, flags())
      usage("unknown option " .. a .. (near ~= "" and near
        or " (a command run in a sandbox takes its options after --: un sandbox run NAME -- ls -la)"))
    else
      t.words[#t.words + 1] = a
    end
    i = i + 1
  end
  t.after = t.after or #t.words + 1
  return t
end

-- Takes the first word when it comes before `--` and picks = a name in
-- list: returns the entry.
local function take(t, list)
  if t.after <= 1 then return nil end
  for _, entry in ipairs(list) do
    if entry.name == t.words[1] then
      table.remove(t.words, 1)
      t.after = t.after - 1
      return entry
    end
  end
end

--- An `args` text ("ID [NAME]", "NAME CMD...", "[FILE|-]") as the least
-- and most arguments it takes (most nil: any number) and the names.
function M.arity(spec)
  local min, max, names = 0, 0, {}
  for word in (spec or ""):gmatch("%S+") do
    local optional = word:match("^%[") ~= nil
    local many = word:match("%.%.%.%]?$") ~= nil
    names[#names + 1] = word:gsub("[%[%]]", ""):gsub("%.%.%.$", "")
    if not optional then min = min + 1 end
    if many then max = nil elseif max then max = max + 1 end
  end
  return min, max, names
end

-- The options given, checked against the keys the command takes, with
-- their values read.
local function read_options(t, keys, o, usage, where)
  local allowed = {}
  for _, k in ipairs(keys) do allowed[k] = true end
  for key, raw in pairs(t.given) do
    local def = OPTIONS[key]
    if not allowed[key] then
      usage(t.flags[key] .. " is not an option of " .. where .. " (un " .. where:gsub("^un ", "")
        .. " --help lists them)")
    end
    local function read(v)
      if not def.parse then return v end
      local value, want = def.parse(v)
      if value == nil then usage(def.flag .. " expects " .. want .. ", got '" .. tostring(v) .. "'") end
      return value
    end
    if def.list then
      o[key] = {}
      for i, v in ipairs(raw) do o[key][i] = read(v) end
    else o[key] = read(raw) end
  end
end

--- Parses args against commands (the table's list; the entry named
-- "run" is the default). Returns o: {command =, action =, words = the
-- arguments, help = true when asked, where = "un session create", and
-- each option by key}. usage(msg) raises the usage error.
function M.parse(args, commands, usage)
  local t = tokens(args, usage)
  local o = { words = t.words }
  local named = {}
  for _, c in ipairs(commands) do if c.name ~= "run" then named[#named + 1] = c end end
  local cmd = t.after > 1 and not is_file(t.words[1]) and take(t, named)
  if not cmd then
    for _, c in ipairs(commands) do if c.name == "run" then cmd = c end end
    -- a word that is no file may be a misspelt command
    if t.after > 1 and not is_file(t.words[1]) then o.near = suggest.phrase(t.words[1], names_of(named)) end
  end
  o.command, o.where = cmd, cmd.name == "run" and "un" or "un " .. cmd.name
  o.help = t.given.help and true or nil
  local entry = cmd
  if cmd.actions then
    local action = take(t, cmd.actions)
    if not action and #t.words > 0 and t.after > 1 and not o.help then
      usage("unknown " .. cmd.name .. " action '" .. t.words[1] .. "'"
        .. suggest.phrase(t.words[1], names_of(cmd.actions)) .. " (un " .. cmd.name .. " --help lists them)")
    end
    if not action and not o.help then
      for _, a in ipairs(cmd.actions) do if a.name == cmd.default then action = a end end
      if not action then usage(cmd.name .. ": an action is expected (un " .. cmd.name .. " --help lists them)") end
    end
    if action then
      o.action, entry = action, action
      o.where = o.where .. " " .. action.name
    end
  end
  if o.help then return o end
  read_options(t, options.keys_of(cmd.api, M.own_options(cmd, o.action)), o, usage, o.where)
  local min, max, names = M.arity(entry.args)
  local see = " (" .. o.where .. " --help)"
  if #o.words < min then usage(o.where .. ": " .. names[#o.words + 1] .. " expected" .. see) end
  if max and #o.words > max and not entry.more then
    usage(o.where .. ": unexpected argument '" .. o.words[max + 1] .. "'" .. see)
  end
  return o
end

--- The options of a command's own and, with an action, the action's.
function M.own_options(cmd, action)
  local keys = {}
  for _, k in ipairs(cmd.options or {}) do keys[#keys + 1] = k end
  for _, k in ipairs(action and action.options or {}) do keys[#keys + 1] = k end
  return keys
end

return M
