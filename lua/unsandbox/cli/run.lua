--- `un FILE` and `un -s LANG CODE`: one run of the execution API. The
-- code runs through execute_code, so the synchronous answer is used when
-- it comes and the job is polled only when the service says it is still
-- pending; Ctrl-C or the deadline while it is polled cancel the job (the
-- library does). On a terminal, stderr shows the elapsed time and the
-- job's status while it is polled. Artifacts are saved under -o DIR (or
-- .) at their relative paths, each written whole or not at all; a name
-- that is absolute or climbs out with `..` is refused. Internal module.
local unsandbox = require "unsandbox"
local core = require "unsandbox.core"
local exits = require "unsandbox.cli.exits"
local fail = require "unsandbox.cli.fail"
local out = require "unsandbox.cli.output"

local M = {}

local CODES, usage = exits.codes, fail.usage

-- A one-line "elapsed, status" indicator, only when stderr is a terminal.
local function progress()
  if not core.term.isatty(2) then return nil end
  local t0 = core.loop.monotonic_ms()
  return function(job)
    io.stderr:write(string.format("\r\27[K[un] %.1fs %s", (core.loop.monotonic_ms() - t0) / 1000, job.status or "?"))
    io.stderr:flush()
  end, function() io.stderr:write("\r\27[K"); io.stderr:flush() end
end

local function read_file(path)
  local f, err = io.open(path, "rb")
  if not f then usage("cannot read " .. tostring(err)) end
  local s = f:read("a")
  f:close()
  return s
end

-- The code to run: CODE, FILE, or standard input for "-". The service has
-- neither argv nor stdin for a program, so words after it are refused,
-- not silently dropped.
local function program(o)
  for _, f in ipairs(o.file or {}) do
    local h, err = io.open(f, "rb")
    if not h then usage("-f " .. f .. ": cannot read it (" .. tostring(err) .. ")") end
    h:close()
  end
  if #o.words > 1 then
    usage("arguments after the program are not passed to it (the service has no argv): "
      .. "give values with -e KEY=VAL or files with -f FILE")
  end
  local what = o.words[1]
  if what == "-" then
    if o.secret_key == "-" then usage("standard input cannot hold both the code (-) and the key (-k -)") end
    if not o.language then usage("code from standard input (-) needs its language: -s LANG -") end
    return o.language, io.stdin:read("a") or ""
  end
  if o.language then return o.language, what or usage("-s " .. o.language .. " needs the code to run") end
  if not what then usage("nothing to run") end
  if o.near and o.near ~= "" then usage(what .. " is neither a file nor a command" .. o.near) end
  local code = read_file(what)
  local lang = unsandbox.detect_language(what, code)
  if not lang then usage("cannot tell the language of " .. what .. "; use -s LANG") end
  return lang, code
end

--- Saves artifacts under dir (made when missing) at their relative
-- paths (unsandbox.save_artifacts, which refuses absolute names and
-- `..`). Returns nil, or the message of the first failure (the caller
-- still exits with the program's code).
function M.save_artifacts(list, dir)
  local saved, err = unsandbox.save_artifacts(list, dir or ".")
  if not saved then return "un: " .. err.message end
  for _, path in ipairs(saved) do io.stderr:write("[un] saved " .. path .. "\n") end
end

-- The result as one document: artifacts by name and size (their bytes
-- need not be text).
local function json_result(r)
  local doc = {}
  for k, v in pairs(r) do doc[k] = v end
  if r.artifacts then
    doc.artifacts = {}
    for i, a in ipairs(r.artifacts) do doc.artifacts[i] = { filename = a.filename, size = #(a.content or "") } end
  end
  out.json(doc)
end

--- Runs the program; returns its exit code (a program's own: true).
function M.main(o, c)
  local lang, code = program(o)
  local opts = { env = nil, input_files = o.file, network_mode = o.network, ttl = o.ttl,
    return_artifacts = (o.artifacts or o.outdir ~= nil) or nil }
  if o.env then
    opts.env = {}
    for _, kv in ipairs(o.env) do opts.env[kv[1]] = kv[2] end
  end
  local show, clear = progress()
  opts.on_poll = show
  local res, err = fail.guard("un", c.execute_code, c, lang, code, opts)
  if clear then clear() end
  if not res and err.kind == "interrupted" and err.job_id == nil then
    -- Ctrl-C while POST /execute waited for its synchronous answer: the
    -- service had not named the job yet, so nothing could cancel it
    fail.exit_with(CODES.interrupted, "un: interrupted before the service named the job; "
      .. "it may run on until its time limit")
  end
  local r = fail.check(res, err)
  if o.json then json_result(r) else
    io.stdout:write(r.stdout or "")
    io.stdout:flush()
    io.stderr:write(r.stderr or "")
    if r.stdout_truncated or r.stderr_truncated then io.stderr:write("[un] output truncated\n") end
  end
  -- a local write failure is reported, but the program's own exit code
  -- is still un's: the run happened, and a script may depend on its code
  local save_err = r.artifacts and #r.artifacts > 0 and M.save_artifacts(r.artifacts, o.outdir)
  if save_err then io.stderr:write(save_err, "\n") end
  if r.status == "timeout" then fail.exit_with(CODES.timeout, "un: the program exceeded its time limit") end
  if r.status == "cancelled" or r.status == "failed" then
    fail.exit_with(CODES.service, "un: job " .. tostring(r.job_id) .. " " .. r.status
      .. (r.error and (": " .. r.error) or ""))
  end
  if save_err and (r.exit_code or 0) == 0 then return CODES.io end
  return r.exit_code or 0, true
end

return M
