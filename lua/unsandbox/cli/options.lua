--- Every option of `un`, declared once: its flag, its value's name, how
-- the value is read and checked, and its help line. A command lists the
-- options it takes by key (cli/commands.lua), and the same declarations
-- parse the command line (cli/parse.lua) and write `--help` and the man
-- page (cli/help.lua), so the three cannot drift apart. A flag means the
-- same thing in every command that takes it. Internal module.
local compat = require "unsandbox.compat"
local core = require "unsandbox.core"

local M = {}

-- Value readers: return the value, or nil and what was expected.
local function int_in(lo, hi)
  return function(v)
    local n = compat.tointeger(tonumber(v))
    if n and n >= lo and n <= hi then return n end
    return nil, "an integer from " .. lo .. " to " .. hi
  end
end

local function one_of(...)
  local set, names = {}, { ... }
  for _, n in ipairs(names) do set[n] = true end
  return function(v)
    if set[v] then return v end
    return nil, table.concat(names, " or ")
  end
end

local function env_pair(v)
  local k, val = v:match("^([^=]*)=(.*)$")
  if not k or core.rules.env_name_check(k) then return nil, "KEY=VALUE with a valid variable name" end
  return { k, val }
end

local function subject(v)
  if core.cp.valid_subject(v) then return v end
  return nil, "32 lowercase hex characters"
end

--- key -> {flag, alias, value (the value's name; nil for a switch),
-- parse, list (repeatable: a list of values), help}.
M.OPTIONS = {
  help = { flag = "--help", alias = "-h", help = "this help" },
  json = { flag = "--json", help = "print the result as one JSON document (lists as arrays)" },
  verbose = { flag = "-v", help = "one line per HTTP exchange on stderr (as UNSANDBOX_DEBUG=1)" },
  version = { flag = "--version", help = "print un's version" },
  -- the execution API's connection
  url = { flag = "--url", value = "URL",
    help = "the service's base URL (default: UNSANDBOX_URL, or SANDBOX_CONTROL_PLANE_URL for "
      .. "the Control Plane commands)" },
  public_key = { flag = "-p", value = "KEY", help = "public key (with -k or --secret-key-file)" },
  secret_key = { flag = "-k", value = "KEY",
    help = "secret key; -k - reads one line of standard input (-k KEY shows the key to every "
      .. "local user in the process list: un warns)" },
  secret_key_file = { flag = "--secret-key-file", value = "FILE", help = "secret key: the first line of FILE" },
  account = { flag = "--account", value = "N", parse = int_in(0, compat.maxinteger),
    help = "row N (0-based) of ~/.unsandbox/accounts.csv, then ./accounts.csv" },
  -- the Control Plane's connection
  token_file = { flag = "--token-file", value = "FILE",
    help = "Control Plane token: the first line of FILE (default SANDBOX_TOKEN)" },
  tenant = { flag = "--tenant", value = "T", help = "act in tenant T (X-Sandbox-Tenant; admin credentials)" },
  -- running code
  language = { flag = "-s", value = "LANG",
    help = "language of the code (python, bash, ...; aliases such as python3, node, js, py work)" },
  env = { flag = "-e", value = "KEY=VAL", list = true, parse = env_pair,
    help = "environment variable of the program (repeatable)" },
  file = { flag = "-f", value = "FILE", list = true,
    help = "input file, placed in the sandbox's work directory under its base name (repeatable)" },
  network = { flag = "-n", value = "MODE", parse = one_of("zerotrust", "semitrusted"),
    help = "network: zerotrust (default: none) or semitrusted (outbound internet)" },
  ttl = { flag = "--ttl", value = "N", parse = int_in(1, 900), help = "time limit in seconds, 1 to 900 (default 60)" },
  artifacts = { flag = "-a", help = "return the files the program created (saved under -o DIR, or .)" },
  outdir = { flag = "-o", value = "DIR", help = "where to save artifacts, keeping their relative paths (implies -a)" },
  -- resources
  shell = { flag = "--shell", value = "SH", help = "the session's shell (default bash)" },
  tmux = { flag = "--tmux", help = "run the session's shell inside tmux (it can then be frozen and re-attached)" },
  screen = { flag = "--screen", help = "run the session's shell inside GNU screen (likewise)" },
  all = { flag = "--all", help = "the whole log, not only its end" },
  get = { flag = "--get", value = "ID", help = "a job's state and result" },
  cancel = { flag = "--cancel", value = "ID", help = "cancel a pending or running job" },
  -- the Control Plane
  template = { flag = "--template", value = "T", help = "the sandbox's template (default: the platform's)" },
  timeout = { flag = "--timeout", value = "S", parse = int_in(1, 30),
    help = "the command's time limit in seconds, 1 to 30 (the shell tool's)" },
  subject = { flag = "--subject", value = "HEX", parse = subject,
    help = "act for this subject (X-Acting-Subject: 32 hex; unsandbox.acting_subject makes one)" },
  owner = { flag = "--owner", value = "T/S", help = "the objects' owner, TENANT/SUBJECT (admin credentials)" },
  stdin = { flag = "--stdin", help = "write un's standard input to the process's stdin (then close it)" },
  signal = { flag = "--signal", value = "SIG", help = "the signal to send (TERM, KILL, INT, HUP, ...; default TERM)" },
  purge = { flag = "--purge", help = "delete every version, not only the newest" },
  limit = { flag = "--limit", value = "N", parse = int_in(1, 100000), help = "at most N rows" },
  label = { flag = "--label", value = "L", help = "the key's label" },
  act_as = { flag = "--act-as-subjects", help = "the key may act for subjects (--subject)" },
}

-- flag -> key
M.BY_FLAG = {}
for key, def in pairs(M.OPTIONS) do
  def.key = key
  M.BY_FLAG[def.flag] = key
  if def.alias then M.BY_FLAG[def.alias] = key end
end

--- The options every command takes, and those of each service's
-- connection (a command's `api`).
M.COMMON = { "json", "verbose", "help" }
M.CONNECTION = {
  exec = { "url", "public_key", "secret_key", "secret_key_file", "account" },
  cp = { "url", "token_file", "tenant" },
  none = {},
}

--- The keys a command (or action) takes: its own, then its service's
-- connection, then the common ones; in that order, each once.
function M.keys_of(api, own)
  local keys, seen = {}, {}
  local function add(list)
    for _, k in ipairs(list or {}) do
      assert(M.OPTIONS[k], "un: no option " .. k)
      if not seen[k] then seen[k] = true; keys[#keys + 1] = k end
    end
  end
  add(own)
  add(M.CONNECTION[api or "none"])
  add(M.COMMON)
  return keys
end

--- "-s LANG", "--json": how an option is written.
function M.spelling(key)
  local def = M.OPTIONS[key]
  return def.value and def.flag .. " " .. def.value or def.flag
end

return M
