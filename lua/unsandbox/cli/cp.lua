--- The `un` commands of the Control Plane (sandbox, object, admin): each
-- function(o, m) takes the parsed command line and a Manager (made from
-- SANDBOX_CONTROL_PLANE_URL and SANDBOX_TOKEN, or --url and
-- --token-file) and prints through cli/output.lua. Internal module.
local unsandbox = require "unsandbox"
local core = require "unsandbox.core"
local exec = require "unsandbox.cli.exec"
local exits = require "unsandbox.cli.exits"
local fail = require "unsandbox.cli.fail"
local out = require "unsandbox.cli.output"

local M = {}

local check, usage = fail.check, fail.usage

local function read_input(path)
  if path == nil or path == "-" then return io.stdin:read("a") or "" end
  local f, err = io.open(path, "rb")
  if not f then usage("cannot read " .. tostring(err)) end
  local s = f:read("a")
  f:close()
  return s
end

local function call(o, f, ...) return fail.guard(o.where, f, ...) end

------------------------------------------------------------------------
-- un sandbox
------------------------------------------------------------------------

local sandbox = {}
M.sandbox = sandbox

-- The named sandbox, started if it is not running.
local function open(o, m)
  return check(call(o, unsandbox.Sandbox.get, { name = o.words[1], manager = m, resume = true }))
end

function sandbox.create(o, m)
  local sb = check(call(o, unsandbox.Sandbox.create, { name = o.words[1], template = o.template, manager = m }))
  local st = sb:status()
  out.id(o, st, sb:name() .. "\t" .. tostring(st.sandbox_id))
end

function sandbox.list(o, m)
  out.list(o, check(m:list_runtimes()), { "id", "workspace_id", "status", "template" }, "running sandboxes")
end

--- Streams the command's output live (with --json: collected, then one
-- document); un's exit code is the command's.
function sandbox.run(o, m)
  local sb = open(o, m)
  local cmd = exec.command_line(o.words, 2)
  local got = { stdout = {}, stderr = {} }
  local r = check(call(o, sb.stream, sb, cmd, function(channel, chunk)
    if o.json then
      local list = got[channel] or got.stdout
      list[#list + 1] = chunk
      return
    end
    local f = channel == "stderr" and io.stderr or io.stdout
    f:write(chunk)
    f:flush()
  end, o.timeout))
  if o.json then
    out.json { exit_code = r.exit_code, stdout = table.concat(got.stdout), stderr = table.concat(got.stderr),
      timed_out = r.timed_out, output_truncated = r.output_truncated }
  end
  if r.output_truncated and not o.json then io.stderr:write("[un] output truncated\n") end
  if r.timed_out then fail.exit_with(exits.codes.timeout, "un: the command exceeded its time limit") end
  return r.exit_code or 1, true
end

function sandbox.read(o, m)
  local sb = open(o, m)
  local bytes = check(call(o, sb.download, sb, o.words[2]))
  if o.json then return out.json { path = o.words[2], content = bytes } end
  io.stdout:write(bytes)
end

function sandbox.write(o, m)
  local sb = open(o, m)
  local r = check(call(o, sb.upload, sb, read_input(o.words[3]), o.words[2]))
  out.did(o, r, string.format("wrote %s in sandbox %s (%d bytes)", r.path or o.words[2], o.words[1], r.bytes or 0))
end

function sandbox.stop(o, m)
  local sb = check(call(o, unsandbox.Sandbox.get, { name = o.words[1], manager = m }))
  out.did(o, check(sb:stop()), "stopped sandbox " .. o.words[1] .. " (its files stay)")
end

function sandbox.checkpoint(o, m)
  local r = check(open(o, m):checkpoint())
  if o.json then return out.json(r) end
  print(r.checkpoint_id .. "\t" .. tostring(r.sha256))
end

function sandbox.checkpoints(o, m)
  local r = check(open(o, m):list_checkpoints())
  out.list(o, r.checkpoints or {}, { "checkpoint_id", "bytes", "last_modified" }, "checkpoints")
end

function sandbox.restore(o, m)
  local sb = open(o, m)
  local r = check(call(o, sb.restore, sb, o.words[2]))
  out.did(o, r, "restored sandbox " .. o.words[1] .. " to checkpoint " .. o.words[2])
end

-- exec, cp, ps and kill: thin wrappers over the agent tools
-- (docs/guide/agent-tools.md)

--- exec NAME [--stdin] -- CMD: a Process whose output streams to ours as
-- it comes; with --stdin our stdin is written to its stdin (then closed).
-- un's exit code is the process's (128 + N for a signal N).
function sandbox.exec(o, m)
  local sb = open(o, m)
  local function to_stdout(s) io.stdout:write(s); io.stdout:flush() end
  local function to_stderr(s) io.stderr:write(s); io.stderr:flush() end
  local p = check(call(o, sb.spawn, sb, exec.command_line(o.words, 2),
    { on_stdout = to_stdout, on_stderr = to_stderr }))
  if o.stdin then
    for chunk in function() return io.stdin:read(65536) end do
      check(p:write(chunk))
      local got, rerr = p:read(0.001)           -- what it answered so far goes out
      if got == nil and rerr then check(nil, rerr) end
    end
  end
  check(p:close_stdin())
  local code = check(p:wait())
  p:close()
  return code < 0 and 128 - code or code, true
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

-- NAME:PATH as name, path; nil for a local path.
local function remote(spec)
  local name, path = spec:match("^([^/:]+):(.*)$")
  if name and path ~= "" then return name, path end
end

--- cp SRC DEST: one of them NAME:PATH; streamed, checked, directories whole.
function sandbox.cp(o, m)
  local src, dest = o.words[1], o.words[2]
  local sname, spath = remote(src)
  local dname, dpath = remote(dest)
  if (sname ~= nil) == (dname ~= nil) then usage(o.where .. ": exactly one of SRC and DEST is NAME:PATH") end
  local bar = progress_bar(src .. " -> " .. dest)
  local r
  if dname then
    local sb = check(call(o, unsandbox.Sandbox.get, { name = dname, manager = m, resume = true }))
    if core.files.read_dir(src) ~= nil then r = check(call(o, sb.upload_dir, sb, src, dpath, { on_progress = bar }))
    else r = check(call(o, sb.upload, sb, { path = src }, dpath, { on_progress = bar })) end
  else
    local sb = check(call(o, unsandbox.Sandbox.get, { name = sname, manager = m, resume = true }))
    if check(call(o, sb.stat, sb, spath)).type == "directory" then
      r = check(call(o, sb.download_dir, sb, spath, dest, { on_progress = bar }))
    else
      local got, info = call(o, sb.download, sb, spath, dest, { on_progress = bar })
      check(got, info)
      r = info
    end
  end
  if bar then io.stderr:write("\n") end
  out.did(o, r, "copied " .. src .. " to " .. dest)
end

--- ps NAME: the processes of its runtime.
function sandbox.ps(o, m)
  local list = check(open(o, m):processes())
  for _, e in ipairs(list) do
    e.state = e.pty and "pty" or (e.running and "running" or ("exit " .. tostring(e.exit_code)))
  end
  out.list(o, list, { "id", "pid", "state", "command" }, "processes")
end

--- kill NAME ID [--signal SIG]: the process keeps its state (for ps).
function sandbox.kill(o, m)
  local sb = open(o, m)
  local p = check(call(o, sb.process, sb, o.words[2]))
  local sig = o.signal or "TERM"
  check(p:kill(sig))
  p:detach()
  out.did(o, { id = o.words[2], signal = sig },
    "sent " .. sig .. " to process " .. o.words[2] .. " of sandbox " .. o.words[1])
end

------------------------------------------------------------------------
-- un object
------------------------------------------------------------------------

--- upload:ID[/PATH] or agent:AGENT/RUN/PATH as a locator (+ --owner).
local function locator(o)
  local text = o.words[1]
  local scope, rest = text:match("^(%a+):(.+)$")
  local loc
  if scope == "upload" then
    local id, path = rest:match("^([^/]+)/?(.*)$")
    loc = { scope = "upload", upload_id = id, path = path ~= "" and path or nil }
  elseif scope == "agent" then
    local a, r, path = rest:match("^([^/]+)/([^/]+)/?(.*)$")
    if not a then usage(o.where .. ": an agent locator is agent:AGENT_ID/RUN_ID/PATH, got '" .. text .. "'") end
    loc = { scope = "agent", agent_id = a, run_id = r, path = path ~= "" and path or nil }
  else
    usage(o.where .. ": LOCATOR is upload:UPLOAD_ID[/PATH] or agent:AGENT_ID/RUN_ID/PATH, got '" .. text .. "'")
  end
  loc.owner = o.owner
  return loc
end

-- Runs f with the --subject bound (object calls need a subject or an owner).
local function as_subject(o, m, f)
  if not o.subject then
    if not o.owner then
      usage(o.where .. ": objects belong to a subject: give --subject HEX (a tenant key with "
        .. "act_as_subjects) or --owner TENANT/SUBJECT (admin credentials)")
    end
    return f()
  end
  return m:with_subject(o.subject, f)
end

local object = {}
M.object = object

function object.put(o, m)
  local loc = locator(o)
  local bytes = read_input(o.words[2])
  as_subject(o, m, function()
    local t = check(call(o, m.issue_object_ticket, m, loc, "upload", math.max(1, #bytes), nil,
      core.codec.sha256(bytes)))
    local r = check(m:upload_with_ticket(t, bytes, nil, loc.owner ~= nil))
    out.did(o, r, "stored " .. o.words[1] .. " (" .. #bytes .. " bytes"
      .. (r.version_id and ", version " .. tostring(r.version_id) or "") .. ")")
  end)
end

function object.get(o, m)
  local loc = locator(o)
  as_subject(o, m, function()
    check(call(o, m.open_object, m, loc, nil, nil, nil, { on_data = function(b) io.stdout:write(b) end }))
  end)
end

function object.ls(o, m)
  local loc = locator(o)
  as_subject(o, m, function()
    out.list(o, check(call(o, m.list_objects, m, loc)).objects or {}, { "key", "bytes", "last_modified" }, "objects")
  end)
end

function object.rm(o, m)
  local loc = locator(o)
  as_subject(o, m, function()
    out.did(o, check(call(o, m.delete_object, m, loc, o.purge)),
      "deleted " .. o.words[1] .. (o.purge and " and all its versions" or ""))
  end)
end

------------------------------------------------------------------------
-- un admin
------------------------------------------------------------------------

local admin = {}
M.admin = admin

local function need(o, n, what)
  return o.words[n] or usage(o.where .. " " .. o.words[1] .. ": " .. what .. " expected")
end

function admin.tenants(o, m)
  local what = o.words[1] or "list"
  if what == "list" then
    return out.list(o, check(m:list_tenants()).tenants or {},
      { "id", "status", "display_name", "workspaces_in_use" }, "tenants")
  end
  local id = need(o, 2, "ID")
  if what == "create" then out.did(o, check(call(o, m.create_tenant, m, id)), "created tenant " .. id)
  elseif what == "suspend" then out.did(o, check(call(o, m.suspend_tenant, m, id)), "suspended tenant " .. id)
  else usage("admin tenants: list, create or suspend expected, got '" .. what .. "'") end
end

-- A key just issued: its secret is shown once, so it goes to stdout alone
-- on its line after what was done.
local function issued(o, r, what)
  if o.json then return out.json(r) end
  print("issued " .. what .. " " .. tostring(r.id) .. " (its token is shown once, below)")
  print(r.api_key)
end

function admin.keys(o, m)
  local what = o.words[1] or "list"
  if what == "list" then
    local r = o.words[2] and check(call(o, m.list_tenant_keys, m, o.words[2])) or check(m:list_admin_keys())
    return out.list(o, r.keys or {}, { "id", "tenant_id", "key_prefix", "label", "permissions", "revoked_at" }, "keys")
  elseif what == "issue" then
    local t = need(o, 2, "TENANT")
    issued(o, check(call(o, m.issue_tenant_key, m, t, { label = o.label,
      permissions = o.act_as and { "act_as_subjects" } or nil })), "a key of tenant " .. t .. ":")
  elseif what == "issue-admin" then issued(o, check(m:issue_admin_key { label = o.label }), "an admin key:")
  elseif what == "revoke" then
    local id = need(o, 2, "KEY_ID")
    out.did(o, check(call(o, m.revoke_key, m, id)), "revoked key " .. id)
  else usage("admin keys: list, issue, issue-admin or revoke expected, got '" .. what .. "'") end
end

function admin.audit(o, m)
  out.list(o, check(m:audit(o.limit)).events or {},
    { "created_at", "actor_kind", "actor_id", "action", "target", "outcome" }, "audit rows")
end

return M
