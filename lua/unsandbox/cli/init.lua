--- un: the unsandbox command line, on top of the library. The commands,
-- their arguments and options are one table (cli/commands.lua) that the
-- parser (cli/parse.lua), `--help` and un(1) (cli/help.lua) all read;
-- this file makes the command's connection (a Client for the execution
-- API, a Manager for the Control Plane), runs it and maps its failure to
-- un's exit codes (cli/exits.lua). Run by bin/un under unlua.
local compat = require "unsandbox.compat"
local unsandbox = require "unsandbox"
local core = require "unsandbox.core"
local commands = require "unsandbox.cli.commands"
local exits = require "unsandbox.cli.exits"
local fail = require "unsandbox.cli.fail"
local help = require "unsandbox.cli.help"
local parse = require "unsandbox.cli.parse"

local M = {}

local CODES, usage = exits.codes, fail.usage

-- The first line of a secret, without its line ending and surrounding
-- blanks; nil when there is none.
local function first_line(text)
  local line = text and text:match("^[^\r\n]*")
  line = line and line:match("^%s*(.-)%s*$")
  return line ~= "" and line or nil
end

local function read_secret(path, what)
  local f, err = io.open(path, "rb")
  if not f then usage("cannot read the " .. what .. " file: " .. tostring(err)) end
  local text = first_line(f:read(4096))
  f:close()
  return text or usage("the " .. what .. " file " .. path .. " is empty")
end

-- The secret key from -k KEY, -k - (standard input) or --secret-key-file.
-- A key in argv is readable by every local user (ps, /proc/PID/cmdline):
-- it still works, with a warning.
local function secret_key(o)
  if o.secret_key and o.secret_key_file then usage("-k and --secret-key-file exclude each other") end
  if (o.public_key == nil) ~= (o.secret_key == nil and o.secret_key_file == nil) then
    usage("-p and -k (or --secret-key-file) must be given together")
  end
  if o.secret_key_file then return read_secret(o.secret_key_file, "secret key") end
  if o.secret_key == "-" then
    return first_line(io.stdin:read("l")) or usage("-k -: no secret key on standard input")
  elseif o.secret_key then
    io.stderr:write("un: warning: a secret key on the command line is visible to every local user; ",
      "use --secret-key-file FILE or -k - (standard input)\n")
    return o.secret_key
  end
end

-- The command's connection, named after the user's options when the
-- library refuses one (a malformed --url).
local CONNECT = {
  exec = function(o)
    local opts = { url = o.url, public_key = o.public_key, secret_key = secret_key(o), account = o.account }
    return fail.guard("--url " .. tostring(o.url), unsandbox.client, opts)
  end,
  cp = function(o)
    local token = o.token_file and read_secret(o.token_file, "token")
    local m = fail.guard("--url " .. tostring(o.url), unsandbox.manager,
      { url = o.url, token = token, tenant = o.tenant })
    if not m:is_configured() then
      fail.exit_with(CODES.auth, "un: no Control Plane token: set SANDBOX_TOKEN or use --token-file FILE "
        .. "(no account? un --local " .. o.where:gsub("^un ", "") .. " ... uses a local unsandboxd)")
    end
    return m
  end,
}

local function help_of(o)
  local cmd = o.command
  if cmd.name == "run" then return help.top(commands) end
  if o.action then return help.action(cmd, o.action) end
  return help.command(cmd)
end

local function dispatch(args)
  if args[1] == "--version" and #args == 1 then
    print("un " .. unsandbox.VERSION .. " (unsandbox for Lua)")
    return 0
  end
  local o = parse.parse(args, commands, usage)
  if o.help then print(help_of(o)); return 0 end
  if o.verbose then unsandbox.debug(true) end
  local entry = o.action or o.command
  local connect = CONNECT[o.command.api]
  local conn = connect and connect(o)
  local code, program = entry.run(o, conn)
  code = compat.tointeger(code) or 0
  if program and exits.is_own(code) then
    io.stderr:write("[un] exit code ", code, " is the program's own\n")
  end
  return code
end

--- Runs the CLI with an argument list; returns the exit code.
function M.main(args)
  local ok, result = pcall(dispatch, args)
  if ok then return result end
  if fail.is_interrupt(result) then
    if core.term.isatty(2) then io.stderr:write("\r\27[K") end   -- the progress line
    io.stderr:write("un: interrupted\n")
    return CODES.interrupted
  end
  if getmetatable(result) == fail.Exit then
    io.stderr:write(result.msg, "\n")
    return result.code
  end
  io.stderr:write("un: internal error: ", tostring(result), "\n")
  return CODES.internal
end

-- Run as a script (bin/un): `...` is the argument list, not a module name.
if ... ~= "unsandbox.cli" then
  os.exit(M.main({ ... }), true)
end

return M
