--- The `un` subcommands of the execution API's administration: session
-- power and attach, service administration and env vault, snapshot create
-- and clone, and the image commands. Kept apart from cli/init.lua, which
-- hands its commands table and helpers to extend(); an action named here
-- is tried first, every other action goes to cli/init.lua's own table.
-- Output as every subcommand's: text for a person or, with --json, the
-- library's value. Internal module.
local out = require "unsandbox.cli.commands"
local cli_attach = require "unsandbox.cli.attach"

local M = {}

M.USAGE = [[
       un session freeze ID | unfreeze ID | boost ID [VCPU] | unboost ID
]] .. cli_attach.USAGE .. [[
       un service freeze ID | unfreeze ID | lock ID | unlock ID | resize ID VCPU | logs ID [--all]
       un service update ID vcpu=N|unfreeze_on_demand=BOOL|show_freeze_page=BOOL ...
       un service domains ID add|remove|replace NAME... | redeploy ID [BOOTSTRAP]
       un service env ID | env-set ID FILE|- | env-export ID | env-delete ID
       un snapshot create session|service ID [NAME] | clone ID session|service [NAME]
       un image list [all|owned|shared|public] | get ID | publish service|snapshot ID [NAME]
       un image delete|lock|unlock|trusted ID | visibility ID private|unlisted|public
       un image grant|revoke|transfer ID KEY | spawn ID [NAME] | clone ID [NAME]
]]

-- "true"/"false" and integers from KEY=VALUE arguments.
local function scalar(h, key, v)
  if key == "vcpu" then
    local n = math.tointeger(tonumber(v))
    if not n then h.usage("vcpu expects an integer, got '" .. v .. "'") end
    return n
  end
  if v == "true" then return true elseif v == "false" then return false end
  h.usage(key .. " expects true or false, got '" .. v .. "'")
end

-- The words after position n.
local function words(o, n)
  local list = {}
  for i = n, #o.rest do list[#list + 1] = o.rest[i] end
  return list
end

local function read_env(h, path)
  local f, err
  if path == "-" then f = io.stdin else f, err = io.open(path, "rb") end
  if not f then h.usage("cannot read " .. path .. ": " .. tostring(err)) end
  local text = f:read("a")
  if f ~= io.stdin then f:close() end
  return text
end

local function session_actions(h)
  local check, need = h.check, h.need
  local function id(o) return need(o, 3, "session id") end
  return {
    freeze = function(o, c) out.did(o, check(c:freeze_session(id(o))), "froze session " .. id(o)) end,
    unfreeze = function(o, c) out.did(o, check(c:unfreeze_session(id(o))), "unfroze session " .. id(o)) end,
    boost = function(o, c)
      local n = o.rest[4] and math.tointeger(tonumber(o.rest[4]))
      if o.rest[4] and not n then h.usage("boost expects an integer vcpu") end
      out.emit(o, check(c:boost_session(id(o), n)), function(r) print(r.vcpu) end)
    end,
    unboost = function(o, c) out.did(o, check(c:unboost_session(id(o))), "unboosted session " .. id(o)) end,
    attach = function(o, c) return cli_attach.run(c, id(o), h) end,
  }
end

local function service_actions(h)
  local check, need = h.check, h.need
  local function id(o) return need(o, 3, "service id") end
  return {
    freeze = function(o, c) out.did(o, check(c:freeze_service(id(o))), "froze service " .. id(o)) end,
    unfreeze = function(o, c) out.did(o, check(c:unfreeze_service(id(o))), "unfroze service " .. id(o)) end,
    lock = function(o, c) out.did(o, check(c:lock_service(id(o))), "locked service " .. id(o)) end,
    unlock = function(o, c) out.did(o, check(c:unlock_service(id(o), h.SUDO)), "unlocked service " .. id(o)) end,
    resize = function(o, c)
      out.emit(o, check(c:resize_service(id(o), scalar(h, "vcpu", need(o, 4, "vcpu")))),
        function(r) print(r.vcpu) end)
    end,
    logs = function(o, c)
      out.emit(o, check(c:service_logs(id(o), { all = o.all or nil })), function(log) io.stdout:write(log) end)
    end,
    update = function(o, c)
      local opts = {}
      for _, w in ipairs(words(o, 4)) do
        local k, v = w:match("^([%w_]+)=(.*)$")
        if not k then h.usage("update expects KEY=VALUE, got '" .. w .. "'") end
        opts[k] = scalar(h, k, v)
      end
      out.table_of(o, check(c:update_service(id(o), opts)))
    end,
    domains = function(o, c)
      local how = need(o, 4, "add, remove or replace")
      out.emit(o, check(c:set_service_domains(id(o), { [how] = words(o, 5) })),
        function(r) print(table.concat(r.domains or {}, "\n")) end)
    end,
    redeploy = function(o, c) out.did(o, check(c:redeploy_service(id(o), { bootstrap = o.rest[4] })),
      "redeployed service " .. id(o)) end,
    env = function(o, c) out.table_of(o, check(c:get_service_env(id(o)))) end,
    ["env-set"] = function(o, c)
      out.emit(o, check(c:set_service_env(id(o), read_env(h, need(o, 4, "env file or -")))),
        function(r) print(r.count) end)
    end,
    ["env-export"] = function(o, c)
      out.emit(o, check(c:export_service_env(id(o))), function(text) io.stdout:write(text) end)
    end,
    ["env-delete"] = function(o, c) out.did(o, check(c:delete_service_env(id(o))),
      "deleted the env vault of service " .. id(o)) end,
  }
end

local function snapshot_actions(h)
  local check, need = h.check, h.need
  return {
    create = function(o, c)
      out.id_of(o, check(c:create_snapshot { source_type = need(o, 3, "session or service"),
        source_id = need(o, 4, "source id"), name = o.rest[5] }))
    end,
    clone = function(o, c)
      out.id_of(o, check(c:clone_snapshot(need(o, 3, "snapshot id"), { type = need(o, 4, "session or service"),
        name = o.rest[5] })))
    end,
  }
end

local function image_actions(h)
  local check, need = h.check, h.need
  local function id(o) return need(o, 3, "image id") end
  local function key(o) return need(o, 4, "public key") end
  return {
    list = function(o, c)
      out.list_of(o, check(c:list_images(o.rest[3])), { "id", "name", "visibility", "source_type", "owner_api_key" })
    end,
    get = function(o, c) out.table_of(o, check(c:get_image(id(o)))) end,
    publish = function(o, c)
      out.id_of(o, check(c:publish_image { source_type = need(o, 3, "service or snapshot"),
        source_id = need(o, 4, "source id"), name = o.rest[5] }))
    end,
    delete = function(o, c) out.did(o, check(c:delete_image(id(o), h.SUDO)), "deleted image " .. id(o)) end,
    lock = function(o, c) out.did(o, check(c:lock_image(id(o))), "locked image " .. id(o)) end,
    unlock = function(o, c) out.did(o, check(c:unlock_image(id(o), h.SUDO)), "unlocked image " .. id(o)) end,
    visibility = function(o, c) out.did(o, check(c:set_image_visibility(id(o), need(o, 4, "visibility"))),
      "image " .. id(o) .. " is now " .. o.rest[4]) end,
    grant = function(o, c) out.did(o, check(c:grant_image_access(id(o), key(o))),
      "granted image " .. id(o) .. " to " .. key(o)) end,
    revoke = function(o, c) out.did(o, check(c:revoke_image_access(id(o), key(o))),
      "revoked image " .. id(o) .. " from " .. key(o)) end,
    transfer = function(o, c) out.did(o, check(c:transfer_image(id(o), key(o))),
      "transferred image " .. id(o) .. " to " .. key(o)) end,
    trusted = function(o, c)
      out.emit(o, check(c:image_trusted(id(o))), function(keys) print(table.concat(keys, "\n")) end)
    end,
    spawn = function(o, c) out.id_of(o, check(c:spawn_image(id(o), { name = o.rest[4] }))) end,
    clone = function(o, c) out.id_of(o, check(c:clone_image(id(o), { name = o.rest[4] }))) end,
  }
end

-- Actions of kind tried first, then the base command (cli.lua's own).
local function layered(kind, actions, base, h)
  return function(o, c)
    local f = actions[o.rest[2] or ""]
    if f then return f(o, c) end
    if base then return base(o, c) end
    h.usage("unknown " .. kind .. " action '" .. tostring(o.rest[2]) .. "'")
  end
end

--- Adds the subcommands to commands. h: usage, check, need, list,
-- show_table, SUDO (cli.lua's helpers).
function M.extend(commands, h)
  commands.session = layered("session", session_actions(h), commands.session, h)
  commands.service = layered("service", service_actions(h), commands.service, h)
  commands.snapshot = layered("snapshot", snapshot_actions(h), commands.snapshot, h)
  local images = image_actions(h)
  commands.image = function(o, c)
    if not o.rest[2] then return images.list(o, c) end
    return layered("image", images, nil, h)(o, c)
  end
end

return M
