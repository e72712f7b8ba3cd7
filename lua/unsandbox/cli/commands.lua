--- un's subcommands of the execution API (languages, jobs, key, session,
-- service, snapshot), apart from cli.lua's option parsing and runs. Every
-- subcommand prints text for a person, or with --json the library's value
-- as one JSON document; numbers that are whole print as integers either
-- way (the library gives them as integers); a command that changes something (delete, restore, lock, unlock,
-- cancel) says what it did. HELP has each subcommand's own usage for
-- `un CMD --help`. cli.lua hands in its helpers (usage, check).
local cjson = require "cjson"
local core = require "unsandbox.core"

local M = {}

M.HELP = {
  languages = "usage: un languages [--json]",
  jobs = "usage: un jobs [--json]                list the active jobs\n" ..
         "       un jobs --get ID [--json]       a job's state and result\n" ..
         "       un jobs --cancel ID [--json]    cancel a pending or running job",
  key = "usage: un key [--json]                 validate the key pair",
  session = "usage: un session list | create [--shell SH] [-n MODE] [--ttl N] | get ID | delete ID\n" ..
            "       un session exec ID CMD | snapshot ID [NAME]          (--json: JSON output)\n" ..
            "       un session attach ID    the session's shell on this terminal (raw mode, resize);\n" ..
            "                               detach: Ctrl-] then d (Ctrl-] twice sends Ctrl-]); piped\n" ..
            "                               input is sent as typed; exit status: the shell's",
  service = "usage: un service list | create NAME BOOTSTRAP [-n MODE] | get ID | delete ID\n" ..
            "       un service exec ID CMD | logs ID | snapshot ID [NAME] (--json: JSON output)",
  snapshot = "usage: un snapshot list | get ID | restore ID | delete ID | lock ID | unlock ID [--json]",
}

-- A value in a line of text (tables as JSON).
local function text(v)
  if type(v) == "table" then return cjson.encode(v) end
  return tostring(v)
end
M.text = text

function M.print_json(v) print(cjson.encode(v)) end

function M.show_table(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do print(string.format("%-16s %s", k, text(t[k]))) end
end

function M.list(items, fields)
  for _, it in ipairs(items) do
    local cols = {}
    for i, f in ipairs(fields) do cols[i] = it[f] == nil and "-" or text(it[f]) end
    print(table.concat(cols, "\t"))
  end
end

-- A sudo challenge's one-time password (spec: "check your email"), read
-- from standard input, with a prompt when that is a terminal. The CLI may
-- read the terminal; the library never does.
M.SUDO = { on_sudo = function(err)
  if core.term.isatty(0) then
    io.stderr:write("[un] ", err.message, "; one-time password (empty cancels): ")
    io.stderr:flush()
  end
  local line = io.stdin:read("l")
  return line and line:match("^%s*(.-)%s*$") or nil
end }

-- text for a person, or the value as JSON
function M.emit(o, v, show) if o.json then M.print_json(v) else show(v) end end
function M.table_of(o, v) M.emit(o, v, M.show_table) end
function M.list_of(o, v, fields) M.emit(o, v, function(x) M.list(x, fields) end) end
function M.id_of(o, v) M.emit(o, v, function(x) print(x.id) end) end
function M.did(o, v, what) M.emit(o, v, function() print(what) end) end

-- a command's output passed through; its exit code becomes un's
local function relay(o, r)
  if o.json then M.print_json(r) else
    io.stdout:write(r.stdout)
    io.stderr:write(r.stderr)
  end
  return r.exit_code
end

-- The argument n of a subcommand, or a usage error naming what it is.
function M.needer(h)
  return function(o, n, what) return o.rest[n] or h.usage(what .. " expected") end
end

-- A subcommand with actions (`un session list`): each action is
-- function(o, c, id) with id the argument after the action.
local function resource(h, kind, actions)
  return function(o, c)
    local action = o.rest[2] or "list"
    local f = actions[action]
    if not f then h.usage("unknown " .. kind .. " action '" .. action .. "'") end
    return f(o, c, o.rest[3])
  end
end

local function sessions(h)
  local check, need = h.check, M.needer(h)
  return resource(h, "session", {
    list = function(o, c) M.list_of(o, check(c:list_sessions()), { "id", "status", "shell", "network_mode" }) end,
    create = function(o, c)
      M.id_of(o, check(c:create_session { shell = o.shell, network_mode = o.network, ttl = o.ttl,
        multiplexer = o.multiplexer }))
    end,
    get = function(o, c) M.table_of(o, check(c:get_session(need(o, 3, "session id")))) end,
    delete = function(o, c, id)
      M.did(o, check(c:delete_session(need(o, 3, "session id"), M.SUDO)), "deleted session " .. id)
    end,
    exec = function(o, c) return relay(o, check(c:session_execute(need(o, 3, "session id"), need(o, 4, "command")))) end,
    snapshot = function(o, c) M.id_of(o, check(c:session_snapshot(need(o, 3, "session id"), { name = o.rest[4] }))) end,
  })
end

local function services(h)
  local check, need = h.check, M.needer(h)
  return resource(h, "service", {
    list = function(o, c) M.list_of(o, check(c:list_services()), { "id", "name", "status" }) end,
    create = function(o, c)
      M.id_of(o, check(c:create_service { name = need(o, 3, "service name"),
        bootstrap = need(o, 4, "bootstrap command"), network_mode = o.network }))
    end,
    get = function(o, c) M.table_of(o, check(c:get_service(need(o, 3, "service id")))) end,
    delete = function(o, c, id)
      M.did(o, check(c:delete_service(need(o, 3, "service id"), M.SUDO)), "deleted service " .. id)
    end,
    logs = function(o, c)
      M.emit(o, check(c:service_logs(need(o, 3, "service id"))), function(log) io.stdout:write(log) end)
    end,
    exec = function(o, c) return relay(o, check(c:service_execute(need(o, 3, "service id"), need(o, 4, "command")))) end,
    snapshot = function(o, c) M.id_of(o, check(c:service_snapshot(need(o, 3, "service id"), { name = o.rest[4] }))) end,
  })
end

local function snapshots(h)
  local check, need = h.check, M.needer(h)
  return resource(h, "snapshot", {
    list = function(o, c)
      M.list_of(o, check(c:list_snapshots()), { "id", "name", "source_type", "source_id", "size_bytes" })
    end,
    get = function(o, c) M.table_of(o, check(c:get_snapshot(need(o, 3, "snapshot id")))) end,
    restore = function(o, c, id)
      M.did(o, check(c:restore_snapshot(need(o, 3, "snapshot id"))), "restored snapshot " .. id)
    end,
    delete = function(o, c, id)
      M.did(o, check(c:delete_snapshot(need(o, 3, "snapshot id"), M.SUDO)), "deleted snapshot " .. id)
    end,
    lock = function(o, c, id) M.did(o, check(c:lock_snapshot(need(o, 3, "snapshot id"))), "locked snapshot " .. id) end,
    unlock = function(o, c, id)
      M.did(o, check(c:unlock_snapshot(need(o, 3, "snapshot id"), M.SUDO)), "unlocked snapshot " .. id)
    end,
  })
end

--- The subcommands, each function(o, c) -> exit code or nil (0). h: the
-- CLI's helpers (check, usage).
function M.commands(h)
  local check = h.check
  local commands = { session = sessions(h), service = services(h), snapshot = snapshots(h) }

  function commands.languages(o, c)
    M.emit(o, check(c:get_languages()), function(l) print(table.concat(l, "\n")) end)
  end

  function commands.jobs(o, c)
    if o.get then M.table_of(o, check(c:get_job(o.get)))
    elseif o.cancel then M.did(o, check(c:cancel_job(o.cancel)), "cancelled job " .. o.cancel)
    else M.list_of(o, check(c:list_jobs()), { "job_id", "status", "language" }) end
  end

  function commands.key(o, c) M.table_of(o, check(c:validate_keys())) end

  return commands
end

return M
