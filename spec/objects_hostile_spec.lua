-- #integration specs of object downloads to a file against a hostile
-- server: the bytes are checked against X-Content-SHA256 while they are
-- written (on the hash's own thread), so a body that does not match its
-- digest, or one cut short, leaves the destination as it was and no
-- temporary, and a body that matches arrives whole, across many pieces.
local hostile = require "spec.helpers.hostile"
local unsandbox = require "unsandbox"
local core = require "unsandbox.core"
local fs = require "spec.helpers.fs"

-- 1 MiB + 7 of bytes that differ piece by piece
local BODY = {}
for i = 1, 1024 do BODY[i] = string.rep(string.char(i % 251), 1024) end
BODY = table.concat(BODY) .. "tail..."

local TICKET = { access_token = "ticket", url = "/v1/storage/content" }

-- A server answering the content route with BODY and the headers given
-- (a Content-Length of declared bytes, when it lies).
local function serving(digest, declared)
  local fs_dir = fs.tmpdir("unsb-objhostile-body")
  fs.write(fs_dir .. "/body", BODY)
  local h = hostile.start(string.format([[
    local f = assert(io.open(%q, "rb"))
    local body = f:read("a")
    f:close()
    return function()
      return "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: " .. %d
        .. "\r\nX-Content-SHA256: " .. %q .. "\r\nConnection: close\r\n\r\n" .. body
    end]], fs_dir .. "/body", declared or #BODY, digest))
  return h, fs_dir
end

local function entries(dir)
  local p = io.popen("ls -A " .. fs.quote(dir))
  local list = {}
  for name in p:lines() do list[#list + 1] = name end
  p:close()
  table.sort(list)
  return list
end

describe("downloads to a file against a hostile server #integration", function()
  local dir
  before_each(function()
    dir = fs.tmpdir("unsb-objhostile")
    fs.write(dir .. "/dest", "the old content")
  end)
  after_each(function() fs.rm_rf(dir) end)

  local function download(h)
    local m = unsandbox.manager { url = h.url, token = "tok", env = {}, timeout = 10 }
    local meta, err = m:download_with_ticket(TICKET, { to = dir .. "/dest", owner = string.rep("c", 32) })
    m:close()
    return meta, err
  end

  it("a body that matches its digest arrives whole and is reported with it", function()
    local h, body_dir = serving(core.codec.sha256(BODY))
    local meta, err = download(h)
    h.stop()
    fs.rm_rf(body_dir)
    assert.is_table(meta, tostring(err))
    assert.equal(#BODY, meta.bytes)
    assert.equal(core.codec.sha256(BODY), meta.sha256)
    assert.equal(BODY, fs.read(dir .. "/dest"))
    assert.same({ "dest" }, entries(dir))
  end)

  it("a body that does not match its digest: protocol error, old file kept, no temporary", function()
    local h, body_dir = serving(core.codec.sha256(BODY .. "x"))
    local meta, err = download(h)
    h.stop()
    fs.rm_rf(body_dir)
    assert.is_nil(meta)
    assert.equal("protocol", err.kind)
    assert.matches("X%-Content%-SHA256", err.message)
    assert.equal("the old content", fs.read(dir .. "/dest"))
    assert.same({ "dest" }, entries(dir))
  end)

  it("a body cut short of its Content-Length: an error, old file kept, no temporary", function()
    local h, body_dir = serving(core.codec.sha256(BODY), #BODY + 4096)
    local meta, err = download(h)
    h.stop()
    fs.rm_rf(body_dir)
    assert.is_nil(meta)
    assert.is_table(err)
    assert.equal("the old content", fs.read(dir .. "/dest"))
    assert.same({ "dest" }, entries(dir))
  end)
end)
