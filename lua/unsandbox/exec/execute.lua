--- Building execute requests: options checked, input files read and
-- encoded, the body in the service's canonical form. Internal module.
local core = require "unsandbox.core"
local check = require "unsandbox.check"
local Error = require "unsandbox.errors"

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

local function read_file(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local data = f:read("*a")   -- "*a": 5.1 knows no other spelling
  f:close()
  return data
end

-- Input files: a path string (sent under its base name) or
-- {filename = "rel/path", content = "bytes"}.
local function encode_files(fname, files)
  check.type(fname, "input_files", files, "table")
  if #files > MAX_FILES then check.fail(fname, "input_files", "more than " .. MAX_FILES .. " files") end
  local out, names = {}, {}
  for i, f in ipairs(files) do
    local name, data
    if type(f) == "string" then
      local content, err = read_file(f)
      if not content then
        return nil, Error.new { kind = "validation", message = "input file " .. f .. ": " .. tostring(err) }
      end
      name, data = basename(f), content
    elseif type(f) == "table" then
      check.type(fname, "input_files[" .. i .. "].filename", f.filename, "string")
      check.type(fname, "input_files[" .. i .. "].content", f.content, "string")
      name, data = f.filename, f.content
    else
      check.fail(fname, "input_files[" .. i .. "]", "path or {filename, content} expected, got " .. type(f))
    end
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
  local body = { language = language, code = code }
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
