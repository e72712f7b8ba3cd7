--- The workspace file routes (spec §4.2, §5.6) as methods of
-- unsandbox.Manager: GET/POST /v1/workspaces/{ws}/files/*, sent with the
-- session's workspace token. Unlike the MCP tools they never create a
-- runtime (§10): without a running one the server answers 409 with a
-- hint, returned as err.hint. The binary pair is what Sandbox upload and
-- download use: bytes of any kind, checked by SHA-256 both ways.
-- @classmod Manager
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

--- Files through the workspace file routes.
-- With the workspace's token, never creating a runtime: without a
-- running one the server answers http 409 with err.hint ("create a
-- sandbox for this workspace first").
-- @section file_routes

--- Lists a directory (GET …/files/list): at most 500 entries, .sandbox
-- hidden.
-- @tparam[opt="."] string path a workspace directory
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table `{path, entries = {{name, type}, ...}, truncated}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
-- @raise a bad path
function Manager:list_dir(path, key)
  return files_call(self, "list_dir", key, "GET", "list",
    { query = { path = wpath("list_dir", path or ".", true) } })
end

--- Reads a window of a UTF-8 file (GET …/files/read), as `read_file`.
-- @tparam string path a workspace path: relative to /workspace (or
-- "/workspace/..."), no "..", not under .sandbox
-- @tparam[opt] integer offset the first line (1-based)
-- @tparam[opt] integer limit lines at most
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table `{path, content, start_line, end_line, truncated, ...}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
-- @raise a bad path, a negative offset or limit
function Manager:files_read(path, offset, limit, key)
  return files_call(self, "files_read", key, "GET", "read", { query = {
    path = wpath("files_read", path), offset = int("files_read", "offset", offset),
    limit = int("files_read", "limit", limit) } })
end

--- Finds files by a glob pattern (GET …/files/glob), as `glob_files`.
-- @tparam string pattern
-- @tparam[opt="."] string path
-- @tparam[opt] integer limit
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table `{pattern, matches, total, scanned, truncated, truncated_reason}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
-- @raise an empty pattern, a bad path
function Manager:files_glob(pattern, path, limit, key)
  check.nonempty("files_glob", "pattern", pattern)
  return files_call(self, "files_glob", key, "GET", "glob", { query = { pattern = pattern,
    path = wpath("files_glob", path or ".", true), limit = int("files_glob", "limit", limit) } })
end

local GREP = { path = true, glob = true, mode = true, case_insensitive = true, context = true,
  regex = true, limit = true }

--- Searches file contents (GET …/files/grep), as `grep_files`.
-- @tparam string pattern
-- @tparam[opt] table opts `path`, `glob`, `mode`, `case_insensitive`,
-- `context`, `regex`, `limit`
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table `{pattern, mode, files, file_count, match_count, ...}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
-- @raise an empty pattern, a bad path, an unknown option
function Manager:files_grep(pattern, opts, key)
  check.nonempty("files_grep", "pattern", pattern)
  opts = check.options("files_grep", opts, GREP)
  local q = { pattern = pattern }
  for k, v in pairs(opts) do q[k] = v end
  if q.path then q.path = wpath("files_grep", q.path, true) end
  return files_call(self, "files_grep", key, "GET", "grep", { query = q })
end

--- Writes a UTF-8 text file (POST …/files/write), as `write_file`.
-- @tparam string path a workspace path: relative to /workspace (or
-- "/workspace/..."), no "..", not under .sandbox
-- @tparam string content
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table `{path, chars, bytes}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:files_write(path, content, key)
  check.type("files_write", "content", content, "string")
  return files_call(self, "files_write", key, "POST", "write",
    { body = { path = wpath("files_write", path), content = content } })
end

--- Replaces text that occurs exactly once (POST …/files/edit), as `edit_file`.
-- @tparam string path a workspace path: relative to /workspace (or
-- "/workspace/..."), no "..", not under .sandbox
-- @tparam string old
-- @tparam string new
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table `{path, replacements = 1}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:files_edit(path, old, new, key)
  check.nonempty("files_edit", "old", old)
  check.type("files_edit", "new", new, "string")
  return files_call(self, "files_edit", key, "POST", "edit",
    { body = { path = wpath("files_edit", path), old = old, new = new } })
end

--- Writes bytes of any kind, checked by SHA-256 (POST
-- …/files/write-binary); at most 1 000 000 bytes (`upload`: any size).
-- @tparam string path a workspace path: relative to /workspace (or
-- "/workspace/..."), no "..", not under .sandbox
-- @tparam string bytes
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table `{path, bytes, sha256}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:upload_file(path, bytes, key)
  check.type("upload_file", "bytes", bytes, "string")
  return files_call(self, "upload_file", key, "POST", "write-binary", { body = {
    path = wpath("upload_file", path), content_base64 = core.codec.base64_encode(bytes),
    sha256 = core.codec.sha256(bytes) } })
end

--- Reads a file's bytes (GET …/files/read-binary), checked against the
-- sha256 the server reports; at most 4 MiB (`download`: any size).
-- @tparam string path a workspace path: relative to /workspace (or
-- "/workspace/..."), no "..", not under .sandbox
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] string the bytes
-- @treturn[1] table `{path, bytes, sha256, request_id}`
-- @return[2] nil
-- @treturn[2] Error (protocol 502: content not base64, or not matching its sha256)
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
