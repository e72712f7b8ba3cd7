--- The workspace file routes (spec §4.2, §5.6) as methods of
-- unsandbox.Manager: GET/POST /v1/workspaces/{ws}/files/*, sent with the
-- session's workspace token. Unlike the MCP tools they never create a
-- runtime (§10): without a running one the server answers 409 with a
-- hint, returned as err.hint. The binary pair is what Sandbox upload and
-- download use: bytes of any kind, checked by SHA-256 both ways.
local compat = require "unsandbox.compat"
local core = require "unsandbox.core"
local check = require "unsandbox.check"
local transport = require "unsandbox.transport"

local Manager = {}   -- the methods this file adds to unsandbox.Manager

local function wpath(fname, path, allow_root)
  check.type(fname, "path", path, "string")
  if allow_root and (path == "" or path == ".") then return path end
  return check.value(fname, "path", core.cp.workspace_path(path))
end

local function files_call(self, fname, key, method, op, o)
  local ws, err = self:ensure_workspace(key)
  if not ws then return nil, err end
  o.token = ws.access_token
  return transport.cp_request(self, fname, method, "/v1/workspaces/" .. ws.workspace_id .. "/files/" .. op, o)
end

local function int(fname, arg, v) return check.int_range(fname, arg, v, 0, compat.maxinteger) end

--- GET …/files/list?path= (default "."; ≤ 500 entries).
function Manager:list_dir(path, key)
  return files_call(self, "list_dir", key, "GET", "list",
    { query = { path = wpath("list_dir", path or ".", true) } })
end

--- GET …/files/read?path=&offset=&limit= (a window of a UTF-8 file).
function Manager:files_read(path, offset, limit, key)
  return files_call(self, "files_read", key, "GET", "read", { query = {
    path = wpath("files_read", path), offset = int("files_read", "offset", offset),
    limit = int("files_read", "limit", limit) } })
end

--- GET …/files/glob?path=&pattern=&limit=.
function Manager:files_glob(pattern, path, limit, key)
  check.nonempty("files_glob", "pattern", pattern)
  return files_call(self, "files_glob", key, "GET", "glob", { query = { pattern = pattern,
    path = wpath("files_glob", path or ".", true), limit = int("files_glob", "limit", limit) } })
end

local GREP = { path = true, glob = true, mode = true, case_insensitive = true, context = true,
  regex = true, limit = true }

--- GET …/files/grep?pattern=&... (opts: path, glob, mode, case_insensitive,
-- context, regex, limit).
function Manager:files_grep(pattern, opts, key)
  check.nonempty("files_grep", "pattern", pattern)
  opts = check.options("files_grep", opts, GREP)
  local q = { pattern = pattern }
  for k, v in pairs(opts) do q[k] = v end
  if q.path then q.path = wpath("files_grep", q.path, true) end
  return files_call(self, "files_grep", key, "GET", "grep", { query = q })
end

--- POST …/files/write {path, content} (UTF-8 text).
function Manager:files_write(path, content, key)
  check.type("files_write", "content", content, "string")
  return files_call(self, "files_write", key, "POST", "write",
    { body = { path = wpath("files_write", path), content = content } })
end

--- POST …/files/edit {path, old, new}.
function Manager:files_edit(path, old, new, key)
  check.nonempty("files_edit", "old", old)
  check.type("files_edit", "new", new, "string")
  return files_call(self, "files_edit", key, "POST", "edit",
    { body = { path = wpath("files_edit", path), old = old, new = new } })
end

--- POST …/files/write-binary {path, content_base64, sha256}: any bytes.
function Manager:upload_file(path, bytes, key)
  check.type("upload_file", "bytes", bytes, "string")
  return files_call(self, "upload_file", key, "POST", "write-binary", { body = {
    path = wpath("upload_file", path), content_base64 = core.codec.base64_encode(bytes),
    sha256 = core.codec.sha256(bytes) } })
end

--- GET …/files/read-binary?path=: the file's bytes (≤ 4 MiB), checked
-- against the sha256 the server reports. Returns bytes, info.
function Manager:download_file(path, key)
  local doc, rid = files_call(self, "download_file", key, "GET", "read-binary",
    { query = { path = wpath("download_file", path) } })
  if not doc then return nil, rid end
  local bytes = type(doc.content_base64) == "string" and core.codec.base64_decode(doc.content_base64)
  if not bytes then return nil, transport.cp.bad_reply("file content is not valid base64") end
  if type(doc.sha256) == "string" and doc.sha256:lower() ~= core.codec.sha256(bytes) then
    return nil, transport.cp.bad_reply("file content does not match its sha256")
  end
  doc.content_base64 = nil
  doc.request_id = rid
  return bytes, doc
end

return Manager
