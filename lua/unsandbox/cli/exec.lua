--- The `un` commands of the execution API (languages, jobs, key,
-- session, service, snapshot, image): each function(o, c) takes the
-- parsed command line (o.words: its arguments, counted by the parser
-- against the table's `args`) and a Client, and prints through
-- cli/output.lua. Internal module.
local compat = require "unsandbox.compat"
local core = require "unsandbox.core"
local fail = require "unsandbox.cli.fail"
local out = require "unsandbox.cli.output"

local M = {}

local check, usage = fail.check, fail.usage

-- A sudo challenge's one-time password (the service mails it), read from
-- standard input, with a prompt when that is a terminal. The CLI may read
-- the terminal; the library never does.
local SUDO = { on_sudo = function(err)
  if core.term.isatty(0) then
    io.stderr:write("[un] ", err.message, "; one-time password (empty cancels): ")
    io.stderr:flush()
  end
  local line = io.stdin:read("l")
  return line and line:match("^%s*(.-)%s*$") or nil
end }

--- The command of `exec ID CMD...`: one word is a shell line, several an
-- argv (each quoted for the shell, so it stays one word).
function M.command_line(words, from)
  if #words == from then return words[from] end
  return core.cp.shell_quote({ compat.unpack(words, from) })
end

-- A command's output passed through; its exit code becomes un's.
local function relay(o, r)
  if o.json then out.json(r) else
    io.stdout:write(r.stdout or "")
    io.stderr:write(r.stderr or "")
  end
  return r.exit_code, true
end

local function vcpu(v)
  local n = compat.tointeger(tonumber(v))
  if not n then usage("VCPU expects an integer, got '" .. v .. "'") end
  return n
end

-- A library call on the user's words: its misuse is a usage error of o.where.
local function call(o, f, ...) return fail.guard(o.where, f, ...) end

function M.languages(o, c) out.lines(o, check(c:get_languages()), "languages") end

function M.jobs(o, c)
  if o.get and o.cancel then usage("jobs: --get and --cancel exclude each other") end
  if o.get then return out.document(o, check(call(o, c.get_job, c, o.get))) end
  if o.cancel then
    return out.did(o, check(call(o, c.cancel_job, c, o.cancel)), "cancelled job " .. o.cancel)
  end
  out.list(o, check(c:list_jobs()), { "job_id", "status", "language" }, "active jobs")
end

function M.key(o, c) out.document(o, check(c:validate_keys())) end

------------------------------------------------------------------------
-- sessions
------------------------------------------------------------------------

local session = {}
M.session = session

function session.list(o, c)
  out.list(o, check(c:list_sessions()), { "id", "status", "shell", "network_mode" }, "sessions")
end
function session.create(o, c)
  if o.tmux and o.screen then fail.usage(o.where .. ": --tmux and --screen exclude each other") end
  out.id(o, check(c:create_session { shell = o.shell, network_mode = o.network, ttl = o.ttl,
    multiplexer = o.tmux and "tmux" or o.screen and "screen" or nil }))
end
function session.get(o, c) out.document(o, check(call(o, c.get_session, c, o.words[1]))) end
function session.exec(o, c)
  return relay(o, check(call(o, c.session_execute, c, o.words[1], M.command_line(o.words, 2))))
end
function session.snapshot(o, c)
  out.id(o, check(call(o, c.session_snapshot, c, o.words[1], { name = o.words[2] })))
end
function session.freeze(o, c)
  out.did(o, check(call(o, c.freeze_session, c, o.words[1])), "froze session " .. o.words[1])
end
function session.unfreeze(o, c)
  out.did(o, check(call(o, c.unfreeze_session, c, o.words[1])), "unfroze session " .. o.words[1])
end
function session.boost(o, c)
  local n = o.words[2] and vcpu(o.words[2])
  local r = check(call(o, c.boost_session, c, o.words[1], n))
  out.did(o, r, "session " .. o.words[1] .. " now runs its commands with " .. tostring(r.vcpu or n) .. " vcpu")
end
function session.unboost(o, c)
  out.did(o, check(call(o, c.unboost_session, c, o.words[1])), "session " .. o.words[1] .. " is back to 1 vcpu")
end
function session.delete(o, c)
  out.did(o, check(call(o, c.delete_session, c, o.words[1], SUDO)), "deleted session " .. o.words[1])
end

------------------------------------------------------------------------
-- services
------------------------------------------------------------------------

local service = {}
M.service = service

function service.list(o, c) out.list(o, check(c:list_services()), { "id", "name", "status" }, "services") end
function service.create(o, c)
  out.id(o, check(call(o, c.create_service, c, { name = o.words[1], bootstrap = o.words[2],
    network_mode = o.network })))
end
function service.get(o, c) out.document(o, check(call(o, c.get_service, c, o.words[1]))) end
function service.exec(o, c)
  return relay(o, check(call(o, c.service_execute, c, o.words[1], M.command_line(o.words, 2))))
end
function service.logs(o, c)
  out.raw(o, check(call(o, c.service_logs, c, o.words[1], { all = o.all or nil })))
end
function service.snapshot(o, c)
  out.id(o, check(call(o, c.service_snapshot, c, o.words[1], { name = o.words[2] })))
end

-- The actions that change a service and say so: name -> {method, message}.
local SAID = {
  freeze = { "freeze_service", "froze service %s" }, unfreeze = { "unfreeze_service", "unfroze service %s" },
  lock = { "lock_service", "locked service %s" }, unlock = { "unlock_service", "unlocked service %s", SUDO },
  delete = { "delete_service", "deleted service %s", SUDO },
  env_delete = { "delete_service_env", "emptied the env vault of service %s" },
}
for name, s in pairs(SAID) do
  service[name] = function(o, c)
    out.did(o, check(call(o, c[s[1]], c, o.words[1], s[3])), string.format(s[2], o.words[1]))
  end
end

function service.resize(o, c)
  local r = check(call(o, c.resize_service, c, o.words[1], vcpu(o.words[2])))
  out.did(o, r, "service " .. o.words[1] .. " now has " .. tostring(r.vcpu or o.words[2]) .. " vcpu")
end

-- "true"/"false" and integers from KEY=VALUE arguments.
local function scalar(key, v)
  if key == "vcpu" then return vcpu(v) end
  if v == "true" then return true elseif v == "false" then return false end
  usage("service update: " .. key .. " expects true or false, got '" .. v .. "'")
end

function service.update(o, c)
  local opts, said = {}, {}
  for i = 2, #o.words do
    local k, v = o.words[i]:match("^([%w_]+)=(.*)$")
    if not k then usage("service update expects KEY=VALUE, got '" .. o.words[i] .. "'") end
    opts[k] = scalar(k, v)
    said[#said + 1] = k .. "=" .. v
  end
  out.did(o, check(call(o, c.update_service, c, o.words[1], opts)),
    "updated service " .. o.words[1] .. ": " .. table.concat(said, ", "))
end

function service.domains(o, c)
  local how = o.words[2]
  if how ~= "add" and how ~= "remove" and how ~= "replace" then
    usage("service domains: add, remove or replace expected, got '" .. how .. "'")
  end
  local r = check(call(o, c.set_service_domains, c, o.words[1], { [how] = { compat.unpack(o.words, 3) } }))
  local list = r.domains or {}
  out.did(o, r, "service " .. o.words[1] .. " domains: " .. (#list > 0 and table.concat(list, ", ") or "none"))
end

function service.redeploy(o, c)
  out.did(o, check(call(o, c.redeploy_service, c, o.words[1], { bootstrap = o.words[2] })),
    "redeployed service " .. o.words[1])
end
function service.env(o, c) out.document(o, check(call(o, c.get_service_env, c, o.words[1]))) end

local function read_env(path)
  local f, err
  if path == "-" then f = io.stdin else f, err = io.open(path, "rb") end
  if not f then usage("cannot read " .. path .. ": " .. tostring(err)) end
  local text = f:read("a")
  if f ~= io.stdin then f:close() end
  return text
end

function service.env_set(o, c)
  local r = check(call(o, c.set_service_env, c, o.words[1], read_env(o.words[2])))
  out.did(o, r, "stored " .. tostring(r.count or "the") .. " variable(s) in the env vault of service " .. o.words[1])
end
function service.env_export(o, c) out.raw(o, check(call(o, c.export_service_env, c, o.words[1]))) end

------------------------------------------------------------------------
-- snapshots and images
------------------------------------------------------------------------

local snapshot = {}
M.snapshot = snapshot

local function source_type(word, a, b)
  if word ~= a and word ~= b then usage(a .. " or " .. b .. " expected, got '" .. word .. "'") end
  return word
end

function snapshot.list(o, c)
  out.list(o, check(c:list_snapshots()), { "id", "name", "source_type", "source_id", "size_bytes" }, "snapshots")
end
function snapshot.get(o, c) out.document(o, check(call(o, c.get_snapshot, c, o.words[1]))) end
function snapshot.create(o, c)
  out.id(o, check(call(o, c.create_snapshot, c, { source_type = source_type(o.words[1], "session", "service"),
    source_id = o.words[2], name = o.words[3] })))
end
function snapshot.clone(o, c)
  out.id(o, check(call(o, c.clone_snapshot, c, o.words[1], { type = source_type(o.words[2], "session", "service"),
    name = o.words[3] })))
end
for name, s in pairs {
  restore = { "restore_snapshot", "restored snapshot %s" }, lock = { "lock_snapshot", "locked snapshot %s" },
  unlock = { "unlock_snapshot", "unlocked snapshot %s", SUDO },
  delete = { "delete_snapshot", "deleted snapshot %s", SUDO },
} do
  snapshot[name] = function(o, c)
    out.did(o, check(call(o, c[s[1]], c, o.words[1], s[3])), string.format(s[2], o.words[1]))
  end
end

local image = {}
M.image = image

function image.list(o, c)
  local filter = o.words[1]
  if filter and not ({ all = true, owned = true, shared = true, public = true })[filter] then
    usage("image list: all, owned, shared or public expected, got '" .. filter .. "'")
  end
  out.list(o, check(c:list_images(filter)), { "id", "name", "visibility", "source_type", "owner_api_key" }, "images")
end
function image.get(o, c) out.document(o, check(call(o, c.get_image, c, o.words[1]))) end
function image.publish(o, c)
  out.id(o, check(call(o, c.publish_image, c, { source_type = source_type(o.words[1], "service", "snapshot"),
    source_id = o.words[2], name = o.words[3] })))
end
function image.visibility(o, c)
  out.did(o, check(call(o, c.set_image_visibility, c, o.words[1], o.words[2])),
    "image " .. o.words[1] .. " is now " .. o.words[2])
end
function image.trusted(o, c) out.lines(o, check(call(o, c.image_trusted, c, o.words[1])), "trusted keys") end
function image.spawn(o, c) out.id(o, check(call(o, c.spawn_image, c, o.words[1], { name = o.words[2] }))) end
function image.clone(o, c) out.id(o, check(call(o, c.clone_image, c, o.words[1], { name = o.words[2] }))) end
for name, s in pairs {
  grant = { "grant_image_access", "granted image %s to %s" },
  revoke = { "revoke_image_access", "revoked image %s from %s" },
  transfer = { "transfer_image", "transferred image %s to %s" },
  lock = { "lock_image", "locked image %s" }, unlock = { "unlock_image", "unlocked image %s", SUDO },
  delete = { "delete_image", "deleted image %s", SUDO },
} do
  image[name] = function(o, c)
    local second = s[3] or o.words[2]
    out.did(o, check(call(o, c[s[1]], c, o.words[1], second)), string.format(s[2], o.words[1], o.words[2]))
  end
end

return M
