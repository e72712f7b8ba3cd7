--- MCP calls of the Control Plane (spec §5.4, §5.5, §7.9-§7.11): the
-- JSON-RPC framing, the buffered call (whose body may still be SSE: it is
-- scanned for the final message) and the streamed call, which drives an
-- unsandbox.Transfer from Lua so on_chunk(channel, chunk, sequence) runs
-- as bytes arrive, may yield, and may raise (the transfer is closed by
-- its <close>). Every MCP call first ensures a runtime (§7.9) and sends
-- the sandbox token through the same request path as every other call.
-- Internal module; the tool methods are in tools.lua.
local compat = require "unsandbox.compat"
local core = require "unsandbox.core"
local transport = require "unsandbox.transport"
local Error = require "unsandbox.errors"
local observe = require "unsandbox.observe"

local M = {}

local CANCELLED = "Sandbox command cancelled"

local function body_of(id, tool, args)
  return transport.encode {
    jsonrpc = "2.0", id = id, method = "tools/call",
    params = { name = tool, arguments = args },
    _meta = {
      ["io.modelcontextprotocol/protocolVersion"] = core.cp.MCP.protocol_version,
      ["io.modelcontextprotocol/client"] = { name = core.cp.MCP.client_name,
        version = core.cp.MCP.client_version },
    },
  }
end

--- §7.10: the final message's result, or an Error (502; rpc_code kept).
local function final_result(msg, resp)
  local rid = resp and resp.request_id
  if type(msg.error) == "table" then
    local code = compat.math_type(msg.error.code) == "integer" and msg.error.code or nil
    local text = type(msg.error.message) == "string" and msg.error.message or "error"
    return nil, Error.new { kind = "rpc", status = 502, rpc_code = code, request_id = rid,
      message = "MCP " .. tostring(code or msg.error.code) .. ": " .. text, data = msg.error.data }
  end
  local sc = type(msg.result) == "table" and msg.result.structuredContent
  if type(sc) ~= "table" then
    return nil, transport.cp.bad_reply("MCP response has no structuredContent", resp)
  end
  return sc
end

local function is_final(msg, id)
  return type(msg) == "table" and msg.id == id and (msg.result ~= nil or msg.error ~= nil)
end

--- A progress notification for on_chunk, or nil (§7.11's filter, in the core).
local function progress(msg, id)
  if type(msg) ~= "table" or msg.method ~= "notifications/progress" then return nil end
  local p = type(msg.params) == "table" and msg.params or {}
  local meta = type(p._meta) == "table" and p._meta or {}
  local seq = meta.sequence
  if seq == nil then seq = p.progress end
  if not core.cp.mcp_progress_ok(p.progressToken, id, meta.channel, seq, p.message) then return nil end
  return meta.channel, p.message, seq
end

-- A 401 or 404 from the MCP route means the cached runtime is not usable
-- any more (released by its idle TTL, token revoked): forget it, so the
-- next call makes a new one. This call still fails: no retries (§7.3).
local function forget_on(self, lk, err)
  if err and (err.status == 401 or err.status == 404) then self:_rt_forget(lk) end
end

--- A buffered body (§7.10): JSON, or SSE scanned for the final message.
local function buffered_reply(resp, id)
  if (resp.content_type or ""):lower():find("text/event-stream", 1, true) then
    local p = core.cp.sse_parser()
    local events = p:feed(resp.body) or {}
    for _, ev in ipairs(p:finish() or {}) do events[#events + 1] = ev end
    p:close()
    for _, ev in ipairs(events) do
      local msg = transport.decode_json(ev.data)
      if is_final(msg, id) then return final_result(msg, resp) end
    end
    return nil, transport.cp.bad_reply("MCP SSE ended without a final response", resp)
  end
  local msg = transport.decode_json(resp.body or "")
  if type(msg) ~= "table" then return nil, transport.cp.bad_reply("MCP response is not valid JSON", resp) end
  return final_result(msg, resp)
end

--- One tools/call. o: key, timeout (s), and for a stream on_chunk and
-- is_cancelled. Returns structuredContent, request_id or nil, Error. The
-- exchange goes through the one request path (transport.lua: hooks,
-- meter, options), buffered or streamed.
function M.call(self, fname, tool, args, o)
  local _, lk = self:_session(fname, o.key)
  local rt, err = self:ensure_runtime(o.key)
  if not rt then return nil, err end
  local id = self:_next_mcp_id()
  local path = "/v1/sandboxes/" .. rt.id .. "/mcp"
  local co = { raw = body_of(id, tool, args), token = rt.access_token, tool = tool,
    timeout = o.timeout, streaming = o.on_chunk ~= nil, text = true }
  local result, rerr, rid
  if o.on_chunk then
    result, rerr, rid = M.stream(self, fname, path, id, co, o)
  else
    local text, resp = transport.cp_call(self, fname, "POST", path, co)
    if text then
      result, rerr = buffered_reply(resp, id)
      rid = resp.request_id
    else
      rerr = resp
    end
  end
  forget_on(self, lk, rerr)
  if not result then return nil, rerr end
  return result, rid
end

local function cancelled(kind)
  return Error.new { kind = "cancelled", status = 499, message = CANCELLED, reason = kind }
end

-- Handles one SSE event's data; returns the final message when it is one.
local function on_event(data, id, on_chunk)
  local msg = transport.decode_json(data)
  if type(msg) ~= "table" then return nil end          -- §7.11: bad JSON is skipped
  if is_final(msg, id) then return msg end
  local channel, chunk, seq = progress(msg, id)
  if channel then observe.outside(on_chunk, channel, chunk, seq) end
  return nil
end

local function stream_body(self, t, ex, id, o)
  local final
  for _ = 1, compat.maxinteger do
    if o.is_cancelled and observe.outside(o.is_cancelled) then return nil, cancelled("is_cancelled") end
    local pieces, done_or_kind = t:step(100)
    if not pieces then return nil, cancelled(done_or_kind) end   -- Ctrl-C (interrupted)
    for _, data in ipairs(pieces) do
      final = final or on_event(data, id, o.on_chunk)
    end
    if done_or_kind then break end
  end
  local resp, rkind, rmsg = transport.result(t, ex)
  if not resp then
    if rkind == "cancelled" or rkind == "interrupted" then return nil, cancelled(rkind) end
    if rkind == "validation" or rkind == "credentials" then return nil, transport.cp.fail(self, rkind, rmsg) end
    return nil, transport.cp.bad_reply("MCP SSE read failed: " .. tostring(rmsg))
  end
  if resp.status >= 400 then return nil, transport.cp.http_error(resp), resp.request_id end
  if final then
    local r, e = final_result(final, resp)
    return r, e, resp.request_id
  end
  if resp.streamed == 0 then   -- not SSE after all: a JSON answer (buffered)
    local r, e = buffered_reply(resp, id)
    return r, e, resp.request_id
  end
  return nil, transport.cp.bad_reply("MCP SSE ended without a final response", resp), resp.request_id
end

--- The streamed call: the Transfer is stepped here, between steps
-- is_cancelled() is asked and every event handed on (on_chunk runs as the
-- caller's own code: wrap.outside). Returns result, err, request_id.
function M.stream(self, fname, path, id, co, o)
  co.mode, co.text = "sse", nil
  local t, ex = transport.cp_open(self, fname, "POST", path, co)
  if not t then return nil, ex end
  -- the exchange closed first: it reports a stream left early
  return compat.closing({ ex, t, n = 2 }, stream_body, self, t, ex, id, o)
end

return M
