--- The shapes of a call that several groups of Client methods share:
-- one document with its request id, a result with its timing, waiting
-- for a job the call started, a list, a route by id, a destructive route
-- with the sudo challenge, a created resource's id, list arguments: the
-- one place for each, so every resource module of the execution API
-- (exec/*.lua) makes its calls the same way. Internal module.
local abandon = require "unsandbox.exec.abandon"
local transport = require "unsandbox.transport"
local check = require "unsandbox.check"
local Error = require "unsandbox.errors"
local observe = require "unsandbox.observe"
local poll = require "unsandbox.exec.poll"
local results = require "unsandbox.exec.results"
local shape = require "unsandbox.shape"

local M = {}

-- Success is one value: the document with its request id (transport.one).
local one = transport.one
M.one = one

--- The client's own timeout in seconds: the longest one request may
-- take (init.lua keeps the milliseconds it was made with in its state).
function M.request_limit(client)
  return (client:_state().timeout_ms or 120000) / 1000
end

-- A result or an error of a call, with the timing of meter (a batch's
-- program: its own submission and polls). Success stays one value.
function M.timed(meter, r, err)
  if type(r) == "table" then
    r.timing = meter:timing()
    return r
  end
  if Error.is(err) then err.timing = meter:timing() end
  return nil, err
end

-- The options of a call that has no others: timeout (s, the whole call).
M.PLAIN = { timeout = true }

--- opts checked as a plain call's (M.PLAIN, or allowed): the options table.
function M.plain(fname, opts, allowed)
  opts = check.options(fname, opts, allowed or M.PLAIN)
  check.positive(fname, "timeout", opts.timeout)
  return opts
end

--- What transport.request takes from a plain call's options.
function M.request_opts(opts, extra)
  local o = { timeout = opts.timeout }
  if extra then for k, v in pairs(extra) do o[k] = v end end
  return o
end

-- The final result of a job, polled for (poll.wait's meter and opts).
function M.wait_result(self, job_id, timeout, on_poll, want_artifacts, meter, opts)
  local job, rid = poll.wait(self, job_id, timeout, on_poll, meter, opts)
  if not job then return nil, rid end
  return results.normalise(job, rid, want_artifacts)
end

local function never() return false end

-- Waits for a job this call started itself: given up (Ctrl-C, the call's
-- deadline), the job is cancelled and the Error names it (abandon.lua).
function M.wait_started(self, job_id, timeout, on_poll, want_artifacts, meter, opts)
  return abandon.guard(self, { job_id }, never, function()
    local r, err = M.wait_result(self, job_id, timeout, on_poll, want_artifacts, meter, opts)
    if not r then return nil, abandon.note(self, job_id, err) end
    return r
  end)
end

-- GET path: the list under key (bare: the document itself may be the
-- list). Returns the list, or nil, Error.
function M.get_list(self, path, key, opts, bare)
  local doc, rid = transport.request(self, "GET", path, nil, M.request_opts(opts))
  if not doc then return nil, rid end
  return shape.list(doc, key, rid, bare)
end

-- GET /<key>: the list under key. opts: timeout.
function M.list_of(key)
  local fname = "list_" .. key
  return function(self, opts)
    return M.get_list(self, "/" .. key, key, M.plain(fname, opts))
  end
end

-- METHOD prefix..id..suffix: one document (a POST sends {}). opts: timeout.
function M.by_id(method, prefix, fname, suffix)
  return function(self, id, opts)
    check.id(fname, "id", id)
    opts = M.plain(fname, opts)
    return one(transport.request(self, method, prefix .. id .. (suffix or ""), method == "POST" and {} or nil,
      M.request_opts(opts)))
  end
end

local SNAPSHOT_OPTIONS = { name = true, hot = true, timeout = true }

--- POST /<kind>s/{id}/snapshot {name?, hot}: a session's or a service's
-- snapshot, the document with its id. opts: name, hot, timeout.
function M.snapshot_of(kind)
  local fname = kind .. "_snapshot"
  return function(self, id, opts)
    check.id(fname, "id", id)
    opts = M.plain(fname, opts, SNAPSHOT_OPTIONS)
    local body = { name = check.type(fname, "name", opts.name, "string", true),
                   hot = check.type(fname, "hot", opts.hot, "boolean", true) or false }
    local doc, rid = transport.request(self, "POST", "/" .. kind .. "s/" .. id .. "/snapshot", body,
      M.request_opts(opts))
    return M.with_id(doc, rid, "snapshot_id")
  end
end

local SUDO_OPTIONS = { otp = true, challenge_id = true, on_sudo = true, timeout = true }

-- Deletions and unlocks may meet a sudo challenge (428 {challenge_id}).
-- opts.on_sudo(err) is then asked for the one-time password (nil or ""
-- cancels) and the request is sent again, freshly signed, with it; or the
-- caller answers a challenge it already has with opts.challenge_id and
-- opts.otp. The library itself never reads a terminal.
function M.destructive(method, prefix, fname, suffix)
  return function(self, id, opts)
    check.id(fname, "id", id)
    opts = check.options(fname, opts, SUDO_OPTIONS)
    check.type(fname, "on_sudo", opts.on_sudo, "function", true)
    check.positive(fname, "timeout", opts.timeout)
    if opts.challenge_id ~= nil or opts.otp ~= nil then
      check.nonempty(fname, "challenge_id", opts.challenge_id)
      check.nonempty(fname, "otp", opts.otp)
    end
    local path = prefix .. id .. (suffix or "")
    local body = method == "POST" and {} or nil
    local function send(challenge, otp)
      return transport.request(self, method, path, body, M.request_opts(opts,
        challenge and { headers = { ["X-Sudo-Challenge"] = challenge, ["X-Sudo-OTP"] = otp } }))
    end
    local doc, err = send(opts.challenge_id, opts.otp)
    if doc or not (opts.on_sudo and err.status == 428 and err.challenge_id) then return one(doc, err) end
    local otp = observe.outside(opts.on_sudo, err)
    if otp == nil or otp == "" then return nil, err end
    return one(send(err.challenge_id, tostring(otp)))
  end
end

--- A list argument: of non-empty strings (domains, keys) or, with ports,
-- of port numbers, checked item by item; sent as a JSON array.
function M.list_arg(fname, arg, v, ports)
  if v == nil then return nil end
  check.type(fname, arg, v, "table")
  if not shape.is_list(v) then check.fail(fname, arg, "a list expected") end
  for i, x in ipairs(v) do
    if ports then check.int_range(fname, arg .. "[" .. i .. "]", x, 1, 65535)
    else check.nonempty(fname, arg .. "[" .. i .. "]", x) end
  end
  return setmetatable(v, require("cjson").array_mt)
end

--- POST path with body ({} when none) and a plain call's options: one
-- document with its request id.
function M.post(self, path, body, opts)
  return transport.request(self, "POST", path, body or {}, M.request_opts(opts or {}))
end

-- A created resource's document with `id` filled from its own key; both
-- are ids the caller will put in paths, so they are checked like one.
function M.with_id(doc, rid, key)
  if not doc then return nil, rid end
  local id, err = shape.id(doc, doc.id ~= nil and "id" or key, rid)
  if not id then return nil, err end
  if doc[key] ~= nil and not shape.valid_id(doc[key]) then return shape.id(doc, key, rid) end
  doc.id = id
  return one(doc, rid)
end

return M
