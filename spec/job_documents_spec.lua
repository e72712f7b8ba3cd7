-- #integration specs of finished jobs' documents (docs/internals.md,
-- "Jobs' documents"): the document is written once, when the job ends,
-- and every answer about the job is those bytes. One of more than 64 KiB
-- is the file DATA/jobs/<id>.json next to a small row (the job's head and
-- the file's length), counted by the ledger at its length; it outlives a
-- restart, goes with its row when the job expires, and a file no row
-- names (a crash between the two) is removed at the next start. Program
-- output of every kind (quotes, backslashes, control bytes, invalid
-- UTF-8) reads back as it did when documents were jansson trees: invalid
-- bytes become U+FFFD, the rest is the program's.
local server = require "spec.helpers.unsandboxd"
local core = require "unsandbox.core"
local json = require "cjson"
local fs = require "spec.helpers.fs"
local wait = require "spec.helpers.wait"

-- One line of output: a quote, a backslash, a tab, a control byte, a byte
-- that is not UTF-8, and an é; and what a reader gets back for it.
local LINE_CODE = [[s=$(printf 'a"b\\c\tq\001\377\303\251'); yes "$s" | head -n %d]]
local LINE_READ = 'a"b\\c\tq\1' .. "\239\191\189" .. "é\n"   -- U+FFFD

local function client(srv)
  return core.client { url = srv.url, public_key = srv.public_key, secret_key = srv.secret_key,
                       timeout = 120000 }
end

local function call(c, method, path, body)
  local r, kind, msg = c:request(method, path, body and json.encode(body))
  assert(r, tostring(kind) .. ": " .. tostring(msg))
  return r
end

local function sql(srv, statement)
  local p = io.popen("sqlite3 " .. fs.quote(srv.data .. "/unsandboxd.db") .. " " .. fs.quote(statement))
  local out = p:read("a")
  p:close()
  return (out:gsub("%s+$", ""))
end

local function file_of(srv, id) return srv.data .. "/jobs/" .. id .. ".json" end

local function size_of(path)
  local text = fs.read(path)
  return text and #text
end

local function mode_of(path)
  local p = io.popen("stat -c %a " .. fs.quote(path) .. " 2>/dev/null")
  local m = p:read("l")
  p:close()
  return m
end

local function stop(srv, keep)
  if srv and srv.pid and server.alive(srv.pid) then srv.stop(keep) end
end

describe("finished jobs' documents #integration", function()
  it("over 64 KiB a document is a file of its own, sent exactly as written, counted at its length", function()
    local srv = server.start { args = { "--sync-ms", "60000" } }
    finally(function() stop(srv) end)
    local c = client(srv)
    local lines = 20000
    local sync = call(c, "POST", "/execute", { language = "bash", code = LINE_CODE:format(lines) })
    local doc = json.decode(sync.body)
    local got = call(c, "GET", "/jobs/" .. doc.job_id)
    local small = json.decode(call(c, "POST", "/execute", { language = "bash",
      code = LINE_CODE:format(10) }).body)
    local ledger = json.decode(call(c, "GET", "/health").body).storage.kinds.job
    local path = file_of(srv, doc.job_id)
    local on_disk, mode = size_of(path), mode_of(path)
    local row = sql(srv, "SELECT length(doc) < 1000, file_bytes FROM jobs WHERE id = '" .. doc.job_id .. "'")
    local small_row = sql(srv, "SELECT length(CAST(doc AS BLOB)), coalesce(file_bytes, 'none') FROM jobs WHERE id = '"
      .. small.job_id .. "'")
    c:close()

    assert.are.equal(200, sync.status)
    assert.are.equal(LINE_READ:rep(lines), doc.stdout)
    assert.are.equal("completed", doc.status)
    assert.is_false(doc.stdout_truncated)
    assert.are.equal(sync.body, got.body)                -- the same bytes, to the last
    assert.are.equal(#sync.body, on_disk)
    assert.are.equal("600", mode)
    assert.are.equal("1|" .. #sync.body, row)             -- the row is the head and the length
    assert.are.equal(LINE_READ:rep(10), small.stdout)
    assert.is_nil(size_of(file_of(srv, small.job_id)))   -- a small one is its row
    assert.matches("^%d+|none$", small_row)
    assert.are.equal(2, ledger.items)
    assert.are.equal(#sync.body + tonumber(small_row:match("^(%d+)")), ledger.bytes)
  end)

  it("an async job's document replaces its pending row the same way", function()
    local srv = server.start {}
    finally(function() stop(srv) end)
    local c = client(srv)
    local started = json.decode(call(c, "POST", "/execute/async", { language = "bash",
      code = "sleep 0.2; " .. LINE_CODE:format(10000) }).body)
    local pending_row = sql(srv, "SELECT status FROM jobs WHERE id = '" .. started.job_id .. "'")
    local final = wait.eventually(function()
      local r = call(c, "GET", "/jobs/" .. started.job_id)
      return json.decode(r.body).status == "completed" and r
    end, 60)
    c:close()
    assert.are.equal("pending", pending_row)
    assert.truthy(final, "the job never completed")
    assert.are.equal(LINE_READ:rep(10000), json.decode(final.body).stdout)
    assert.are.equal(#final.body, size_of(file_of(srv, started.job_id)))
  end)

  it("outlives a restart; a file no row names is removed at the start; an expired job's file goes", function()
    local srv = server.start { args = { "--sync-ms", "60000" } }
    finally(function() stop(srv); server.rm_rf(srv.data); os.remove(srv.log) end)
    local c = client(srv)
    local sync = call(c, "POST", "/execute", { language = "bash", code = LINE_CODE:format(8000) })
    local id = json.decode(sync.body).job_id
    c:close()
    srv.stop(true)
    -- what a crash between a file and its row leaves
    local orphan = file_of(srv, "job_0123456789abcdef01234567")
    local f = assert(io.open(orphan, "wb"))
    f:write("{}")
    f:close()

    -- the server's default retention: however long the restart took on a
    -- busy machine, the job is still there
    local again = server.start { data = srv.data }
    finally(function() stop(again) end)
    local c2 = client(again)
    local after = call(c2, "GET", "/jobs/" .. id)
    local orphan_gone = size_of(orphan) == nil
    c2:close()
    again.stop(true)
    local log = fs.read(srv.log) or ""
    assert.are.equal(sync.body, after.body)
    assert.is_true(orphan_gone)
    assert.matches("removing [^\n]*job_0123456789abcdef01234567%.json: no job row names it", log)

    -- a retention the job has outlived: its row and its file go
    local third = server.start { data = srv.data, args = { "--job-retention", "1" } }
    finally(function() stop(third) end)
    local c3 = client(third)
    local gone = wait.eventually(function() return call(c3, "GET", "/jobs/" .. id).status == 404 end, 20)
    local file_gone = wait.eventually(function() return size_of(file_of(srv, id)) == nil end, 10)
    local ledger = json.decode(call(c3, "GET", "/health").body).storage.kinds.job
    c3:close()
    assert.is_truthy(gone, "the job did not expire")
    assert.is_truthy(file_gone, "the expired job's file stayed")
    assert.are.equal(0, ledger.items)
    assert.are.equal(0, ledger.bytes)
  end)
end)
