--- Building execute requests: options checked, input files read and
-- encoded, the body in the service's canonical form. Internal module.
local core = require "unsandbox.core"
local check = require "unsandbox.check"
local Error = require "unsandbox.errors"
local languages = require "unsandbox.exec.languages"

local M = {}

local NETWORK = { zerotrust = true, semitrusted = true }
-- the limits and the rules of names are the core's (core/validate.h), the
-- same functions unsandboxd runs on the request
local MAX_FILES = core.rules.LIMITS.input_files

M.OPTIONS = {
  env = true, input_files = true, network_mode = true, ttl = true, vcpu = true,
  return_artifacts = true, timeout = true, on_poll = true,
}
-- (public_key, url and the other connection options are taken out by the
-- module functions, which make a one-off client of them; a Client's own
-- methods refuse them, since they would be ignored there)

--- The arguments of execute_code and friends, checked. Returns the
-- options table and the request body, or the options, nil and an Error
-- when an input file cannot be read.
function M.args(fname, language, code, opts)
  check.nonempty(fname, "language", language)
  check.type(fname, "code", code, "string")
  opts = check.options(fname, opts, M.OPTIONS)
  return opts, M.body(fname, language, code, opts)
end

--- How long to wait for a job when the caller gave no timeout: its ttl
-- (default 60 s) plus a minute of queueing, never forever.
function M.default_wait(ttl) return (ttl or 60) + 60 end

--- The longest a synchronous answer of POST /execute may take: the run's
-- ttl plus 30 s of queueing and transfer (the C client's own request
-- timeout, spec section 6). A call whose deadline is shorter submits a job
-- instead, so that it always knows the job it may have to cancel.
function M.sync_limit(ttl) return (ttl or 60) + 30 end

local function basename(path)
  return path:match("([^/]+)$") or path
end

-- The service's rules for input files (the C CLI's: spec §2), stated in
-- the error when a file or the whole set exceeds them.
local FILE_MAX = 100 * 1000 * 1000
local TOTAL_MAX = 4 * 1000 * 1000 * 1000

local function too_big(what, n, rule)
  return Error.new { kind = "validation", message = what .. " is " .. n .. " bytes: the service takes " .. rule }
end

-- The bytes of a file handle from where it stands, its size checked first.
local function read_handle(f, what)
  local here = f:seek("cur")
  local size = here and f:seek("end")
  if size then
    f:seek("set", here)
    if size - here > FILE_MAX then return nil, too_big(what, size - here, "at most 100 MB per file") end
  end
  local data = f:read("*a")   -- "*a": 5.1 knows no other spelling
  if not data then return nil, Error.new { kind = "validation", message = what .. ": cannot be read" } end
  if #data > FILE_MAX then return nil, too_big(what, #data, "at most 100 MB per file") end
  return data
end

local function read_file(path)
  local f, err = io.open(path, "rb")
  if not f then
    return nil, Error.new { kind = "validation", message = "input file " .. path .. ": " .. tostring(err) }
  end
  local data, rerr = read_handle(f, "input file " .. path)
  f:close()
  return data, rerr
end

local ITEM = { filename = true, content = true, path = true, file = true }

-- One input file: a path string (sent under its base name), or
-- {filename = "rel/path", content = "bytes" | path = "local/file" |
-- file = handle}. Returns name, data or nil, nil, Error.
local function input_file(fname, i, f)
  local arg = "input_files[" .. i .. "]"
  if type(f) == "string" then
    local data, err = read_file(f)
    if not data then return nil, nil, err end
    return basename(f), data
  elseif type(f) ~= "table" then
    check.fail(fname, arg, "path or {filename, content | path | file} expected, got " .. type(f))
  end
  check.options(fname, f, ITEM, { arg = arg })
  check.type(fname, arg .. ".filename", f.filename, "string")
  local n = (f.content ~= nil and 1 or 0) + (f.path ~= nil and 1 or 0) + (f.file ~= nil and 1 or 0)
  if n ~= 1 then check.fail(fname, arg, "exactly one of content, path and file expected") end
  if f.content ~= nil then
    check.type(fname, arg .. ".content", f.content, "string")
    if #f.content > FILE_MAX then return nil, nil, too_big("input file " .. f.filename, #f.content,
      "at most 100 MB per file") end
    return f.filename, f.content
  elseif f.path ~= nil then
    check.type(fname, arg .. ".path", f.path, "string")
    local data, err = read_file(f.path)
    if not data then return nil, nil, err end
    return f.filename, data
  end
  if io.type(f.file) ~= "file" then check.fail(fname, arg .. ".file", "an open file handle expected") end
  local data, err = read_handle(f.file, "input file " .. f.filename)
  if not data then return nil, nil, err end
  return f.filename, data
end

-- Input files: see input_file; at most 1000, 100 MB each, 4 GB in all.
local function encode_files(fname, files)
  check.type(fname, "input_files", files, "table")
  if #files > MAX_FILES then check.fail(fname, "input_files", "more than " .. MAX_FILES .. " files") end
  local out, names, total = {}, {}, 0
  for i, f in ipairs(files) do
    local name, data, err = input_file(fname, i, f)
    if not name then return nil, err end
    total = total + #data
    if total > TOTAL_MAX then return nil, too_big("the input files", total, "at most 4 GB in all") end
    local why = core.rules.relpath_check(name)
    if why then
      check.fail(fname, "input_files[" .. i .. "]", "file name " .. string.format("%q", name:sub(1, 200))
        .. " " .. why .. " (a relative path inside the sandbox is expected)")
    end
    names[i] = name
    out[i] = { filename = name, content = core.codec.base64_encode(data) }
  end
  local why, a, b = core.rules.paths_conflict(names)
  if why then check.fail(fname, "input_files[" .. a .. "] and [" .. b .. "]", why) end
  return out
end

local function encode_env(fname, env)
  check.type(fname, "env", env, "table")
  local out, n = {}, 0
  for k, v in pairs(env) do
    if type(k) ~= "string" then check.fail(fname, "env", "variable names must be strings, got " .. type(k)) end
    if type(v) ~= "string" and type(v) ~= "number" then
      check.fail(fname, "env", "value of " .. k .. " must be a string or number, got " .. type(v))
    end
    n = n + 1
    out[k] = tostring(v)
  end
  local why, name = core.rules.env_check(out)
  if why then
    check.fail(fname, "env", (name and "variable " .. string.format("%q", name:sub(1, 64)) .. ": " or "") .. why)
  end
  return n > 0 and out or nil
end

--- The fields every request that makes a sandbox shares: network_mode,
-- vcpu (sent only when > 1) and input_files, added to body. Returns body,
-- or nil, Error when an input file cannot be read.
function M.sandbox_fields(fname, opts, body)
  body = body or {}
  if opts.input_files ~= nil then
    local files, err = encode_files(fname, opts.input_files)
    if not files then return nil, err end
    if #files > 0 then body.input_files = files end
  end
  body.network_mode = check.oneof(fname, "network_mode", opts.network_mode, NETWORK)
  local vcpu = check.int_range(fname, "vcpu", opts.vcpu, 1, 8)
  if vcpu and vcpu > 1 then body.vcpu = vcpu end
  return body
end

--- The JSON body of POST /execute and /execute/async, or nil, Error when
-- an input file cannot be read.
function M.body(fname, language, code, opts)
  local body = { language = languages.canonical(language), code = code }
  if opts.env ~= nil then body.env = encode_env(fname, opts.env) end
  local _, err = M.sandbox_fields(fname, opts, body)
  if err then return nil, err end
  body.ttl = check.int_range(fname, "ttl", opts.ttl, 1, 900)
  check.positive(fname, "timeout", opts.timeout)
  check.type(fname, "on_poll", opts.on_poll, "function", true)
  if opts.return_artifacts then body.return_artifact = true end  -- the C SDK's key
  return body
end

return M
