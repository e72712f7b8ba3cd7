--- The Control Plane commands of `un` (cli.lua hands them over):
--   un sandbox create [NAME] [--template T] | list | run NAME [--timeout S] -- CMD...
--              | read NAME PATH | write NAME PATH [FILE|-] | stop NAME
--              | checkpoint NAME | restore NAME CHECKPOINT | checkpoints NAME
--              | exec NAME [--stdin] -- CMD... | cp SRC DEST (one of them NAME:PATH)
--              | ps NAME | kill NAME ID [--signal SIG]
--   un object put LOCATOR [FILE|-] | get LOCATOR | ls LOCATOR | rm LOCATOR [--purge]
--   un admin tenants [list | create ID | suspend ID]
--            | keys [list [TENANT] | issue TENANT [--act-as-subjects] [--label L]
--                    | issue-admin | revoke KEY_ID]
--            | audit [--limit N]
-- LOCATOR: upload:UPLOAD_ID[/PATH] or agent:AGENT_ID/RUN_ID/PATH. Object
-- commands need --subject HEX (the X-Acting-Subject) or --owner T/S.
-- Connection: SANDBOX_CONTROL_PLANE_URL and SANDBOX_TOKEN (or --url and
-- --token-file FILE); -v prints one line per exchange on stderr, as for
-- every `un` command. Exit codes as every `un` command: the command's own
-- (sandbox run), 2 bad arguments, 3 authentication, 4 API error, 5 timeout.
local unsandbox = require "unsandbox"
local core = require "unsandbox.core"
local cjson = require "cjson"

local M = {}

M.USAGE = [[
       un sandbox create [NAME] [--template T] | list | run NAME [--timeout S] -- CMD...
       un sandbox read NAME PATH | write NAME PATH [FILE|-] | stop NAME
       un sandbox checkpoint NAME | checkpoints NAME | restore NAME CHECKPOINT
       un sandbox exec NAME [--stdin] -- CMD... | cp SRC DEST | ps NAME | kill NAME ID [--signal SIG]
       un object put LOCATOR [FILE|-] | get LOCATOR | ls LOCATOR | rm LOCATOR [--purge]
       un admin tenants [list | create ID | suspend ID] | audit [--limit N]
       un admin keys [list [TENANT] | issue TENANT [--act-as-subjects] | issue-admin | revoke ID]
Control Plane options: --url URL  --token-file FILE  --subject HEX  --owner T/S
  --template T  --timeout S  --json  -v  (LOCATOR: upload:ID[/PATH] or agent:AGENT/RUN/PATH)
  cp: SRC or DEST is NAME:PATH (a workspace path); directories are copied whole
]]

local FLAGS = { ["--url"] = "url", ["--token-file"] = "token_file", ["--subject"] = "subject",
  ["--owner"] = "owner", ["--template"] = "template", ["--timeout"] = "timeout",
  ["--limit"] = "limit", ["--label"] = "label", ["--tenant"] = "tenant", ["--signal"] = "signal" }
local SWITCHES = { ["--json"] = "json", ["--purge"] = "purge", ["--act-as-subjects"] = "act_as",
  ["-v"] = "verbose", ["--stdin"] = "stdin" }

local function parse(args, h)
  local o, rest, i = {}, {}, 1
  while i <= #args do
    local a = args[i]
    if a == "--" then
      o.command = table.move(args, i + 1, #args, 1, {})
      break
    elseif FLAGS[a] then
      i = i + 1
      o[FLAGS[a]] = args[i] or h.usage("option " .. a .. " needs a value")
    elseif SWITCHES[a] then o[SWITCHES[a]] = true
    elseif a:sub(1, 2) == "--" then h.usage("unknown option " .. a)
    else rest[#rest + 1] = a end
    i = i + 1
  end
  o.rest = rest
  if o.timeout then
    o.timeout = math.tointeger(tonumber(o.timeout))
    if not o.timeout or o.timeout < 1 or o.timeout > 30 then h.usage("--timeout expects 1 to 30 seconds") end
  end
  if o.limit then
    o.limit = math.tointeger(tonumber(o.limit))
    if not o.limit or o.limit < 1 then h.usage("--limit expects a positive integer") end
  end
  return o
end

local function manager(o, h)
  local token
  if o.token_file then
    local f, err = io.open(o.token_file, "rb")
    if not f then h.usage("cannot read the token file: " .. tostring(err)) end
    token = (f:read("l") or ""):match("^%s*(.-)%s*$")
    f:close()
  end
  local ok, m = pcall(unsandbox.manager, { url = o.url, token = token, tenant = o.tenant })
  if not ok then h.usage(tostring(m)) end
  if not m:is_configured() then
    h.exit_with(h.EXIT_AUTH, "un: no Control Plane token: set SANDBOX_TOKEN or use --token-file FILE")
  end
  return m
end

local function need(o, n, what, h)
  return o.rest[n] or h.usage(what .. " expected")
end

local function read_input(path, h)
  if path == nil or path == "-" then return io.stdin:read("a") or "" end
  local f, err = io.open(path, "rb")
  if not f then h.usage("cannot read " .. tostring(err)) end
  local s = f:read("a")
  f:close()
  return s
end

local function show(v, o)
  if o.json then print(cjson.encode(v)) return end
  if type(v) ~= "table" then print(tostring(v)) return end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(keys) do
    local x = v[k]
    print(string.format("%-18s %s", k, type(x) == "table" and cjson.encode(x) or tostring(x)))
  end
end

local function rows(list, fields, o)
  if o.json then print(cjson.encode(list)) return end
  for _, it in ipairs(list) do
    local cols = {}
    for i, f in ipairs(fields) do cols[i] = tostring(it[f] == nil and "-" or it[f]) end
    print(table.concat(cols, "\t"))
  end
end

------------------------------------------------------------------------
-- un sandbox
------------------------------------------------------------------------

local sandbox = {}

local function open(o, h, m, n)
  local name = need(o, n or 3, "sandbox name", h)
  return h.check(unsandbox.Sandbox.get { name = name, manager = m, resume = true })
end

function sandbox.create(o, h, m)
  local sb = h.check(unsandbox.Sandbox.create { name = o.rest[3], template = o.template, manager = m })
  local st = sb:status()
  print(sb:name() .. "\t" .. tostring(st.sandbox_id))
end

function sandbox.list(o, h, m)
  rows(h.check(m:list_runtimes()), { "id", "workspace_id", "status", "template" }, o)
end

-- The command: one argument is a shell command line, several an argv
-- (quoted for the shell, so each stays one word).
local function command_line(o, h)
  local c = o.command
  if not c or #c == 0 then h.usage("sandbox run NAME -- CMD: the command is missing") end
  if #c == 1 then return c[1] end
  return core.cp.shell_quote(c)
end

--- Streams the command's output live; un's exit code is the command's.
function sandbox.run(o, h, m)
  local sb = open(o, h, m)
  local cmd = command_line(o, h)
  local r = h.check(sb:stream(cmd, function(channel, chunk)
    local f = channel == "stderr" and io.stderr or io.stdout
    f:write(chunk)
    f:flush()
  end, o.timeout))
  if r.output_truncated then io.stderr:write("[un] output truncated\n") end
  if r.timed_out then h.exit_with(h.EXIT_TIMEOUT, "un: the command exceeded its time limit") end
  return r.exit_code or 1
end

function sandbox.read(o, h, m)
  local sb = open(o, h, m)
  io.stdout:write((h.check(sb:download(need(o, 4, "path", h)))))
end

function sandbox.write(o, h, m)
  local sb = open(o, h, m)
  local path = need(o, 4, "path", h)
  local r = h.check(sb:upload(read_input(o.rest[5], h), path))
  io.stderr:write(string.format("[un] wrote %s (%d bytes)\n", r.path or path, r.bytes or 0))
end

function sandbox.stop(o, h, m)
  local name = need(o, 3, "sandbox name", h)
  local sb = h.check(unsandbox.Sandbox.get { name = name, manager = m })
  h.check(sb:stop())
end

function sandbox.checkpoint(o, h, m)
  local r = h.check(open(o, h, m):checkpoint())
  if o.json then show(r, o) else print(r.checkpoint_id .. "\t" .. tostring(r.sha256)) end
end

function sandbox.checkpoints(o, h, m)
  local r = h.check(open(o, h, m):list_checkpoints())
  rows(r.checkpoints or {}, { "checkpoint_id", "bytes", "last_modified" }, o)
end

function sandbox.restore(o, h, m)
  local r = h.check(open(o, h, m):restore(need(o, 4, "checkpoint id", h)))
  if o.json then show(r, o) end
end

-- exec, cp, ps and kill: thin wrappers over the agent tools
-- (docs/guide/agent-tools.md)

--- exec NAME [--stdin] -- CMD: a Process whose output streams to ours as
-- it comes; with --stdin our stdin is written to its stdin (then closed).
function sandbox.exec(o, h, m)
  local sb = open(o, h, m)
  local function out(s) io.stdout:write(s); io.stdout:flush() end
  local function err(s) io.stderr:write(s); io.stderr:flush() end
  local p = h.check(sb:spawn(command_line(o, h), { on_stdout = out, on_stderr = err }))
  if o.stdin then
    for chunk in function() return io.stdin:read(65536) end do
      h.check(p:write(chunk))
      local got, rerr = p:read(0.001)           -- what it answered so far goes out
      if got == nil and rerr then h.check(nil, rerr) end
    end
  end
  h.check(p:close_stdin())
  local code = h.check(p:wait())
  p:close()
  return code < 0 and 128 - code or code
end

local MIB = 1048576

-- A progress bar on stderr when it is a terminal, else nothing.
local function progress_bar(label)
  if not core.term.isatty(2) then return nil end
  return function(done, total, path)
    local what = path and (label .. " " .. path) or label
    if total and total > 0 then
      io.stderr:write(string.format("\r[un] %s  %.1f / %.1f MiB  %3d%%\27[K", what, done / MIB, total / MIB,
        math.floor(done * 100 / total)))
    else
      io.stderr:write(string.format("\r[un] %s  %.1f MiB\27[K", what, done / MIB))
    end
    io.stderr:flush()
  end
end

local function remote(spec)
  local name, path = spec:match("^([^/:]+):(.*)$")
  if name and path ~= "" then return name, path end
end

local function is_local_dir(path)
  return core.files.read_dir(path) ~= nil
end

--- cp SRC DEST: one of them NAME:PATH; streamed, checked, directories whole.
function sandbox.cp(o, h, m)
  local src, dest = need(o, 3, "source", h), need(o, 4, "destination", h)
  local sname, spath = remote(src)
  local dname, dpath = remote(dest)
  if (sname ~= nil) == (dname ~= nil) then h.usage("cp: exactly one of SRC and DEST is NAME:PATH") end
  local bar = progress_bar(src .. " -> " .. dest)
  local r
  if dname then
    local sb = h.check(unsandbox.Sandbox.get { name = dname, manager = m, resume = true })
    if is_local_dir(src) then r = h.check(sb:upload_dir(src, dpath, { on_progress = bar }))
    else r = h.check(sb:upload({ path = src }, dpath, { on_progress = bar })) end
  else
    local sb = h.check(unsandbox.Sandbox.get { name = sname, manager = m, resume = true })
    if h.check(sb:stat(spath)).type == "directory" then
      r = h.check(sb:download_dir(spath, dest, { on_progress = bar }))
    else
      local got, info = sb:download(spath, dest, { on_progress = bar })
      h.check(got, info)
      r = info
    end
  end
  if bar then io.stderr:write("\n") end
  if o.json then show(r, o) end
end

--- ps NAME: the processes of its runtime.
function sandbox.ps(o, h, m)
  local list = h.check(open(o, h, m):processes())
  for _, e in ipairs(list) do
    e.state = e.pty and "pty" or (e.running and "running" or ("exit " .. tostring(e.exit_code)))
  end
  rows(list, { "id", "pid", "state", "command" }, o)
end

--- kill NAME ID [--signal SIG]: the process keeps its state (for ps).
function sandbox.kill(o, h, m)
  local p = h.check(open(o, h, m):process(need(o, 4, "process id", h)))
  h.check(p:kill(o.signal or "TERM"))
  p:detach()
end

------------------------------------------------------------------------
-- un object
------------------------------------------------------------------------

--- upload:ID[/PATH] or agent:AGENT/RUN/PATH as a locator (+ --owner).
local function locator(o, h)
  local text = need(o, 3, "locator", h)
  local scope, rest = text:match("^(%a+):(.+)$")
  local loc
  if scope == "upload" then
    local id, path = rest:match("^([^/]+)/?(.*)$")
    loc = { scope = "upload", upload_id = id, path = path ~= "" and path or nil }
  elseif scope == "agent" then
    local a, r, path = rest:match("^([^/]+)/([^/]+)/?(.*)$")
    if not a then h.usage("agent locator: agent:AGENT_ID/RUN_ID/PATH") end
    loc = { scope = "agent", agent_id = a, run_id = r, path = path ~= "" and path or nil }
  else
    h.usage("locator: upload:UPLOAD_ID[/PATH] or agent:AGENT_ID/RUN_ID/PATH")
  end
  loc.owner = o.owner
  return loc
end

-- Runs f with the --subject bound (object calls need a subject or an owner).
local function as_subject(o, h, m, f)
  if not o.subject then
    if not o.owner then h.usage("object commands need --subject HEX or --owner TENANT/SUBJECT") end
    return f()
  end
  if not core.cp.valid_subject(o.subject) then h.usage("--subject expects 32 lowercase hex characters") end
  return m:with_subject(o.subject, f)
end

local object = {}

function object.put(o, h, m)
  local loc = locator(o, h)
  local bytes = read_input(o.rest[4], h)
  as_subject(o, h, m, function()
    local t = h.check(m:issue_object_ticket(loc, "upload", math.max(1, #bytes), nil, core.codec.sha256(bytes)))
    show(h.check(m:upload_with_ticket(t, bytes, nil, loc.owner ~= nil)), o)
  end)
end

function object.get(o, h, m)
  local loc = locator(o, h)
  as_subject(o, h, m, function()
    h.check(m:open_object(loc, nil, nil, nil, { on_data = function(b) io.stdout:write(b) end }))
  end)
end

function object.ls(o, h, m)
  local loc = locator(o, h)
  as_subject(o, h, m, function()
    rows(h.check(m:list_objects(loc)).objects or {}, { "key", "bytes", "last_modified" }, o)
  end)
end

function object.rm(o, h, m)
  local loc = locator(o, h)
  as_subject(o, h, m, function() show(h.check(m:delete_object(loc, o.purge)), o) end)
end

------------------------------------------------------------------------
-- un admin
------------------------------------------------------------------------

local admin = {}

function admin.tenants(o, h, m)
  local action = o.rest[3] or "list"
  if action == "list" then
    rows(h.check(m:list_tenants()).tenants or {}, { "id", "status", "display_name", "workspaces_in_use" }, o)
  elseif action == "create" then show(h.check(m:create_tenant(need(o, 4, "tenant id", h))), o)
  elseif action == "suspend" then show(h.check(m:suspend_tenant(need(o, 4, "tenant id", h))), o)
  else h.usage("unknown admin tenants action '" .. action .. "'") end
end

function admin.keys(o, h, m)
  local action = o.rest[3] or "list"
  local KEYS = { "id", "tenant_id", "key_prefix", "label", "permissions", "revoked_at" }
  if action == "list" then
    local r = o.rest[4] and h.check(m:list_tenant_keys(o.rest[4])) or h.check(m:list_admin_keys())
    local list = r.keys or {}
    for _, k in ipairs(list) do
      if type(k.permissions) == "table" then k.permissions = table.concat(k.permissions, ",") end
    end
    rows(list, KEYS, o)
  elseif action == "issue" then
    show(h.check(m:issue_tenant_key(need(o, 4, "tenant id", h), { label = o.label,
      permissions = o.act_as and { "act_as_subjects" } or nil })), o)
  elseif action == "issue-admin" then show(h.check(m:issue_admin_key { label = o.label }), o)
  elseif action == "revoke" then show(h.check(m:revoke_key(need(o, 4, "key id", h))), o)
  else h.usage("unknown admin keys action '" .. action .. "'") end
end

function admin.audit(o, h, m)
  rows(h.check(m:audit(o.limit)).events or {},
    { "created_at", "actor_kind", "actor_id", "action", "target", "outcome" }, o)
end

local GROUPS = { sandbox = sandbox, object = object, admin = admin }
local DEFAULT = { sandbox = "list", admin = "tenants" }

--- The index of the group word (sandbox, object, admin) when args are a
-- Control Plane command: the first word that is not one of its options,
-- so options may come before it (`un --subject HEX object ls ...`).
function M.group_index(args)
  local i = 1
  while args[i] do
    local a = args[i]
    if FLAGS[a] then i = i + 2
    elseif SWITCHES[a] then i = i + 1
    else return GROUPS[a] and i or nil end
  end
  return nil
end

--- Runs `un <group> ...`; h: cli.lua's helpers (usage, exit_with, check,
-- EXIT_*). Returns the exit code.
function M.main(args, h)
  local o = parse(args, h)          -- o.rest[1] is the group, [2] the action
  if o.verbose then unsandbox.debug(true) end   -- one line per exchange, MCP and streams too
  local name = o.rest[1]
  local group = GROUPS[name]
  local action = o.rest[2] or DEFAULT[name] or h.usage(name .. ": an action is expected")
  local f = group[action]
  if not f then h.usage("unknown " .. name .. " action '" .. action .. "'") end
  local m <close> = manager(o, h)
  return f(o, h, m) or 0
end

return M
