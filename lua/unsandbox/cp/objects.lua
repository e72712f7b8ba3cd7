--- Object storage of the Control Plane (spec §4.3, §5.3, §8): locators,
-- tickets, blobs moved through the content route with a ticket, the
-- object routes, and import/export between the store and a workspace.
-- Every path here is an object call (§7.4): it needs an acting subject
-- bound for the coroutine or an explicit owner, else it raises before
-- anything is sent (transport.cp.check_object). Methods of unsandbox.Manager.
-- @classmod Manager
local compat = require "unsandbox.compat"
local core = require "unsandbox.core"
local check = require "unsandbox.check"
local transport = require "unsandbox.transport"
local observe = require "unsandbox.observe"
local Error = require "unsandbox.errors"

local Manager = {}   -- the methods this file adds to unsandbox.Manager

local SCOPES = { upload = { upload_id = true, path = true, owner = true, scope = true },
                 agent = { agent_id = true, run_id = true, path = true, owner = true, scope = true } }

-- A checked copy of a locator: scope "upload" {upload_id, path} or
-- "agent" {agent_id, run_id, path} (+ owner, for admin identities); the
-- agent ids normalised by the core's rule (§5.1). The server checks the rest.
local function locator(fname, loc)
  check.type(fname, "locator", loc, "table")
  local fields = SCOPES[loc.scope]
  if not fields then check.fail(fname, "locator", "scope must be \"upload\" or \"agent\"") end
  check.options(fname, loc, fields, { arg = "locator", unknown = "unknown field '%s' for scope " .. loc.scope })
  local out = {}
  for k, v in pairs(loc) do out[k] = check.type(fname, "locator." .. k, v, "string") end
  if loc.scope == "agent" then
    for _, k in ipairs { "agent_id", "run_id" } do
      check.nonempty(fname, "locator." .. k, loc[k])
      out[k] = core.cp.object_id(loc[k])
    end
  else
    check.nonempty(fname, "locator.upload_id", loc.upload_id)
  end
  if out.path == "" then out.path = nil end
  return out
end

local function merged(loc, extra)
  local t = {}
  for k, v in pairs(loc) do t[k] = v end
  for k, v in pairs(extra) do t[k] = v end
  return t
end

local CONTENT_TYPE = "^[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*$"

local function content_type(fname, ct, default)
  ct = check.type(fname, "content_type", ct, "string", true) or default
  if not ct:match(CONTENT_TYPE) then
    check.fail(fname, "content_type", "a simple lower-case MIME type expected, got '" .. ct .. "'")
  end
  return ct
end

--- Object storage: tickets and blobs.
-- Every call of object storage is an object call: it needs an acting
-- subject bound (`bind_subject`) or an explicit owner, else it raises
-- before anything is sent. Objects live under the owner's prefix, by
-- locator.
-- @section objects

--- Issues a ticket to move one object's bytes (POST /v1/storage/tickets).
-- @tparam table loc a locator: `{scope = "upload", upload_id =, path =}`
-- or `{scope = "agent", agent_id =, run_id =, path =}` (agent ids
-- normalised by the protocol's rule), plus `owner` ("tenant/subject",
-- admin identities only)
-- @tparam string operation "upload" or "download"
-- @tparam[opt] integer max_bytes 1..64 MiB (default 64 MiB)
-- @tparam[opt="application/octet-stream"] string ctype a simple lower-case
-- MIME type
-- @tparam[opt] string sha256 the upload's digest (bound into the ticket)
-- @tparam[opt=120] integer expires_in seconds, 1..900
-- @treturn[1] table the ObjectTicket: `{operation, method, url,
-- access_token, expires_in, max_bytes, object}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
-- @raise a malformed locator, an unknown operation, a value out of range
function Manager:issue_object_ticket(loc, operation, max_bytes, ctype, sha256, expires_in)
  local fname = "issue_object_ticket"
  loc = locator(fname, loc)
  check.oneof(fname, "operation", check.type(fname, "operation", operation, "string"),
    { upload = true, download = true })
  max_bytes = check.int_range(fname, "max_bytes", max_bytes, 1, 64 * 1024 * 1024) or 64 * 1024 * 1024
  check.type(fname, "sha256", sha256, "string", true)
  local body = merged(loc, { operation = operation, max_bytes = max_bytes,
    content_type = content_type(fname, ctype, "application/octet-stream"),
    expires_in = check.int_range(fname, "expires_in", expires_in, 1, 900) or 120,
    sha256 = sha256 ~= "" and sha256 or nil })
  return transport.cp_request(self, fname, "POST", "/v1/storage/tickets",
    { body = body, owner = loc.owner })
end

-- A ticket the server issued is usable: a token, and the content route.
local function usable_ticket(t)
  return type(t) == "table" and type(t.access_token) == "string" and t.url == "/v1/storage/content"
end

-- A ticket's content route, checked: the path the server named.
local function ticket_path(fname, ticket)
  check.type(fname, "ticket", ticket, "table")
  -- the url comes from the server's answer: only the content route is
  -- accepted (a ticket is a bearer credential and goes nowhere else)
  if type(ticket.access_token) ~= "string" or ticket.url ~= "/v1/storage/content" then
    check.fail(fname, "ticket", "an ObjectTicket (access_token, url /v1/storage/content) expected")
  end
  return ticket.url
end

-- The body of an upload: a string, or {path = "local/file"}, whose bytes
-- are read as they are sent (never held whole). Returns raw, from.
local function body_of(fname, arg, v)
  if type(v) == "table" and type(v.path) == "string" and v.path ~= "" then return nil, v.path end
  if type(v) ~= "string" then
    check.fail(fname, arg, "a string or {path = \"local file\"} expected, got " .. type(v))
  end
  return v
end

--- Sends an object's bytes with an upload ticket (PUT /v1/storage/content).
-- @tparam table ticket an upload ObjectTicket (`issue_object_ticket`)
-- @tparam string|table bytes the bytes, or `{path = "local/file"}`: sent
-- from the file as it is read, never held in memory
-- @tparam[opt="application/octet-stream"] string ctype
-- @tparam[opt] boolean owner true when the ticket's locator named an owner
-- @treturn[1] table `{bucket, key, bytes, sha256, content_type}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error (http 413: over the ticket's max_bytes)
-- @raise a ticket that is not one (its url must be the content route)
function Manager:upload_with_ticket(ticket, bytes, ctype, owner)
  local path = ticket_path("upload_with_ticket", ticket)
  local raw, from = body_of("upload_with_ticket", "bytes", bytes)
  return transport.cp_request(self, "upload_with_ticket", "PUT", path, { raw = raw, from = from,
    token = ticket.access_token, owner = owner, once = true,
    content_type = content_type("upload_with_ticket", ctype, "application/octet-stream"),
    timeout = 120 })
end

-- The sha256 and size of an upload's content (a string or {path =}), or
-- nil, Error (kind io: the file cannot be read).
local function digest_of(raw, from)
  if raw then return core.codec.sha256(raw), #raw end
  local sha, size = core.files.sha256_file(from)
  if not sha then return nil, Error.new { kind = "io", message = size } end
  return sha, size
end

--- Stores bytes as an agent object: an upload ticket for exactly these
-- bytes (sha256 and max_bytes bound), then the PUT.
-- @tparam string agent_id normalised by the protocol's rule
-- @tparam string run_id normalised too
-- @tparam string path the object's path (first segment inputs, outputs,
-- artifacts, logs or meta)
-- @tparam string|table content the bytes, or `{path = "local/file"}`:
-- hashed, then sent as it is read (a file that changes in between is
-- refused by its ticket's sha256; kind io when it cannot be read)
-- @tparam[opt="application/octet-stream"] string ctype
-- @tparam[opt] string owner "tenant/subject" (admin identities only)
-- @treturn[1] table the locator with the stored object's fields (`bucket,
-- key, bytes, sha256, content_type`)
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
-- @raise an empty id or path, content not a string, no subject and no owner
function Manager:put_agent_blob(agent_id, run_id, path, content, ctype, owner)
  local fname = "put_agent_blob"
  local raw, from = body_of(fname, "content", content)
  check.type(fname, "owner", owner, "string", true)
  local loc = locator(fname, { scope = "agent", agent_id = agent_id, run_id = run_id,
    path = check.nonempty(fname, "path", path), owner = owner })
  ctype = content_type(fname, ctype, "application/octet-stream")
  transport.cp.check_object(self, fname, "/v1/storage/tickets", owner)
  local sha, size = digest_of(raw, from)
  if not sha then return nil, size end
  local ticket, err = self:issue_object_ticket(loc, "upload", math.max(1, size), ctype, sha, 120)
  if not ticket then return nil, err end
  if not usable_ticket(ticket) then
    return nil, transport.cp.bad_reply("Control Plane response has no valid object ticket")
  end
  local doc, rid = self:upload_with_ticket(ticket, content, ctype, owner ~= nil)
  if not doc then return nil, rid end
  return merged(loc, doc), rid
end

local Reader = { __name = "unsandbox.ObjectReader" }
Reader.__index = Reader

-- the formats of io's read, with 5.1's "*" too (as 5.3 and 5.4 take it)
local FORMAT = { a = "a", ["*a"] = "a", l = "l", ["*l"] = "l" }

--- An object's content, read like a file: what `open_object` and
-- `download_with_ticket` return without on_data. Its fields also say
-- what the object is: `content_type`, `etag`, `version_id`, `sha256`
-- (checked), `bytes`.
-- @type ObjectReader

--- Reads the content, as io's read does; nil at the end.
-- @function ObjectReader:read
-- @tparam[opt="a"] integer|string what n (bytes), "a" (the rest) or "l"
-- (a line, without its "\n"); "*a" and "*l" too
-- @treturn string|nil
-- @raise a negative n
function Reader:read(what)
  if self.pos > #self.data then return nil end
  local s
  local format = what == nil and "a" or FORMAT[what]
  if format == "a" then s = self.data:sub(self.pos)
  elseif format == "l" then
    local e = self.data:find("\n", self.pos, true)
    s = self.data:sub(self.pos, e and e - 1 or -1)
    self.pos = (e or #self.data) + 1
    return s
  else
    check.int_range("read", "n", what, 0, compat.maxinteger)
    s = self.data:sub(self.pos, self.pos + what - 1)
  end
  self.pos = self.pos + #s
  return s
end
--- Drops the content; reads then give nil. A `<close>` variable calls it.
-- @function ObjectReader:close
function Reader:close() self.data, self.pos = "", 1 end
Reader.__close = Reader.close

local CAPTURE = { "ETag", "X-Object-Version-Id", "X-Content-SHA256", "Content-Length" }

-- The content streamed to on_data (the caller's own code) as it comes:
-- resp, or nil, Error.
local function stream_into(self, t, ex, on_data)
  repeat
    local pieces, done = t:step(100)
    if not pieces then return nil, transport.cp.fail(self, done, "download interrupted") end
    for _, p in ipairs(pieces) do observe.outside(on_data, p) end
  until done
  local resp, kind, msg = transport.result(t, ex)
  if not resp then return nil, transport.cp.fail(self, kind, msg) end
  if resp.status >= 400 then return nil, transport.cp.http_error(resp) end
  return resp
end

local function stream_download(self, fname, path, co, on_data)
  co.mode = "raw"
  local t, ex = transport.cp_open(self, fname, "GET", path, co)
  if not t then return nil, ex end
  return compat.closing({ ex, t, n = 2 }, stream_into, self, t, ex, on_data)
end

-- A temporary beside dest, removed when closed unless it was renamed
-- over dest (kept = true): a download to a path leaves either the old
-- file or the whole, checked new one.
local Temp = {}
Temp.__index = Temp
function Temp:close() if not self.kept then os.remove(self.path) end end
Temp.__close = Temp.close

-- The content into the new file tmp.path (written by the core as it
-- comes: no Lua per piece), checked against X-Content-SHA256, renamed
-- over dest. resp, or nil, Error.
local function download_to(self, fname, path, co, dest, tmp)
  co.to, co.text = tmp.path, true
  local body, resp = transport.cp_call(self, fname, "GET", path, co)
  if not body then return nil, resp end
  local want = resp.headers["X-Content-SHA256"]
  if want and want:lower() ~= resp.sha256 then
    return nil, transport.cp.bad_reply("object content does not match its X-Content-SHA256", resp)
  end
  local ok, why = os.rename(tmp.path, dest)
  if not ok then
    return nil, Error.new { kind = "io", message = "cannot rename over " .. dest .. ": " .. tostring(why) }
  end
  tmp.kept = true
  return resp
end

--- Object storage: objects by locator.
-- Object calls too: an acting subject bound or an explicit owner.
-- @section object_routes

--- Reads an object's bytes with a download ticket (GET
-- /v1/storage/content): streamed to on_data as they arrive, or an
-- ObjectReader over them, checked against X-Content-SHA256.
-- @tparam table ticket a download ObjectTicket
-- @tparam[opt] table opts `on_data(bytes)` (the body streams to it),
-- `to` (a local path: the body is written by the core to a temporary
-- beside it as it arrives, checked and renamed over it), `owner` (true
-- when the ticket's locator named one)
-- @treturn[1] ObjectReader|table the reader, or with on_data or to the
-- object's `{content_type, etag, version_id, sha256, bytes}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error (protocol 502: the content does not match its sha256)
-- @raise a ticket that is not one, on_data not a function
function Manager:download_with_ticket(ticket, opts)
  local fname = "download_with_ticket"
  local path = ticket_path(fname, ticket)
  opts = check.options(fname, opts, { on_data = true, owner = true, to = true })
  check.type(fname, "on_data", opts.on_data, "function", true)
  check.type(fname, "to", opts.to, "string", true)
  if opts.on_data and opts.to then check.fail(fname, "opts", "on_data or to, not both") end
  local co = { token = ticket.access_token, owner = opts.owner, timeout = 30, capture = CAPTURE,
    once = true }
  local body, resp
  if opts.on_data then
    resp, body = stream_download(self, fname, path, co, opts.on_data)
    if not resp then return nil, body end
  elseif opts.to then
    local tmp = setmetatable({ path = opts.to .. ".unsb-" .. core.trace.new_traceparent():sub(37, 52) ..
      ".part" }, Temp)
    co.timeout = 120
    resp, body = compat.closing({ tmp, n = 1 }, download_to, self, fname, path, co, opts.to, tmp)
    if not resp then return nil, body end
  else
    co.text = true
    body, resp = transport.cp_call(self, fname, "GET", path, co)
    if not body then return nil, resp end
  end
  local h = resp.headers
  local meta = { content_type = resp.content_type, etag = h.ETag, version_id = h["X-Object-Version-Id"],
    sha256 = h["X-Content-SHA256"], bytes = compat.tointeger(tonumber(h["Content-Length"] or "")) }
  if opts.on_data then return meta, resp.request_id end
  if opts.to then
    meta.path, meta.bytes, meta.sha256 = opts.to, resp.streamed, resp.sha256
    return meta, resp.request_id
  end
  if meta.sha256 and meta.sha256:lower() ~= core.codec.sha256(resp.body) then
    return nil, transport.cp.bad_reply("object content does not match its X-Content-SHA256", resp)
  end
  meta.data, meta.pos, meta.bytes = resp.body, 1, #resp.body
  return setmetatable(meta, Reader), resp.request_id
end

--- Opens an object for reading: a download ticket, then the content
-- (see `download_with_ticket`).
-- @tparam table loc a locator: `{scope = "upload", upload_id =, path =}`
-- or `{scope = "agent", agent_id =, run_id =, path =}` (agent ids
-- normalised by the protocol's rule), plus `owner` ("tenant/subject",
-- admin identities only)
-- @tparam[opt] integer max_bytes as for `issue_object_ticket`
-- @tparam[opt] string ctype
-- @tparam[opt] integer expires_in
-- @tparam[opt] table opts `on_data(bytes)`
-- @treturn[1] ObjectReader|table as `download_with_ticket`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error (http 404: no such object)
-- @raise a malformed locator, no subject and no owner
function Manager:open_object(loc, max_bytes, ctype, expires_in, opts)
  loc = locator("open_object", loc)
  opts = check.options("open_object", opts, { on_data = true, to = true })
  check.type("open_object", "on_data", opts.on_data, "function", true)
  transport.cp.check_object(self, "open_object", "/v1/storage/tickets", loc.owner)
  local ticket, err = self:issue_object_ticket(loc, "download", max_bytes, ctype, nil, expires_in)
  if not ticket then return nil, err end
  if not usable_ticket(ticket) then
    return nil, transport.cp.bad_reply("Control Plane response has no valid object ticket")
  end
  return self:download_with_ticket(ticket, { on_data = opts.on_data, to = opts.to,
    owner = loc.owner ~= nil })
end

local function query_call(self, fname, method, path, loc, extra)
  loc = locator(fname, loc)
  return transport.cp_request(self, fname, method, path,
    { query = merged(loc, extra or {}), owner = loc.owner })
end

--- Describes an object (GET /v1/storage/objects/stat).
-- @tparam table loc a locator: `{scope = "upload", upload_id =, path =}`
-- or `{scope = "agent", agent_id =, run_id =, path =}` (agent ids
-- normalised by the protocol's rule), plus `owner` ("tenant/subject",
-- admin identities only)
-- @treturn[1] table `{scope, bucket, key, bytes, etag, last_modified,
-- version_id, content_type, sha256}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error (http 404)
function Manager:stat_object(loc) return query_call(self, "stat_object", "GET", "/v1/storage/objects/stat", loc) end
--- Lists objects under a locator's path (a prefix; none: all).
-- @tparam table loc a locator: `{scope = "upload", upload_id =, path =}`
-- or `{scope = "agent", agent_id =, run_id =, path =}` (agent ids
-- normalised by the protocol's rule), plus `owner` ("tenant/subject",
-- admin identities only)
-- @treturn[1] table `{scope, bucket, objects = {{key, bytes,
-- last_modified}, ...}}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:list_objects(loc) return query_call(self, "list_objects", "GET", "/v1/storage/objects/list", loc) end
--- An object's versions, newest first.
-- @tparam table loc a locator: `{scope = "upload", upload_id =, path =}`
-- or `{scope = "agent", agent_id =, run_id =, path =}` (agent ids
-- normalised by the protocol's rule), plus `owner` ("tenant/subject",
-- admin identities only)
-- @treturn[1] table `{scope, bucket, key, versions = {{version_id,
-- is_latest, delete_marker, bytes, last_modified, etag, version_ordinal},
-- ...}}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:object_versions(loc)
  return query_call(self, "object_versions", "GET", "/v1/storage/objects/versions", loc)
end

--- Deletes an object.
-- @tparam table loc a locator: `{scope = "upload", upload_id =, path =}`
-- or `{scope = "agent", agent_id =, run_id =, path =}` (agent ids
-- normalised by the protocol's rule), plus `owner` ("tenant/subject",
-- admin identities only)
-- @tparam[opt] boolean purge_versions true: its history too
-- @treturn[1] table `{scope, bucket, key, deleted = true, history_retained}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error (http 404)
function Manager:delete_object(loc, purge_versions)
  check.type("delete_object", "purge_versions", purge_versions, "boolean", true)
  return query_call(self, "delete_object", "DELETE", "/v1/storage/objects", loc,
    { purge_versions = purge_versions and "true" or nil })
end

--- Reads a small object whole (at most 4 MiB).
-- @tparam table loc a locator: `{scope = "upload", upload_id =, path =}`
-- or `{scope = "agent", agent_id =, run_id =, path =}` (agent ids
-- normalised by the protocol's rule), plus `owner` ("tenant/subject",
-- admin identities only)
-- @treturn[1] table `{scope, bucket, key, bytes, sha256, content}`,
-- content the bytes, decoded
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error (http 404)
function Manager:get_object(loc)
  local doc, rid = query_call(self, "get_object", "GET", "/v1/storage/objects", loc)
  if not doc then return nil, rid end
  local bytes = type(doc.content_base64) == "string" and core.codec.base64_decode(doc.content_base64)
  if not bytes then return nil, transport.cp.bad_reply("object content is not valid base64") end
  doc.content = bytes
  return doc, rid
end

--- Stores a small object whole (at most 4 MiB).
-- @tparam table loc a locator: `{scope = "upload", upload_id =, path =}`
-- or `{scope = "agent", agent_id =, run_id =, path =}` (agent ids
-- normalised by the protocol's rule), plus `owner` ("tenant/subject",
-- admin identities only)
-- @tparam string content the bytes
-- @treturn[1] table `{scope, bucket, key, bytes, sha256}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
function Manager:put_object(loc, content)
  loc = locator("put_object", loc)
  check.type("put_object", "content", content, "string")
  return transport.cp_request(self, "put_object", "POST", "/v1/storage/objects", { body = merged(loc,
    { content_base64 = core.codec.base64_encode(content), sha256 = core.codec.sha256(content) }),
    owner = loc.owner })
end

--- Copies an upload object into the session's workspace (the
-- workspace and a runtime are ensured first, with the locator's owner).
-- @tparam table loc a locator: `{scope = "upload", upload_id =, path =}`
-- or `{scope = "agent", agent_id =, run_id =, path =}` (agent ids
-- normalised by the protocol's rule), plus `owner` ("tenant/subject",
-- admin identities only)
-- @tparam string destination a workspace path under data/uploads/
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table `{workspace_id, destination, object, file}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
-- @raise an empty destination, no subject and no owner
function Manager:import_object_to_workspace(loc, destination, key)
  loc = locator("import_object_to_workspace", loc)
  transport.cp.check_object(self, "import_object_to_workspace", "/objects/import", loc.owner)
  check.nonempty("import_object_to_workspace", "destination", destination)
  local ws, err = self:ensure_workspace(key, loc.owner)
  if not ws then return nil, err end
  local rt, rerr = self:ensure_runtime(key)
  if not rt then return nil, rerr end
  return transport.cp_request(self, "import_object_to_workspace", "POST",
    "/v1/workspaces/" .. ws.workspace_id .. "/objects/import", { body = merged(loc,
    { destination = destination }), token = ws.access_token, owner = loc.owner })
end

--- Copies a workspace file into object storage as an agent object.
-- @tparam string workspace_path "artifacts/<file>" (or "artifacts" with
-- archive)
-- @tparam table loc a locator: `{scope = "upload", upload_id =, path =}`
-- or `{scope = "agent", agent_id =, run_id =, path =}` (agent ids
-- normalised by the protocol's rule), plus `owner` ("tenant/subject",
-- admin identities only)
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @tparam[opt] boolean archive true: "artifacts" as a gzip tar (at most
-- 64 MiB; 150 s)
-- @treturn[1] table `{workspace_id, workspace_path, archive, object}`
-- @treturn[1] string the request id
-- @return[2] nil
-- @treturn[2] Error
-- @raise an empty workspace_path, no subject and no owner
function Manager:export_workspace_object(workspace_path, loc, key, archive)
  loc = locator("export_workspace_object", loc)
  transport.cp.check_object(self, "export_workspace_object", "/objects/export", loc.owner)
  check.nonempty("export_workspace_object", "workspace_path", workspace_path)
  check.type("export_workspace_object", "archive", archive, "boolean", true)
  local ws, err = self:ensure_workspace(key, loc.owner)
  if not ws then return nil, err end
  return transport.cp_request(self, "export_workspace_object", "POST",
    "/v1/workspaces/" .. ws.workspace_id .. "/objects/export", { body = merged(loc,
    { workspace_path = workspace_path, archive = archive or nil }), token = ws.access_token,
    owner = loc.owner, timeout = archive and 150 or nil })
end

return Manager
