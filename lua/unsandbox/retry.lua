--- Opt-in retries: `retry = {max = N, on = {429, 503}}` on a
-- client or a Manager. Off by default. The rules, in the order applied:
--   * a Manager retries only idempotent calls (GET, HEAD, OPTIONS, PUT,
--     DELETE, or a call its caller marks idempotent): the Control Plane's
--     rule is that callers retry what is safe to repeat;
--   * an answer whose status is listed in `on` is retried: the server saw
--     the request and said "not now" (429, 503, ...);
--   * no answer at all ("transport" or "timeout" in `on`): retried when
--     nothing of the request left (a refused connection), otherwise only
--     for an idempotent call: a POST that may have reached the server is
--     never sent twice unless its caller says so;
--   * the wait is the server's Retry-After (seconds or an HTTP date,
--     already clamped by the core) when it gave one, else exponential
--     backoff with full jitter from `base` (default 0.5 s); a Retry-After
--     longer than `max_wait` (default 60 s) is not waited for at all: the
--     error goes back to the caller with its retry_after, rather than the
--     library sleeping less than the server asked.
-- Every attempt is a new request, freshly signed, and its own event for
-- the hook (attempt = 1, 2, ...). Internal module.
local compat = require "unsandbox.compat"
local check = require "unsandbox.check"

local M = {}

local IDEMPOTENT = { GET = true, HEAD = true, OPTIONS = true, PUT = true, DELETE = true }
local KEYS = { max = true, on = true, max_wait = true, base = true }
local MAX_ATTEMPTS = 10

--- The policy of a `retry` option, checked (misuse raises); nil for nil.
-- cp: a Manager's (idempotent calls only).
function M.policy(fname, spec, cp)
  if spec == nil or spec == false then return nil end
  check.options(fname, spec, KEYS, { required = true, arg = "retry", unknown = "unknown field '%s'" })
  local p = { max = check.int_range(fname, "retry.max", spec.max, 0, MAX_ATTEMPTS) or 3,
              max_wait = check.positive(fname, "retry.max_wait", spec.max_wait) or 60,
              base = check.positive(fname, "retry.base", spec.base) or 0.5,
              on = {}, idempotent_only = cp or false }
  local on = spec.on or { 429, 503 }
  check.type(fname, "retry.on", on, "table")
  for i, v in ipairs(on) do
    if compat.math_type(v) == "integer" and v >= 100 and v <= 599 then p.on[v] = true
    elseif v == "transport" or v == "timeout" then p.on[v] = true
    else
      check.fail(fname, "retry.on[" .. i .. "]", "an HTTP status (100-599), \"transport\" or \"timeout\" expected")
    end
  end
  return p
end

function M.idempotent(method, marked)
  return marked == true or IDEMPOTENT[method] == true
end

--- Seconds to wait before attempt `attempt + 1`, or nil and why not.
-- f: {method, idempotent (the caller's mark), status (an answer's), retry_after
-- (s), kind (no answer: its kind), sent (whether any of the request left)}.
function M.wait(p, attempt, f)
  if not p then return nil end
  if attempt > p.max then return nil, "no attempts left" end
  local idem = M.idempotent(f.method, f.idempotent)
  if p.idempotent_only and not idem then return nil, "not an idempotent call" end
  if f.status then
    if not p.on[f.status] then return nil end
  else
    if not p.on[f.kind] then return nil end
    if f.sent and not idem then return nil, "the request may have reached the server" end
  end
  if f.retry_after then
    if f.retry_after > p.max_wait then
      return nil, string.format("Retry-After of %d s is longer than retry.max_wait", f.retry_after)
    end
    return f.retry_after
  end
  local cap = math.min(p.max_wait, p.base * 2 ^ (attempt - 1))
  return cap / 2 + math.random() * cap / 2
end

return M
