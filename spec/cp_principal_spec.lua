-- #integration specs of who a Control Plane workspace belongs to: the
-- principal comes from the credential and the headers it may send, never
-- from a body field that widens it. Played as a hostile tenant key
-- would, through the HTTP API only, against a real unsandboxd.
-- One Lua: the subject is the server's wire (raw HTTP).
local server = require "spec.helpers.unsandboxd"
local cp = require "spec.helpers.cp"
local json = require "cjson"
local lua = require "spec.helpers.lua"

local req = cp.request
local SUBJECT = string.rep("c", 32)
local NOT_FOR_SUBJECT = "this credential may not act for a subject"

describe("Control Plane workspace principals #integration", function()
  local srv, plain, acting

  setup(function()
    srv = server.start {}
    plain = cp.tenant_key(srv, "tenant-p")
    acting = cp.tenant_key(srv, "tenant-p", { act_as_subjects = true })
  end)
  teardown(function() if srv then srv.stop() end end)

  local function as_subject(subject)
    return { ["X-Acting-Subject"] = subject }
  end

  it("refuse a body principal of kind subject from a key that may not act for subjects", function()
    local body = { session_id = "victim", principal = { kind = "subject", id = SUBJECT } }
    local st, doc = req(srv, "POST", "/v1/workspaces", { token = plain, body = body })
    assert.are.equal(403, st, json.encode(doc))
    assert.same({ error = NOT_FOR_SUBJECT }, doc)
    st, doc = req(srv, "POST", "/v1/workspaces/resolve", { token = plain, body = body })
    assert.are.equal(403, st, json.encode(doc))
    assert.same({ error = NOT_FOR_SUBJECT }, doc)
    -- the break-glass token may never act for a subject either
    st, doc = req(srv, "POST", "/v1/workspaces", { token = srv.token, body = body,
      headers = { ["X-Sandbox-Tenant"] = "tenant-p" } })
    assert.are.equal(403, st, json.encode(doc))
    assert.same({ error = NOT_FOR_SUBJECT }, doc)
  end)

  it("cannot squat a subject's workspace: the subject's own create and sandbox work", function()
    local body = { session_id = "squat", principal = { kind = "subject", id = SUBJECT } }
    assert.are.equal(403, (req(srv, "POST", "/v1/workspaces", { token = plain, body = body })))
    local st, lease = req(srv, "POST", "/v1/workspaces", { token = acting, body = { session_id = "squat" },
      headers = as_subject(SUBJECT) })
    assert.are.equal(201, st, json.encode(lease))
    assert.is_true(lease.created)
    assert.are.equal("tenant-p/" .. SUBJECT, lease.owner)
    local sst, sb = req(srv, "POST", "/v1/sandboxes", { token = acting, body = { workspace_id = lease.workspace_id },
      headers = as_subject(SUBJECT) })
    assert.are.equal(201, sst, json.encode(sb))
    -- the plain key sees nothing of it
    local _, list = req(srv, "GET", "/v1/workspaces", { token = plain })
    for _, w in ipairs(list.workspaces) do assert.are_not.equal(lease.workspace_id, w.id) end
    assert.are.equal(404, (req(srv, "DELETE", "/v1/sandboxes/" .. sb.id, { token = plain })))
    assert.are.equal(200, (req(srv, "DELETE", "/v1/sandboxes/" .. sb.id, { token = acting,
      headers = as_subject(SUBJECT) })))
  end)

  it("let a key that may act for subjects name the subject in the body, as the header would", function()
    local st, by_header = req(srv, "POST", "/v1/workspaces", { token = acting, body = { session_id = "same" },
      headers = as_subject(SUBJECT) })
    assert.are.equal(201, st)
    local bst, by_body = req(srv, "POST", "/v1/workspaces", { token = acting,
      body = { session_id = "same", principal = { kind = "subject", id = SUBJECT } } })
    assert.are.equal(201, bst, json.encode(by_body))
    assert.are.equal(by_header.workspace_id, by_body.workspace_id)
    assert.are.equal("tenant-p/" .. SUBJECT, by_body.owner)
    -- a malformed subject id is refused like the header's
    local mst, doc = req(srv, "POST", "/v1/workspaces", { token = acting,
      body = { session_id = "same", principal = { kind = "subject", id = "Alice" } } })
    assert.are.equal(400, mst)
    assert.matches("32 lowercase hex characters", doc.error)
  end)

  it("answer 400 naming principal for the legacy principal_id and principal_type fields", function()
    for _, body in ipairs {
      { session_id = "legacy", principal_id = SUBJECT, principal_type = "subject" },
      { session_id = "legacy", principal_id = "x" },
      { session_id = "legacy", principal_type = "service" },
    } do
      for _, path in ipairs { "/v1/workspaces", "/v1/workspaces/resolve" } do
        local st, doc = req(srv, "POST", path, { token = plain, body = body })
        assert.are.equal(400, st, path .. " " .. json.encode(body))
        assert.matches("principal", doc.error)
      end
    end
  end)

  it("give a lease for an existing workspace only to a caller who may see it, audited", function()
    local st, lease = req(srv, "POST", "/v1/workspaces", { token = plain, body = { session_id = "kept" } })
    assert.are.equal(201, st)
    -- the row now belongs to a subject (as a row squatted under an
    -- earlier server would): the same create no longer sees it
    local db = server.sh_quote(srv.data .. "/unsandboxd.db")
    assert.is_true(lua.sh("sqlite3 " .. db .. " \"UPDATE cp_workspaces SET subject = '"
      .. SUBJECT .. "' WHERE id = '" .. lease.workspace_id .. "'\""))
    local again, doc = req(srv, "POST", "/v1/workspaces", { token = plain, body = { session_id = "kept" } })
    assert.are.equal(404, again, json.encode(doc))
    assert.same({ error = "workspace not found" }, doc)
    assert.is_nil(doc.access_token)
    local _, audit = req(srv, "GET", "/v1/admin/audit", { token = srv.token })
    assert.are.equal("workspace.access", audit.events[1].action)
    assert.are.equal(lease.workspace_id, audit.events[1].target)
    assert.are.equal("denied", audit.events[1].outcome)
  end)
end)
