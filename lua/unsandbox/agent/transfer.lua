--- Streamed transfers between this machine and a workspace, of any
-- size, as methods of unsandbox.Manager (session key last): upload,
-- download, upload_dir, download_dir.
--
-- The file routes move at most 1 000 000 bytes per write (write-binary)
-- and 4 MiB per read (read-binary), each checked by its sha256; the
-- object routes need an acting subject or owner and hold 64 MiB an
-- object. So a transfer is cut into pieces on the file routes, which
-- every credential that can reach a workspace may use, and the helper
-- (helper.lua) joins or cuts them in the sandbox:
--
--   upload    each piece (1 000 000 bytes) written by write-binary as
--             <dir>/.unsb-<hex>.<n>, appended in order to <dir>/.unsb-<hex>.part
--             (helper append, every 8 pieces), then helper commit appends
--             the last pieces, checks the part's size and sha256 against
--             the ones computed here while reading and renames it over
--             the destination (a file of one piece: one helper call);
--   download  read-binary of the whole file first: a file within its
--             limit comes in that one request (no helper call), checked
--             against the sha256 the route reports; a larger one (or
--             anything the route refuses) goes in pieces: helper sha gives
--             the file's size and sha256 and cuts the first 4 MiB piece
--             into .unsb-<hex>.piece, helper slice each next one, each
--             read by read-binary; the bytes go to a temporary next to the
--             destination, renamed over it once the sha256 computed here
--             matches.
--
-- So the client holds one piece at a time (constant memory whatever the
-- size), a failure leaves the destination as it was (the temporary is
-- removed: remotely by helper cleanup, locally by os.remove), and an
-- error names the file and the byte the transfer had reached (err.path,
-- err.offset). Directories go file by file, so each file keeps its own
-- checksum and the progress counts bytes of the whole directory.
-- @classmod Manager
local check = require "unsandbox.check"
local compat = require "unsandbox.compat"
local core = require "unsandbox.core"
local observe = require "unsandbox.observe"
local Error = require "unsandbox.errors"
local helper = require "unsandbox.agent.helper"
local files = require "unsandbox.agent.files"

local Manager = {}
local M = { methods = Manager }

local UP_PIECE = 1000000        -- write-binary's limit (§5.6)
local DOWN_PIECE = 4 * 1048576  -- read-binary's limit (§4.2)
local APPEND_EVERY = 8          -- pieces joined per helper call

-- ----------------------------------------------------------------------
-- sources and sinks
-- ----------------------------------------------------------------------

local function is_file(v) return io.type(v) == "file" end

-- A reader function of a source: string, file handle, {path =}, or a
-- function returning pieces (nil at the end). Returns reader, total
-- (or nil), close, name (for messages).
local function source_of(fname, src)
  if type(src) == "string" then
    local pos = 1
    return function(n)
      if pos > #src then return nil end
      local s = src:sub(pos, pos + n - 1)
      pos = pos + #s
      return s
    end, #src, function() end, "the string"
  elseif is_file(src) then
    local here = src:seek("cur")
    local size = here and src:seek("end")
    if size then src:seek("set", here) end
    return function(n) return src:read(n) end, size and size - here, function() end, "the file handle"
  elseif type(src) == "table" and type(src.path) == "string" then
    local f, err = io.open(src.path, "rb")
    if not f then return nil, err end
    local size = f:seek("end")
    f:seek("set", 0)
    return function(n) return f:read(n) end, size, function() f:close() end, src.path
  elseif type(src) == "function" then
    local buf = ""
    return function(n)
      while #buf < n do
        local piece = src()
        if piece == nil then break end
        if type(piece) ~= "string" then error("the reader returned a " .. type(piece) .. ", not a string", 0) end
        buf = buf .. piece
      end
      if buf == "" then return nil end
      local s = buf:sub(1, n)
      buf = buf:sub(n + 1)
      return s
    end, nil, function() end, "the reader"
  end
  check.fail(fname, "source", "a string, a file handle, {path = ...} or a reader function expected, got " ..
    type(src))
end

local function wrap_error(err, what, path, offset)
  local e = {}
  for k, v in pairs(err) do e[k] = v end
  e.message = what .. " of '" .. path .. "' failed at byte " .. offset .. ": " .. tostring(err.message)
  e.path, e.offset, e.cause = path, offset, err
  return Error.new(e)
end

local TRANSFER = { on_progress = true, sha256 = true, size = true }

local function options(fname, opts)
  opts = check.options(fname, opts, TRANSFER)
  check.type(fname, "on_progress", opts.on_progress, "function", true)
  if opts.sha256 ~= nil and not (type(opts.sha256) == "string" and opts.sha256:match("^%x+$") and
      #opts.sha256 == 64) then
    check.fail(fname, "sha256", "64 hex digits expected")
  end
  if opts.size ~= nil then check.int_range(fname, "size", opts.size, 0, 2 ^ 53) end
  return opts
end

-- on_progress(done, total): false stops the transfer (kind cancelled);
-- an error it raises stops it too and is raised again once the
-- temporaries are removed.
local CANCEL = {}
local function progress(opts, done, total)
  if opts.on_progress and observe.outside(opts.on_progress, done, total) == false then
    error(CANCEL, 0)
  end
end

-- Runs fn(...) (which returns ok, err, offset, ...); an error raised in it
-- (on_progress, a reader, Ctrl-C) runs cleanup() first, then goes on.
local function guarded(cleanup, fn, ...)
  local res = compat.pack(pcall(fn, ...))
  if res[1] then return compat.unpack(res, 2, res.n) end
  cleanup()
  if res[2] == CANCEL then
    return nil, helper.fail("cancelled", "stopped by on_progress", { status = 499 })
  end
  error(res[2], 0)
end

-- ----------------------------------------------------------------------
-- upload
-- ----------------------------------------------------------------------

local function flush(self, key, part, pending)
  if #pending == 0 then return true end
  local args = { part }
  for i, p in ipairs(pending) do args[i + 1] = p end
  local out, err = helper.run(self, key, "append", args, { fname = "upload" })
  if not out then return nil, err end
  for i = #pending, 1, -1 do pending[i] = nil end
  return true
end

-- The pieces of one upload: read, hashed, written, joined. Returns bytes,
-- sha256 or nil, Error, offset.
local function send_pieces(self, key, read, total, opts, part, stem, state)
  local hash = core.codec.sha256_stream()
  local pending, done, n = {}, 0, 0
  state.pending = pending
  while true do
    local ok, piece = pcall(read, UP_PIECE)
    if not ok then return nil, helper.fail("validation", "reading the source: " .. tostring(piece)), done end
    if piece == nil or piece == "" then break end
    n = n + 1
    hash:update(piece)
    local name = stem .. "." .. n
    pending[#pending + 1] = name
    local r, err = self:upload_file(name, piece, key)
    if not r then return nil, err, done end
    done = done + #piece
    state.done = done
    if #pending >= APPEND_EVERY then
      local fok, ferr = flush(self, key, part, pending)
      if not fok then return nil, ferr, done end
    end
    progress(opts, done, total)
  end
  return done, hash:hex()
end

-- commit's arguments: the part, the destination, what was sent, and the
-- pieces still pending (joined by commit itself: one helper call less)
-- unless they would not fit one shell command (then joined by append).
local function commit_args(self, key, part, dest, bytes, sha, pending)
  local args = { part, dest, tostring(bytes), sha }
  for _, p in ipairs(pending) do args[#args + 1] = p end
  if #core.cp.shell_quote(args) <= helper.ARG_ROOM then return args end
  local ok, err = flush(self, key, part, pending)
  if not ok then return nil, err end
  return { part, dest, tostring(bytes), sha }
end

--- Transfers of any size (the agent tools).
-- Cut into pieces on the file routes and joined in the sandbox, each
-- file checked by SHA-256: the client holds one piece at a time, and a
-- failure leaves the destination as it was. A failed transfer's Error
-- names the file and the byte it had reached (err.path, err.offset) and
-- keeps the first error as err.cause; kind integrity when a checksum did
-- not match, cancelled when on_progress returned false.
-- @section transfers

--- Uploads bytes of any size to a workspace file, atomically (written
-- beside it, renamed over it once checked).
-- @tparam string|file|table|function source a string (its bytes), a file
-- handle (read from where it stands), `{path = "local/file"}`, or a
-- reader function (returns pieces, nil at the end)
-- @tparam string dest a workspace path (its parents are made)
-- @tparam[opt] table opts `on_progress(done, total)` after each piece
-- (total nil for a reader unless `size` is given; returning false
-- cancels; what it raises is raised again once the temporaries are
-- removed), `size` (bytes), `sha256` (the source's expected digest, 64
-- hex: checked)
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table `{path, bytes, sha256, source}`
-- @return[2] nil
-- @treturn[2] Error (err.path, err.offset; not_found: a local file that cannot
-- be opened; integrity, cancelled)
-- @raise a bad dest, a source of another type, a malformed sha256
function Manager:upload(source, dest, opts, key)
  dest = files.path("upload", "dest", dest)
  opts = options("upload", opts)
  local read, total, close, name = source_of("upload", source)
  if not read then return nil, helper.fail("not_found", "upload: " .. tostring(total)) end
  total = opts.size or total
  local rt, rerr = self:ensure_runtime(key)
  if not rt then close(); return nil, wrap_error(rerr, "upload", dest, 0) end
  local stem = files.join(files.parent(dest), ".unsb-" .. helper.random_hex())
  local part = stem .. ".part"
  local state = {}
  local function cleanup()
    close()
    local leftovers = { part }
    for _, p in ipairs(state.pending or {}) do leftovers[#leftovers + 1] = p end
    helper.run(self, key, "cleanup", leftovers, { fname = "upload" })
  end
  local bytes, sha, offset = guarded(cleanup, function()
    progress(opts, 0, total)
    return send_pieces(self, key, read, total, opts, part, stem, state)
  end)
  if bytes == nil and sha and sha.kind == "cancelled" then
    return nil, wrap_error(sha, "upload", dest, state.done or 0)
  end
  close()
  local err = not bytes and sha
  if bytes and opts.sha256 and opts.sha256:lower() ~= sha then
    err, offset = helper.fail("integrity", "the source's sha256 is " .. sha .. ", not " .. opts.sha256), bytes
  end
  if not err then
    local args, cerr = commit_args(self, key, part, dest, bytes, sha, state.pending)
    local out
    if args then out, cerr = helper.run(self, key, "commit", args, { fname = "upload" }) end
    if out then return { path = dest, bytes = bytes, sha256 = sha, source = name } end
    err, offset = cerr, bytes
  end
  local leftovers = { part }
  for _, p in ipairs(state.pending or {}) do leftovers[#leftovers + 1] = p end
  helper.run(self, key, "cleanup", leftovers, { fname = "upload" })
  return nil, wrap_error(err, "upload", dest, offset or 0)
end

-- ----------------------------------------------------------------------
-- download
-- ----------------------------------------------------------------------

-- A sink for the bytes: nil (collected: returned as a string), a local
-- path (a temporary renamed at the end), {path =}, a file handle, or a
-- function. Returns write, finish(ok) -> result, name.
local function sink_of(fname, dest)
  if dest == nil then
    local parts = {}
    return function(s) parts[#parts + 1] = s; return true end,
      function(ok) if ok then return table.concat(parts) end end, "memory"
  end
  if type(dest) == "table" and type(dest.path) == "string" then dest = dest.path end
  if type(dest) == "string" then
    local tmp = dest .. ".unsb-" .. helper.random_hex() .. ".part"
    local f, err = io.open(tmp, "wb")
    if not f then return nil, err end
    return function(s) return f:write(s) end, function(ok)
      local closed, cerr = f:close()
      if ok and closed then
        local renamed, rerr = os.rename(tmp, dest)
        if renamed then return dest end
        cerr = rerr
      end
      os.remove(tmp)
      if ok then return nil, cerr end
    end, dest
  elseif is_file(dest) then
    return function(s) return dest:write(s) end, function(ok) if ok then return dest end end, "the file handle"
  elseif type(dest) == "function" then
    return function(s) observe.outside(dest, s); return true end,
      function(ok) if ok then return true end end, "the sink"
  end
  check.fail(fname, "dest", "nil, a local path, {path = ...}, a file handle or a sink function expected, got " ..
    type(dest))
end

-- The pieces of one download into write, the first one cut by the sha
-- call already (first: its size); returns true or nil, Error, offset.
local function fetch_pieces(self, key, src, size, sha, write, opts, state, first)
  local hash = core.codec.sha256_stream()
  local piece = state.piece
  local offset = 0
  while offset < size do
    local n = math.min(DOWN_PIECE, size - offset)
    local out = first
    if offset > 0 then
      local err
      out, err = helper.run(self, key, "slice", { src, tostring(offset), tostring(n), piece },
        { fname = "download" })
      if not out then return nil, err, offset, piece end
    end
    if tonumber(out) ~= n then
      return nil, helper.fail("integrity", "the file changed while it was read (" .. out ..
        " bytes where " .. n .. " were expected)"), offset, piece
    end
    local bytes, berr = self:download_file(piece, key)
    if not bytes then return nil, berr, offset, piece end
    hash:update(bytes)
    local ok, werr = write(bytes)
    if not ok then
      return nil, helper.fail("validation", "writing the destination: " .. tostring(werr)), offset, piece
    end
    offset = offset + #bytes
    state.offset = offset
    progress(opts, offset, size)
  end
  if hash:hex() ~= sha then
    return nil, helper.fail("integrity", "the bytes received do not match the file's sha256 " .. sha ..
      " (it changed while it was read?)"), offset, piece
  end
  return true, nil, offset, piece
end

-- The sink finished: the result and info, or nil, Error.
local function finished(finish, name, src, info)
  local result, why = finish(true)
  if result == nil then
    return nil, wrap_error(helper.fail("validation", "cannot write " .. name .. ": " .. tostring(why)),
      "download", src, info.bytes)
  end
  return result, info
end

-- A refusal of read-binary that the pieces path answers instead: the
-- file is larger than the route's limit, or not a regular file (then the
-- helper's sha says what it is), or missing.
local function not_whole(err)
  return err.kind ~= "cancelled" and err.kind ~= "interrupted" and (err.status == 400 or
    err.status == 404 or err.status == 413 or err.status == 422)
end

-- A file within read-binary's limit in one request, no helper call: the
-- route hashes what it read, download_file checks the bytes against that
-- hash, and opts.sha256 is checked against it. true, info; nil, Error;
-- or nil, nil when the pieces path has to do it.
local function whole_file(self, key, src, write, opts)
  local bytes, doc = self:download_file(src, key)
  if not bytes then
    if not_whole(doc) then return nil, nil end
    return nil, doc
  end
  local sha = type(doc.sha256) == "string" and doc.sha256:lower() or core.codec.sha256(bytes)
  if opts.sha256 and opts.sha256:lower() ~= sha then
    return nil, helper.fail("integrity", "the file's sha256 is " .. sha .. ", not " .. opts.sha256)
  end
  progress(opts, 0, #bytes)
  local ok, werr = write(bytes)
  if not ok then return nil, helper.fail("validation", "writing the destination: " .. tostring(werr)) end
  progress(opts, #bytes, #bytes)
  return true, { path = src, bytes = #bytes, sha256 = sha }
end

--- Downloads a workspace file of any size.
-- @tparam string src a workspace path
-- @tparam[opt] string|table|file|function dest nil (the bytes are
-- returned as a string), a local path or `{path =}` (written to a
-- temporary beside it, renamed once complete and checked), a file handle
-- (written from where it stands) or a sink function (called with each
-- piece)
-- @tparam[opt] table opts `on_progress(done, total)` (false cancels),
-- `sha256` (the expected digest: checked before anything is read)
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] string|file|boolean the bytes (dest nil), the local
-- path, the file handle, or true (a sink)
-- @treturn[1] table `{path, bytes, sha256}`
-- @return[2] nil
-- @treturn[2] Error (err.path, err.offset; a local path is then untouched;
-- integrity, cancelled, validation: the local file cannot be written)
-- @raise a bad src, a dest of another type, a malformed sha256
function Manager:download(src, dest, opts, key)
  src = files.path("download", "src", src)
  opts = options("download", opts)
  local write, finish_sink, name = sink_of("download", dest)
  if not write then return nil, helper.fail("validation", "download: " .. tostring(finish_sink)) end
  local closed = false
  local function finish(ok)   -- once, whichever way the download ends
    if closed then return nil end
    closed = true
    return finish_sink(ok)
  end
  local out, err = self:ensure_runtime(key)
  if out then
    local whole, info = guarded(function() finish(false) end, whole_file, self, key, src, write, opts)
    if whole ~= nil or info ~= nil then
      if whole then return finished(finish, name, src, info) end
      finish(false)
      return nil, wrap_error(info, "download", src, 0)
    end
  end
  local piece = ".unsb-" .. helper.random_hex() .. ".piece"
  if out then
    out, err = helper.run(self, key, "sha", { src, piece, tostring(DOWN_PIECE) }, { fname = "download" })
  end
  if not out then
    finish(false)
    return nil, wrap_error(err, "download", src, 0)
  end
  local sha, size, first = out:match("^(%x+) (%d+) (%d+)$")
  size = tonumber(size)
  local state = { piece = piece }
  if opts.sha256 and opts.sha256:lower() ~= sha then
    helper.run(self, key, "cleanup", { piece }, { fname = "download" })
    finish(false)
    return nil, wrap_error(helper.fail("integrity", "the file's sha256 is " .. sha .. ", not " ..
      opts.sha256), "download", src, 0)
  end
  local ok, ferr, offset = guarded(function()
    finish(false)
    helper.run(self, key, "cleanup", { piece }, { fname = "download" })
  end, function()
    progress(opts, 0, size)
    return fetch_pieces(self, key, src, size, sha, write, opts, state, first)
  end)
  if ok == nil and ferr and ferr.kind == "cancelled" then
    return nil, wrap_error(ferr, "download", src, state.offset or 0)
  end
  helper.run(self, key, "cleanup", { piece }, { fname = "download" })
  if not ok then
    finish(false)
    return nil, wrap_error(ferr, "download", src, offset)
  end
  return finished(finish, name, src, { path = src, bytes = size, sha256 = sha })
end

-- ----------------------------------------------------------------------
-- directories
-- ----------------------------------------------------------------------

local DIR = { on_progress = true }

-- The regular files below a local directory (relative names), the
-- directories, and what was skipped (symlinks, devices).
local function walk(root, rel, out)
  local here = rel == "" and root or root .. "/" .. rel
  local entries, err = core.files.read_dir(here)
  if not entries then return nil, err end
  table.sort(entries, function(a, b) return a.name < b.name end)
  for _, e in ipairs(entries) do
    local r = rel == "" and e.name or rel .. "/" .. e.name
    if e.type == "file" then
      out.files[#out.files + 1] = { rel = r, size = e.size }
      out.bytes = out.bytes + e.size
    elseif e.type == "directory" then
      out.dirs[#out.dirs + 1] = r
      local ok, werr = walk(root, r, out)
      if not ok then return nil, werr end
    else
      out.skipped[#out.skipped + 1] = r
    end
  end
  return true
end

--- Uploads every regular file below a local directory to the same
-- relative path below a workspace directory, each as `upload` does.
-- @tparam string dir the local directory
-- @tparam string dest a workspace directory (made with its parents; "."
-- the root)
-- @tparam[opt] table opts `on_progress(done, total, path)`, counting bytes
-- of the whole tree
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table `{files, bytes, skipped}`, skipped the relative names
-- of symlinks and special files
-- @return[2] nil
-- @treturn[2] Error (err.path names the file; not_found: dir cannot be read)
-- @raise an empty dir, a bad dest, an unknown option
function Manager:upload_dir(dir, dest, opts, key)
  check.nonempty("upload_dir", "local_dir", dir)
  dest = files.path("upload_dir", "dest", dest, true)
  opts = check.options("upload_dir", opts, DIR)
  check.type("upload_dir", "on_progress", opts.on_progress, "function", true)
  local tree = { files = {}, dirs = {}, skipped = {}, bytes = 0 }
  local ok, werr = walk(dir, "", tree)
  if not ok then return nil, helper.fail("not_found", "upload_dir: " .. tostring(werr)) end
  if dest ~= "." then
    local made, merr = self:mkdir(dest, { parents = true }, key)
    if not made then return nil, merr end
  end
  for _, d in ipairs(tree.dirs) do
    local made, merr = self:mkdir(files.join(dest, d), { parents = true }, key)
    if not made then return nil, merr end
  end
  local base = 0
  for _, f in ipairs(tree.files) do
    local target = files.join(dest, f.rel)
    local r, err = self:upload({ path = dir .. "/" .. f.rel }, target, { on_progress = opts.on_progress
      and function(done) opts.on_progress(base + done, tree.bytes, target) end }, key)
    if not r then return nil, err end
    base = base + r.bytes
  end
  return { files = #tree.files, bytes = base, skipped = tree.skipped }
end

--- Downloads every regular file below a workspace directory to the same
-- relative path below a local directory (made with its parents), each
-- as `download` to a path does.
-- @tparam string src a workspace directory ("." the root)
-- @tparam string dir the local directory
-- @tparam[opt] table opts `on_progress(done, total, path)`
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table `{files, bytes, skipped}`
-- @return[2] nil
-- @treturn[2] Error (err.path names the file; validation: a local directory
-- cannot be made)
-- @raise a bad src, an empty dir, an unknown option
function Manager:download_dir(src, dir, opts, key)
  src = files.path("download_dir", "src", src, true)
  check.nonempty("download_dir", "local_dir", dir)
  opts = check.options("download_dir", opts, DIR)
  check.type("download_dir", "on_progress", opts.on_progress, "function", true)
  local entries, err = self:list(src, { recursive = true }, key)
  if not entries then return nil, err end
  local okd, derr = core.files.mkdirs(dir)
  if not okd then return nil, helper.fail("validation", "download_dir: " .. tostring(derr)) end
  local total, skipped, todo = 0, {}, {}
  for _, e in ipairs(entries) do
    local rel = src == "." and e.path or e.path:sub(#src + 2)
    if e.type == "directory" then
      local ok, merr = core.files.mkdirs(dir .. "/" .. rel)
      if not ok then return nil, helper.fail("validation", "download_dir: " .. tostring(merr)) end
    elseif e.type == "file" then
      todo[#todo + 1] = { path = e.path, rel = rel }
      total = total + e.size
    else
      skipped[#skipped + 1] = rel
    end
  end
  local base = 0
  for _, f in ipairs(todo) do
    local got, info = self:download(f.path, dir .. "/" .. f.rel, { on_progress = opts.on_progress
      and function(done) opts.on_progress(base + done, total, f.path) end }, key)
    if not got then return nil, info end
    base = base + info.bytes
  end
  return { files = #todo, bytes = base, skipped = skipped }
end

return M
