-- #integration specs of the Control Plane's lists, which unsandboxd writes
-- row by row as the store reads them (no tree of the answer): every
-- object of a prefix and only those, in key order, keys that need
-- escaping written as JSON a parser takes back byte for byte; and the
-- workspaces each caller may see, selected by the store. Against a real
-- unsandboxd, through the HTTP API.
local server = require "spec.helpers.unsandboxd"
local cp = require "spec.helpers.cp"
local obj = require "spec.helpers.objects"
local json = require "cjson"

local req = cp.request
local OWNER = "t/lists"
local SUBJECT_A, SUBJECT_B = string.rep("d", 32), string.rep("e", 32)

local function loc(upload_id, path)
  return { scope = "upload", upload_id = upload_id, path = path, owner = OWNER }
end

describe("Control Plane lists #integration", function()
  local srv

  setup(function() srv = server.start {} end)
  teardown(function() if srv then srv.stop() end end)
  after_each(function()
    assert.are.equal(200, (req(srv, "GET", "/livez")))
    assert.is_true(server.alive(srv.pid))
  end)

  it("list every live object of a prefix once, in key order, with escaped keys intact", function()
    local N = 120
    local want = {}
    for i = 1, N do
      local path = string.format("source/many/%04d.txt", i)
      local st, doc = obj.post(srv, srv.token, loc("up-1", path), string.rep("x", i))
      assert.are.equal(201, st, json.encode(doc))
      want[#want + 1] = { path = path, bytes = i }
    end
    -- keys JSON must escape: quote, backslash, control bytes, non-ASCII
    local odd = { "source/quote\"d", "source/back\\slash", "source/line\nbreak", "source/\1ctl\31",
                  "source/caf\xc3\xa9" }
    for _, path in ipairs(odd) do
      assert.are.equal(201, (obj.post(srv, srv.token, loc("up-1", path), "o")))
      want[#want + 1] = { path = path, bytes = 1 }
    end
    -- a sibling prefix ("up-10" after "up-1") and a deleted object stay out
    assert.are.equal(201, (obj.post(srv, srv.token, loc("up-10", "source/other.txt"), "no")))
    assert.are.equal(201, (obj.post(srv, srv.token, loc("up-1", "source/gone.txt"), "no")))
    assert.are.equal(200, (obj.get(srv, srv.token, "", loc("up-1", "source/gone.txt"), { method = "DELETE" })))

    local st, list = obj.get(srv, srv.token, "/list", { scope = "upload", upload_id = "up-1", owner = OWNER })
    assert.are.equal(200, st, json.encode(list))
    assert.are.equal("upload", list.scope)
    assert.are.equal("user-uploads", list.bucket)
    local base = "users/" .. OWNER .. "/uploads/up-1/"
    table.sort(want, function(a, b) return a.path < b.path end)
    assert.are.equal(#want, #list.objects)
    for i, w in ipairs(want) do
      local o = list.objects[i]
      assert.are.equal(base .. w.path, o.key)
      assert.are.equal(w.bytes, o.bytes)
      assert.matches("^%d+$", o.last_modified)
    end
    -- an empty prefix is an empty array, not null
    local _, none = obj.get(srv, srv.token, "/list", { scope = "upload", upload_id = "none", owner = OWNER })
    assert.are.equal(0, #none.objects)
    assert.are.equal("table", type(none.objects))
  end)

  it("list the workspaces each caller may see, oldest first", function()
    local key = cp.tenant_key(srv, "tenant-lists", { act_as_subjects = true })
    local other = cp.tenant_key(srv, "tenant-lists-b")
    local function create(token, session, subject)
      local st, w = req(srv, "POST", "/v1/workspaces", { token = token, body = { session_id = session },
        headers = subject and { ["X-Acting-Subject"] = subject } or nil })
      assert.are.equal(201, st, json.encode(w))
      return w.workspace_id
    end
    local a1, b1 = create(key, "a1", SUBJECT_A), create(key, "b1", SUBJECT_B)
    local a2, o1 = create(key, "a2", SUBJECT_A), create(other, "o1")
    local function ids(token, subject)
      local st, list = req(srv, "GET", "/v1/workspaces", { token = token,
        headers = subject and { ["X-Acting-Subject"] = subject } or nil })
      assert.are.equal(200, st, json.encode(list))
      local out = {}
      for _, w in ipairs(list.workspaces) do out[#out + 1] = w.id end
      return out, list.workspaces
    end
    local mine, rows = ids(key, SUBJECT_A)
    assert.same({ a1, a2 }, mine)
    for _, w in ipairs(rows) do
      assert.are.equal("ready", w.status)
      assert.matches("^%d+$", w.created_at)
      assert.matches("^%d+$", w.last_used_at)
      assert.are.equal(json.null, w.idle_expires_at)
      assert.is_false(w.runtime_attached)
      assert.is_nil(w.tenant)
    end
    assert.same({ b1 }, (ids(key, SUBJECT_B)))
    assert.same({ o1 }, (ids(other)))
    -- the tenant-less admin sees every tenant's, each with its tenant
    local _, all = ids(srv.token)
    local seen = {}
    for _, w in ipairs(all) do seen[w.id] = w.tenant end
    assert.same({ [a1] = "tenant-lists", [b1] = "tenant-lists", [a2] = "tenant-lists",
                  [o1] = "tenant-lists-b" }, seen)
  end)
end)
