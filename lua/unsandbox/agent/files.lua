--- File operations on a workspace, as methods of unsandbox.Manager (the
-- session key last, as every Manager method) that Sandbox methods call
-- with their name: stat, exists, list, remove, rename, mkdir, chmod. The
-- protocol's file tools and routes read, write, edit, glob and grep, and
-- list a directory as {name, type}; nothing there gives a size, a mode or
-- an mtime, removes, renames, makes a directory or changes a mode. So
-- these are operations of the sandbox-side helper (helper.lua), run by
-- the shell tool with every path POSIX-quoted. Paths follow the file
-- tools' rule (§5.6): relative to /workspace (or /workspace/...), no '..',
-- not under .sandbox; the client refuses a bad one before sending (a
-- raise at the caller's line) and the helper refuses it again, also when
-- a symlinked parent leads out of the workspace.
-- @classmod Manager
local check = require "unsandbox.check"
local core = require "unsandbox.core"
local helper = require "unsandbox.agent.helper"

local Manager = {}   -- the methods this file adds to unsandbox.Manager
local M = { methods = Manager }

-- Is s valid UTF-8 (no overlong forms, surrogates or code points past
-- U+10FFFF)? Every route carries paths in JSON, which holds nothing else.
local function utf8_valid(s)
  local i, n = 1, #s
  while i <= n do
    local c = s:byte(i)
    local len, lo, hi = 1, 0x80, 0xBF
    if c < 0x80 then lo = 0x80
    elseif c >= 0xC2 and c <= 0xDF then len = 2
    elseif c >= 0xE0 and c <= 0xEF then
      len = 3
      if c == 0xE0 then lo = 0xA0 elseif c == 0xED then hi = 0x9F end
    elseif c >= 0xF0 and c <= 0xF4 then
      len = 4
      if c == 0xF0 then lo = 0x90 elseif c == 0xF4 then hi = 0x8F end
    else return false end
    for k = 1, len - 1 do
      local b = s:byte(i + k)
      if not b or b < (k == 1 and lo or 0x80) or b > (k == 1 and hi or 0xBF) then return false end
    end
    i = i + len
  end
  return true
end
M.utf8_valid = utf8_valid

-- A workspace path, normalised: /workspace/x → x, '.' and empty
-- segments dropped; the root is "." (allowed only with allow_root).
-- '..', .sandbox, other absolute paths and bytes that are not UTF-8
-- raise at the caller's line.
function M.path(fname, arg, p, allow_root)
  check.type(fname, arg, p, "string")
  if not utf8_valid(p) then
    check.fail(fname, arg, "not valid UTF-8 (the protocol carries paths as JSON text)")
  end
  if p == "/workspace" or p == "/workspace/" then p = "." end
  if p ~= "." then p = check.value(fname, arg, core.cp.workspace_path(p)) end
  local segs = {}
  for seg in p:gmatch("[^/]+") do
    if seg == ".." then check.fail(fname, arg, "'..' is not allowed in a workspace path") end
    if seg ~= "." then segs[#segs + 1] = seg end
  end
  if segs[1] == ".sandbox" then check.fail(fname, arg, ".sandbox is reserved") end
  if #segs == 0 then
    if not allow_root then check.fail(fname, arg, "a path below the workspace root expected") end
    return "."
  end
  return table.concat(segs, "/")
end

-- The directory part of a normalised path ("." for a top-level name).
function M.parent(p)
  return p:match("^(.*)/[^/]*$") or "."
end

-- join(dir, name): a path below dir ("." is the root).
function M.join(dir, name)
  if dir == "." then return name end
  return dir .. "/" .. name
end

local TYPES = { [8] = "file", [4] = "directory", [10] = "symlink" }
local LIST_TYPES = { f = "file", d = "directory", l = "symlink" }

local function floor(x) return math.floor(x + 0) end

--- File operations (the agent tools).
-- Run by the sandbox-side helper through the shell tool (so they need a
-- running runtime, made if needed). The agent tools' errors: kind
-- not_found (no such path), sandbox (the sandbox refused: err.code
-- "not_empty", "exists", ...).
-- @section file_ops

--- Describes a path; a symlink is described itself, not followed.
-- @tparam string path a workspace path: relative to /workspace (or
-- "/workspace/..."), no "..", not under .sandbox
-- (the root "." too)
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table `{path, type = "file"|"directory"|"symlink"|"other",
-- size, mode (the permission bits: 420 for 0644), mtime (epoch seconds)}`
-- @return[2] nil
-- @treturn[2] Error not_found when nothing is there
-- @raise a bad path
function Manager:stat(path, key)
  path = M.path("stat", "path", path, true)
  local out, err = helper.run(self, key, "stat", { path }, { fname = "stat" })
  if not out then return nil, err end
  local raw, size, mtime = out:match("^(%x+) (%d+) (%d+)")
  if not raw then return nil, helper.fail("protocol", "stat: a malformed answer: " .. out) end
  local mode = tonumber(raw, 16)
  return { path = path, type = TYPES[floor(mode / 4096)] or "other", mode = mode % 4096,
           size = tonumber(size), mtime = tonumber(mtime) }
end

--- Whether something is at a path (a dangling symlink is).
-- @tparam string path a workspace path: relative to /workspace (or
-- "/workspace/..."), no "..", not under .sandbox
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] boolean
-- @return[2] nil
-- @treturn[2] Error when the question could not be asked
-- @raise a bad path
function Manager:exists(path, key)
  path = M.path("exists", "path", path, true)
  local st, err = self:stat(path, key)
  if st then return true end
  if err.kind == "not_found" then return false end
  return nil, err
end

local LIST = { recursive = true, depth = true }
local LIST_MAX = 100000

-- The helper's records "type size mode mtime relpath\0" as entries.
local function entries_of(dir, out)
  local list = {}
  for rec in out:gmatch("([^%z]*)%z") do
    local t, size, mode, mtime, rel = rec:match("^(%S+) (%d+) (%d+) ([%d%.]+) (.*)$")
    if t then
      list[#list + 1] = { path = M.join(dir, rel), name = rel:match("([^/]*)$"),
        type = LIST_TYPES[t] or "other", size = tonumber(size), mode = tonumber(mode, 8),
        mtime = floor(tonumber(mtime)) }
    end
  end
  table.sort(list, function(a, b) return a.path < b.path end)
  return list
end

--- The entries below a directory, sorted by path; .sandbox is left out.
-- @tparam[opt="."] string path a workspace directory ("." the root)
-- @tparam[opt] table opts `recursive` (boolean; false: one level),
-- `depth` (levels, 1..4096, with recursive; default all)
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] table a list of `{path (from the root), name, type, size,
-- mode, mtime}`; at most 100000, then `truncated = true`
-- @return[2] nil
-- @treturn[2] Error (not_found)
-- @raise a bad path, depth without recursive
function Manager:list(path, opts, key)
  path = M.path("list", "path", path or ".", true)
  opts = check.options("list", opts, LIST)
  check.type("list", "recursive", opts.recursive, "boolean", true)
  local depth = check.int_range("list", "depth", opts.depth, 1, 4096)
  if depth and not opts.recursive then check.fail("list", "depth", "depth needs recursive = true") end
  depth = opts.recursive and (depth or 0) or 1
  local out, err = helper.run(self, key, "list", { path, tostring(depth) }, { fname = "list" })
  if not out then return nil, err end
  local list = entries_of(path, out)
  if #list > LIST_MAX then
    list[#list] = nil
    list.truncated = true
  end
  return list
end

--- Removes a file, a symlink (not what it points to) or an empty
-- directory.
-- @tparam string path a workspace path: relative to /workspace (or
-- "/workspace/..."), no "..", not under .sandbox
-- @tparam[opt] table opts `recursive` (true: a directory with its contents)
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] boolean true
-- @return[2] nil
-- @treturn[2] Error not_found; sandbox with err.code "not_empty"
-- @raise a bad path (the root cannot be removed)
function Manager:remove(path, opts, key)
  path = M.path("remove", "path", path)
  opts = check.options("remove", opts, { recursive = true })
  check.type("remove", "recursive", opts.recursive, "boolean", true)
  local out, err = helper.run(self, key, "remove", { path, opts.recursive and "1" or "0" },
    { fname = "remove" })
  if not out then return nil, err end
  return true
end

--- Moves a file or directory: over an existing file, like rename(2);
-- into an existing directory only by naming the new path. The parent of
-- `to` must exist.
-- @tparam string from a workspace path
-- @tparam string to a workspace path
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] boolean true
-- @return[2] nil
-- @treturn[2] Error (not_found, sandbox)
-- @raise a bad path
function Manager:rename(from, to, key)
  from = M.path("rename", "from", from)
  to = M.path("rename", "to", to)
  local out, err = helper.run(self, key, "rename", { from, to }, { fname = "rename" })
  if not out then return nil, err end
  return true
end

--- Makes a directory.
-- @tparam string path a workspace path: relative to /workspace (or
-- "/workspace/..."), no "..", not under .sandbox
-- @tparam[opt] table opts `parents` (true: make missing parents, and
-- accept one that exists)
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] boolean true
-- @return[2] nil
-- @treturn[2] Error sandbox with err.code "exists"; not_found for a missing
-- parent without parents
-- @raise a bad path
function Manager:mkdir(path, opts, key)
  path = M.path("mkdir", "path", path)
  opts = check.options("mkdir", opts, { parents = true })
  check.type("mkdir", "parents", opts.parents, "boolean", true)
  local out, err = helper.run(self, key, "mkdir", { path, opts.parents and "1" or "0" },
    { fname = "mkdir" })
  if not out then return nil, err end
  return true
end

local SYMBOLIC = "^[ugoa]*[-+=][rwxXst]*$"

local function mode_arg(mode)
  if type(mode) == "number" then
    local m = check.int_range("chmod", "mode", mode, 0, 4095)   -- 0 to 07777
    return string.format("%o", m)
  end
  check.type("chmod", "mode", mode, "string")
  if mode:match("^[0-7]+$") and #mode <= 4 then return mode end
  for part in (mode .. ","):gmatch("([^,]*),") do
    if not part:match(SYMBOLIC) then
      check.fail("chmod", "mode", "an integer (0 to 4095, e.g. 493 for 0755), octal digits ('755') or " ..
        "a symbolic mode ('u+x,go-w') expected, got '" .. mode .. "'")
    end
  end
  return mode
end

--- Changes a path's mode.
-- @tparam string path a workspace path: relative to /workspace (or
-- "/workspace/..."), no "..", not under .sandbox
-- @tparam integer|string mode an integer 0..4095 (`tonumber("755", 8)`),
-- octal digits ("755") or a symbolic mode ("u+x,go-w")
-- @tparam[opt] string key the session key (nil: the Manager's own)
-- @treturn[1] boolean true
-- @return[2] nil
-- @treturn[2] Error (not_found)
-- @raise a bad path or mode
function Manager:chmod(path, mode, key)
  path = M.path("chmod", "path", path, true)
  local out, err = helper.run(self, key, "chmod", { path, mode_arg(mode) }, { fname = "chmod" })
  if not out then return nil, err end
  return true
end

return M
