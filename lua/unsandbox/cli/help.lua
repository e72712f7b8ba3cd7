--- `un --help`, `un CMD --help`, `un CMD ACTION --help`, and the part of
-- un(1) that lists the commands, written from the command table and the
-- option declarations, the same ones the parser reads: what help shows is
-- what the command takes. Internal module.
local exits = require "unsandbox.cli.exits"
local options = require "unsandbox.cli.options"
local parse = require "unsandbox.cli.parse"

local M = {}

local OPTIONS = options.OPTIONS

-- "[--shell SH] [-n MODE]": an action's own options, for its usage line.
local function brackets(keys)
  local out = {}
  for _, k in ipairs(keys) do out[#out + 1] = "[" .. options.spelling(k) .. "]" end
  return table.concat(out, " ")
end

local function join(...)
  local out = {}
  for i = 1, select("#", ...) do
    local s = select(i, ...)
    if s and s ~= "" then out[#out + 1] = s end
  end
  return table.concat(out, " ")
end

--- The usage line of an action (or of a command without actions).
function M.usage_of(cmd, action)
  local entry = action or cmd
  return join("un", cmd.name, action and action.name, entry.args,
    brackets(parse.own_options(cmd, action)))
end

-- text wrapped at 78 columns, each line after the first indented by indent.
local function wrap(text, width, indent)
  local line, lines = "", {}
  for word in text:gmatch("%S+") do
    if #line + #word + 1 > width and line ~= "" then lines[#lines + 1] = line; line = word
    else line = line == "" and word or line .. " " .. word end
  end
  lines[#lines + 1] = line
  return table.concat(lines, "\n" .. string.rep(" ", indent))
end

-- Lines "  left  text", the text wrapped under itself.
local function rows(list, width)
  local out = {}
  for _, r in ipairs(list) do
    local left, text = r[1], r[2]
    local pad = #left + 2 <= width and string.rep(" ", width - #left) or "\n" .. string.rep(" ", width + 2)
    out[#out + 1] = "  " .. left .. pad .. wrap(text, 78 - width - 2, width + 2)
  end
  return table.concat(out, "\n")
end

local function option_rows(keys)
  local list = {}
  for _, k in ipairs(keys) do
    local def = OPTIONS[k]
    local left = options.spelling(k)
    if def.alias then left = def.alias .. ", " .. left end
    list[#list + 1] = { left, def.help }
  end
  return rows(list, 22)
end

local function exit_rows()
  local list = { { "N", "the program's own exit code, for the commands that run one" } }
  for _, e in ipairs(exits.TEXT) do list[#list + 1] = { tostring(e[1]), e[2] } end
  return rows(list, 6)
end

--- An action's help: its usage, what it does, every option it takes.
function M.action(cmd, action)
  local keys = options.keys_of(cmd.api, parse.own_options(cmd, action))
  return "usage: " .. M.usage_of(cmd, action) .. " [options]\n"
    .. wrap(action.about or action.summary, 78, 0) .. "\n\noptions:\n" .. option_rows(keys)
end

--- A command's help: each action with its usage, and every option.
function M.command(cmd)
  if not cmd.actions then
    local keys = options.keys_of(cmd.api, cmd.options)
    return "usage: " .. M.usage_of(cmd) .. " [options]\n" .. wrap(cmd.about or cmd.summary, 78, 0)
      .. "\n\noptions:\n" .. option_rows(keys)
  end
  local list, own = {}, {}
  for _, a in ipairs(cmd.actions) do
    list[#list + 1] = { M.usage_of(cmd, a):gsub("^un " .. cmd.name .. " ", ""), a.summary }
    for _, k in ipairs(parse.own_options(cmd, a)) do own[#own + 1] = k end
  end
  local keys = options.keys_of(cmd.api, own)
  return "usage: un " .. cmd.name .. " ACTION [ARGS] [options]"
    .. (cmd.default and "   (no action: " .. cmd.default .. ")" or "") .. "\n"
    .. wrap(cmd.about or cmd.summary, 78, 0) .. "\n\nactions (un " .. cmd.name .. " ACTION --help for one):\n"
    .. rows(list, 34) .. "\n\noptions:\n" .. option_rows(keys)
end

--- `un --help`: running code, the commands, the options, the exit codes.
function M.top(commands)
  local run, list = nil, {}
  for _, c in ipairs(commands) do
    if c.name == "run" then run = c else list[#list + 1] = { c.name, c.summary } end
  end
  return "usage: un [options] FILE            run FILE (language from its extension or shebang)\n"
    .. "       un [options] -s LANG CODE    run CODE in LANG (CODE -: read it from standard input)\n"
    .. "       un COMMAND [ACTION] [ARGS] [options]\n"
    .. "       un --local ...               against the local unsandboxd: no account needed\n"
    .. "       un COMMAND --help            a command's actions and options\n\n"
    .. "commands:\n" .. rows(list, 12) .. "\n\n"
    .. "options of a run:\n" .. option_rows(options.keys_of(run.api, run.options)) .. "\n"
    .. "  --local               the local unsandboxd (`un local start`), or a private one\n"
    .. "                        for this command\n"
    .. "  --version             print un's version\n\n"
    .. "exit codes:\n" .. exit_rows()
end

------------------------------------------------------------------------
-- un(1)
------------------------------------------------------------------------

local function roff(text)
  return (text:gsub("\\", "\\e"):gsub("^([.'])", "\\&%1"):gsub("%-", "\\-"))
end

local function roff_options(keys, out)
  for _, k in ipairs(keys) do
    local def = OPTIONS[k]
    out[#out + 1] = ".TP"
    out[#out + 1] = ".B " .. roff((def.alias and def.alias .. ", " or "") .. options.spelling(k))
    out[#out + 1] = roff(def.help)
  end
end

--- The man page's COMMANDS, OPTIONS and EXIT STATUS sections (roff), a
-- subsection per command with each action and the options it takes.
function M.man(commands)
  local out = { ".SH COMMANDS" }
  for _, c in ipairs(commands) do
    if c.name ~= "run" then
      out[#out + 1] = ".SS un " .. c.name
      out[#out + 1] = roff(c.about or c.summary)
      for _, a in ipairs(c.actions or { false }) do
        out[#out + 1] = ".TP"
        out[#out + 1] = ".B " .. roff(M.usage_of(c, a or nil))
        out[#out + 1] = roff(a and (a.about or a.summary) or "")
      end
      local keys, seen = {}, {}
      for _, a in ipairs(c.actions or { false }) do
        for _, k in ipairs(parse.own_options(c, a or nil)) do
          if not seen[k] then seen[k] = true; keys[#keys + 1] = k end
        end
      end
      if #keys > 0 then
        out[#out + 1] = ".PP"
        out[#out + 1] = "Options of un " .. c.name .. ":"
        roff_options(keys, out)
      end
    end
  end
  out[#out + 1] = ".SH OPTIONS"
  out[#out + 1] = "Every option, with the commands that take it listed above; options may come"
  out[#out + 1] = "before or after the command's words, and everything after"
  out[#out + 1] = ".B \\-\\-"
  out[#out + 1] = "is an argument."
  local keys = {}
  for k in pairs(OPTIONS) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return OPTIONS[a].flag:gsub("^%-+", "") < OPTIONS[b].flag:gsub("^%-+", "") end)
  roff_options(keys, out)
  out[#out + 1] = ".TP"
  out[#out + 1] = ".B \\-\\-local"
  out[#out + 1] = "run against the local unsandboxd that"
  out[#out + 1] = ".B un local start"
  out[#out + 1] = "keeps running, or, when none runs, a private one started and stopped for this command."
  out[#out + 1] = ".SH EXIT STATUS"
  out[#out + 1] = "A command that runs a program exits with the program's own code. Every failure of"
  out[#out + 1] = ".B un"
  out[#out + 1] = "itself prints one line on standard error and exits with one of:"
  for _, e in ipairs(exits.TEXT) do
    out[#out + 1] = ".TP"
    out[#out + 1] = ".B " .. e[1]
    out[#out + 1] = roff(e[2])
  end
  out[#out + 1] = ".PP"
  out[#out + 1] = "When a program's own code is one of these, un says so on standard error, and"
  out[#out + 1] = ".B \\-\\-json"
  out[#out + 1] = "gives it as the result's exit_code."
  return table.concat(out, "\n") .. "\n"
end

return M
