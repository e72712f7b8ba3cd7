--- un: the unsandbox command line, on top of the library.
--   un FILE [args]            run a file (language from extension or shebang)
--   un -s LANG 'code'         run inline code
--   un languages [--json]     un jobs [--get ID | --cancel ID]
--   un session ...            un service ...      un snapshot ...     un key
-- Exit codes: the program's own; 2 bad arguments; 3 authentication;
-- 4 API error; 5 timeout; 6 local I/O error (an artifact not saved after a
-- program that exited 0); each failure with one line on stderr.
local unsandbox = require "unsandbox"
local core = require "unsandbox.core"
local cli_cp = require "unsandbox.cli.cp"
local cli_commands = require "unsandbox.cli.commands"
local cli_exec = require "unsandbox.cli.exec"
local abandon = require "unsandbox.exec.abandon"

local M = {}

local EXIT_USAGE, EXIT_AUTH, EXIT_API, EXIT_TIMEOUT, EXIT_LOCAL = 2, 3, 4, 5, 6
local EXIT_INTERRUPTED = 130   -- 128 + SIGINT, as a shell reports Ctrl-C

local USAGE = [[
usage: un [options] FILE            run FILE (language from its extension or shebang)
       un [options] -s LANG CODE    run CODE in LANG (CODE "-": read it from standard input)
       un languages [--json]
       un jobs [--get ID | --cancel ID]
       un session list | create [--shell SH] [--tmux|--screen] | get ID | delete ID | exec ID CMD | snapshot ID [NAME]
       un service list | create NAME BOOTSTRAP | get ID | delete ID | exec ID CMD | logs ID | snapshot ID [NAME]
       un snapshot list | get ID | restore ID | delete ID | lock ID | unlock ID
       un key
]] .. cli_exec.USAGE .. cli_cp.USAGE .. [[
options:
  -s LANG        language of inline code        -e KEY=VAL   environment variable (repeatable)
  -f FILE        input file (repeatable)        -n MODE      zerotrust (default) | semitrusted
  --ttl N        time limit in seconds (1-900)  -a           return artifacts
  -o DIR         where to save artifacts        -p KEY       public key
  -k -           secret key: one line of standard input (-k KEY works, but shows the
                 key to every local user in the process list; un warns)
  --secret-key-file FILE   secret key: the first line of FILE
  --account N    row of accounts.csv            --url URL    service base URL
  --json         print the result as one JSON document
  --local        run against a private unsandboxd (no account needed)
  -v             one line per HTTP exchange on stderr (as UNSANDBOX_DEBUG=1)
  --version      print un's version         -h, --help   this text (un CMD --help: CMD's)
exit codes: the program's own; 2 bad arguments; 3 authentication; 4 API error;
  5 timeout; 6 local I/O error (e.g. an artifact not saved; after a program
  that exited 0)]]

-- A failure with its exit code; raised inside main and caught there.
local Exit = {}
local function exit_with(code, msg) error(setmetatable({ code = code, msg = msg }, Exit), 0) end
local function usage(msg) exit_with(EXIT_USAGE, "un: " .. msg .. " (un --help for usage)") end

-- Maps an unsandbox.Error to the CLI's exit codes.
local function fail(err)
  if err.kind == "interrupted" then
    error(setmetatable({ code = EXIT_INTERRUPTED, interrupted = true }, Exit), 0)
  end
  local code = EXIT_API
  if err.kind == "credentials" or err.status == 401 or err.status == 403 then code = EXIT_AUTH
  elseif err.kind == "timeout" then code = EXIT_TIMEOUT end
  exit_with(code, "un: " .. tostring(err):gsub("^unsandbox: ", ""))
end

-- The value of a call that succeeded, alone (so that it can be passed
-- straight to write or print), or the CLI's exit for its error.
local function check(v, err)
  if v == nil then fail(err) end
  return v
end

local function parse(args)
  local o = { env = {}, files = {}, rest = {} }
  local i = 1
  local function value(flag)
    i = i + 1
    local v = args[i]
    if v == nil then usage("option " .. flag .. " needs a value") end
    return v
  end
  while i <= #args do
    local a = args[i]
    if a == "-h" or a == "--help" then o.help = true
    elseif a == "-s" then o.language = value(a)
    elseif a == "-e" then
      local k, v = value(a):match("^([^=]*)=(.*)$")
      if not k or core.rules.env_name_check(k) then usage("-e expects KEY=VALUE, got '" .. args[i] .. "'") end
      o.env[k] = v
    elseif a == "-f" then o.files[#o.files + 1] = value(a)
    elseif a == "-n" then
      o.network = value(a)
      if o.network ~= "zerotrust" and o.network ~= "semitrusted" then
        usage("-n expects zerotrust or semitrusted, got '" .. o.network .. "'")
      end
    elseif a == "--ttl" then
      o.ttl = math.tointeger(tonumber(value(a)))
      if not o.ttl or o.ttl < 1 or o.ttl > 900 then usage("--ttl expects an integer from 1 to 900") end
    elseif a == "-a" then o.artifacts = true
    elseif a == "-v" then o.verbose = true
    elseif a == "-o" then o.outdir = value(a)
    elseif a == "-p" then o.public_key = value(a)
    elseif a == "-k" then o.key_arg = value(a)
    elseif a == "--secret-key-file" then o.key_file = value(a)
    elseif a == "--account" then
      o.account = math.tointeger(tonumber(value(a)))
      if not o.account or o.account < 0 then usage("--account expects a non-negative integer") end
    elseif a == "--url" then o.url = value(a)
    elseif a == "--json" then o.json = true
    elseif a == "--version" then o.version = true
    elseif a == "--all" then o.all = true
    elseif a == "--get" then o.get = value(a)
    elseif a == "--cancel" then o.cancel = value(a)
    elseif a == "--shell" then o.shell = value(a)
    elseif a == "--tmux" or a == "--screen" then o.multiplexer = a:sub(3)
    elseif a == "--" then
      for j = i + 1, #args do o.rest[#o.rest + 1] = args[j] end
      break
    elseif a:sub(1, 1) == "-" and a ~= "-" then usage("unknown option " .. a)
    else o.rest[#o.rest + 1] = a end
    i = i + 1
  end
  if o.key_arg and o.key_file then usage("-k and --secret-key-file exclude each other") end
  if (o.public_key == nil) ~= (o.key_arg == nil and o.key_file == nil) then
    usage("-p and -k (or --secret-key-file) must be given together")
  end
  return o
end

-- The first line of a secret, without its line ending and surrounding
-- blanks; nil when there is none.
local function first_line(text)
  local line = text and text:match("^[^\r\n]*")
  line = line and line:match("^%s*(.-)%s*$")
  return line ~= "" and line or nil
end

-- The secret key from -k KEY, -k - (standard input) or --secret-key-file.
-- A key in argv is readable by every local user (ps, /proc/PID/cmdline):
-- it still works, with a warning.
local function secret_key(o)
  if o.key_file then
    local f, err = io.open(o.key_file, "rb")
    if not f then usage("cannot read the secret key file: " .. tostring(err)) end
    local key = first_line(f:read(4096))
    f:close()
    return key or usage("the secret key file " .. o.key_file .. " is empty")
  elseif o.key_arg == "-" then
    return first_line(io.stdin:read("l")) or usage("-k -: no secret key on standard input")
  elseif o.key_arg then
    io.stderr:write("un: warning: a secret key on the command line is visible to every local user; ",
      "use --secret-key-file FILE or -k - (standard input)\n")
    return o.key_arg
  end
end

local function client(o)
  local ok, c = pcall(unsandbox.client, { url = o.url, public_key = o.public_key,
    secret_key = secret_key(o), account = o.account })
  if not ok then usage(tostring(c)) end
  return c
end

local function read_file(path)
  local f, err = io.open(path, "rb")
  if not f then usage("cannot read " .. tostring(err)) end
  local s = f:read("a")
  f:close()
  return s
end

local function language_of(path, code)
  local lang = unsandbox.detect_language(path, code)
  if not lang then usage("cannot tell the language of " .. path .. "; use -s LANG") end
  return lang
end

-- A one-line "elapsed, status" indicator, only when stderr is a terminal.
local function progress()
  if not core.term.isatty(2) then return nil end
  local t0 = core.loop.monotonic_ms()
  return function(job)
    io.stderr:write(string.format("\r\27[K[un] %.1fs %s", (core.loop.monotonic_ms() - t0) / 1000, job.status or "?"))
    io.stderr:flush()
  end, function() io.stderr:write("\r\27[K"); io.stderr:flush() end
end

-- Artifacts are written whole or not at all (core.files.write_file: a fresh
-- temporary renamed over the name), flattened into dir, which is made
-- when missing (mkdir -p); their names were checked as relative paths when
-- the result was read. Returns nil, or the message of the first failure
-- (with its errno text): the caller still exits with the program's code.
local function save_artifacts(list, dir)
  dir = (dir or "."):gsub("(.)/+$", "%1")
  local made, err = core.files.mkdirs(dir)
  if not made then return "un: cannot save artifacts: " .. err end
  for _, a in ipairs(list) do
    local name = a.filename:gsub("/", "_")
    local path = (dir == "/" and "" or dir) .. "/" .. name
    local saved, werr = core.files.write_file(path, a.content or "")
    if not saved then return "un: cannot save artifact: " .. werr end
    io.stderr:write("[un] saved " .. path .. "\n")
  end
end

-- The code to run: CODE, FILE, or standard input for "-". The service has
-- neither argv nor stdin for a program, so words after it are refused,
-- not silently dropped.
local function program(o)
  if #o.rest > 1 then
    usage("arguments after the program are not passed to it (the service has no argv): "
      .. "give values with -e KEY=VAL or files with -f FILE")
  end
  local what = o.rest[1]
  if what == "-" then
    if o.key_arg == "-" then usage("standard input cannot hold both the code (-) and the key (-k -)") end
    if not o.language then usage("code from standard input (-) needs its language: -s LANG -") end
    return o.language, io.stdin:read("a") or ""
  end
  if o.language then
    return o.language, what or usage("-s " .. o.language .. " needs the code to run")
  end
  if not what then usage("nothing to run") end
  local code = read_file(what)
  return language_of(what, code), code
end

local function run(o)
  local lang, code = program(o)
  local opts = { env = next(o.env) and o.env or nil, input_files = #o.files > 0 and o.files or nil,
    network_mode = o.network, ttl = o.ttl, return_artifacts = o.artifacts or o.outdir ~= nil }
  local c = client(o)
  -- always a job whose id un holds before it waits (POST /execute would
  -- hold the run inside one request, where Ctrl-C could not name it):
  -- Ctrl-C or the deadline cancel it (abandon.lua)
  local show, clear = progress()
  local id = check(c:execute_async(lang, code, opts))
  if show then show { status = "pending" } end
  local res, err = abandon.guard(c, { id }, function() return false end, function()
    local res, err = c:wait_for_job(id, { on_poll = show, timeout = (o.ttl or 60) + 60,
      return_artifacts = opts.return_artifacts })
    if not res then return nil, abandon.note(c, id, err) end
    return res
  end)
  if clear then clear() end
  local r = check(res, err)
  if o.json then
    -- the result as one document; artifacts by name and size (their bytes
    -- need not be text), saved as usual
    local doc = {}
    for k, v in pairs(r) do doc[k] = v end
    if r.artifacts then
      doc.artifacts = {}
      for i, a in ipairs(r.artifacts) do doc.artifacts[i] = { filename = a.filename, size = #(a.content or "") } end
    end
    cli_commands.print_json(doc)
  else
    io.stdout:write(r.stdout)
    io.stdout:flush()
    io.stderr:write(r.stderr)
    if r.stdout_truncated or r.stderr_truncated then io.stderr:write("[un] output truncated\n") end
  end
  -- a local write failure is reported, but the program's own exit code
  -- is still un's: the run happened, and a script may depend on its code
  local save_err = r.artifacts and #r.artifacts > 0 and save_artifacts(r.artifacts, o.outdir)
  if save_err then io.stderr:write(save_err, "\n") end
  if r.status == "timeout" then exit_with(EXIT_TIMEOUT, "un: the program exceeded its time limit") end
  if r.status == "cancelled" or r.status == "failed" then
    exit_with(EXIT_API, "un: job " .. tostring(r.job_id) .. " " .. r.status .. (r.error and (": " .. r.error) or ""))
  end
  if save_err and (r.exit_code or 0) == 0 then return EXIT_LOCAL end
  return r.exit_code or 0
end

local function is_file(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

-- What the Control Plane commands (cli_cp.lua) share with these.
local helpers = { usage = usage, exit_with = exit_with, check = check,
  EXIT_USAGE = EXIT_USAGE, EXIT_AUTH = EXIT_AUTH, EXIT_API = EXIT_API, EXIT_TIMEOUT = EXIT_TIMEOUT }

local commands = cli_commands.commands(helpers)
-- the administration actions (cli/exec.lua) layered over these
cli_exec.extend(commands, { usage = usage, check = check, need = cli_commands.needer(helpers),
  list = cli_commands.list, show_table = cli_commands.show_table, SUDO = cli_commands.SUDO })

-- Ctrl-C as it reaches main: unlua's "interrupted!" (raised where the
-- script was, so perhaps with a position), the library's raised Error of
-- kind interrupted, or fail()'s exit for a returned one.
local function is_interrupt(e)
  if type(e) == "string" then return e:match("interrupted!$") ~= nil end
  if unsandbox.Error.is(e) then return e.kind == "interrupted" end
  return getmetatable(e) == Exit and e.interrupted == true
end

--- Runs the CLI with an argument list; returns the exit code.
function M.main(args)
  local ok, result = pcall(function()
    local group = cli_cp.group_index(args)
    if group and not is_file(args[group]) then
      local ok2, code = pcall(cli_cp.main, args, helpers)
      if ok2 then return code end
      if getmetatable(code) == Exit or is_interrupt(code) then error(code, 0) end
      usage(tostring(code):gsub("^.-bad argument", "bad argument"))
    end
    local o = parse(args)
    if o.version then print("un " .. unsandbox.VERSION .. " (unsandbox for Lua)"); return 0 end
    if o.verbose then unsandbox.debug(true) end
    local cmd = not o.language and commands[o.rest[1]]
    if o.help then
      print(cmd and cli_commands.HELP[o.rest[1]] or USAGE)
      return 0
    end
    -- a file of that name wins over a subcommand
    if cmd and not is_file(o.rest[1]) then
      local c = client(o)
      -- id arguments are checked by the library, which raises on misuse
      local ok2, code = pcall(cmd, o, c)
      if not ok2 then
        if getmetatable(code) == Exit or is_interrupt(code) then error(code, 0) end
        usage(tostring(code):gsub("^.-bad argument", "bad argument"))
      end
      return code or 0
    end
    return run(o)
  end)
  if ok then return math.tointeger(result) or 0 end
  if is_interrupt(result) then
    if core.term.isatty(2) then io.stderr:write("\r\27[K") end   -- the progress line
    io.stderr:write("un: interrupted\n")
    return EXIT_INTERRUPTED
  end
  if getmetatable(result) == Exit then
    io.stderr:write(result.msg, "\n")
    return result.code
  end
  io.stderr:write("un: ", tostring(result), "\n")
  return 1
end

-- Run as a script (bin/un): `...` is the argument list, not a module name.
if ... ~= "unsandbox.cli" then
  os.exit(M.main({ ... }), true)
end

return M
