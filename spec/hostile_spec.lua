-- #integration specs of the client against a hostile server:
-- every value a server sends is shape-checked before use, so wrong
-- shapes, ids that would steer a request elsewhere, HTTP/0.9 and absurd
-- Retry-After values give `nil, err` of kind protocol (or a clamped
-- value), never a Lua error, a wrong kind or a request to another route.
local hostile = require "spec.helpers.hostile"
local unsandbox = require "unsandbox"
local lua = require "spec.helpers.lua"

-- A server that answers every request with the same JSON document.
local function always(status, body, headers)
  return hostile.start(string.format("return function() return reply(%d, %q, %s) end",
    status, body, headers or "nil"))
end

local function client(h, extra)
  local o = { url = h.url, public_key = "pk", secret_key = "sk", timeout = 10 }
  for k, v in pairs(extra or {}) do o[k] = v end
  return unsandbox.client(o)
end

-- Runs fn(client) against a server answering `body`; returns fn's results
-- and the requests the server saw.
local function against(body, fn, status)
  local h = always(status or 200, body)
  local c = client(h)
  local res = lua.pack(pcall(fn, c))
  c:close()
  local seen = h.requests()
  h.stop()
  assert(res[1], "raised: " .. tostring(res[2]))
  return res[2], res[3], seen
end

local function protocol(v, err)
  assert.is_nil(v)
  assert.are.equal("unsandbox.Error", getmetatable(err).__name)
  assert.are.equal("protocol", err.kind, tostring(err))
end

describe("the client against a hostile server #integration", function()
  it("refuses server job ids that are not ids, and never follows one", function()
    for _, id in ipairs { '"../../keys/validate"', '{"a":1}', '"job\\r\\nX-Evil: 1"', '""', "7",
                          '"' .. string.rep("a", 129) .. '"' } do
      local body = '{"job_id":' .. id .. ',"status":"pending"}'
      local v, err, seen = against(body, function(c) return c:execute_code("bash", "true") end)
      protocol(v, err)
      assert.matches("job_id", err.message)
      -- a client of 10 s cannot wait for a synchronous answer (ttl + 30 s):
      -- execute_code submits a job
      assert.are.same({ "POST /execute/async" }, seen)
      v, err = against(body, function(c) return c:execute_async("bash", "true") end)
      protocol(v, err)
    end
  end)

  it("gives a protocol error for results of the wrong shape", function()
    for _, body in ipairs {
      '{"status":"completed","stdout":{"x":1}}',
      '{"status":["completed"]}',
      '{"status":"completed","exit_code":"0"}',
      '{"status":"completed","stdout_truncated":"yes"}',
      '{"status":"completed","artifacts":"all"}',
      '{"status":"completed","artifacts":{"a":1}}',
      '{"status":"completed","artifacts":[5]}',
      '{"status":"completed","artifacts":[{"filename":"../../etc/passwd","content_base64":"eA=="}]}',
      '{"status":"completed","artifacts":[{"filename":"a","content_base64":"%%%"}]}',
    } do
      local v, err = against(body, function(c)
        return c:execute_code("bash", "true", { return_artifacts = true })
      end)
      protocol(v, err)
    end
  end)

  it("stops polling a job whose status is not a string", function()
    local h = hostile.start([[
      return function(method, path)
        if path == "/execute" then return reply(200, '{"job_id":"job_1","status":"pending"}') end
        return reply(200, '{"job_id":"job_1","status":{"nested":true}}')
      end]])
    local c = client(h, { timeout = 120 })   -- room for a synchronous answer: POST /execute
    local ok, v, err = pcall(c.execute_code, c, "bash", "true", { timeout = 100 })
    c:close()
    local seen = h.requests()
    h.stop()
    assert.is_true(ok, tostring(v))
    protocol(v, err)
    assert.are.same({ "POST /execute", "GET /jobs/job_1" }, seen)
  end)

  it("returns lists only when the server sent lists", function()
    local cases = {
      { '{"jobs":"x"}', "list_jobs" }, { '{"jobs":5}', "list_jobs" }, { '{"jobs":{"a":1}}', "list_jobs" },
      { '{"jobs":[1,2]}', "list_jobs" }, { '{"sessions":"x"}', "list_sessions" },
      { '{"services":7}', "list_services" }, { '{"snapshots":[true]}', "list_snapshots" },
    }
    for _, case in ipairs(cases) do
      local v, err = against(case[1], function(c) return c[case[2]](c) end)
      protocol(v, err)
    end
    -- the items as sent (a list also carries the call's timing)
    local list = against('[{"job_id":"job_1"}]', function(c) return c:list_jobs() end)
    assert.are.same({ { job_id = "job_1" } }, { lua.unpack(list) })
    assert.equal(1, list.timing.exchanges)
    list = against('{"count":0}', function(c) return c:list_sessions() end)
    assert.are.same({}, { lua.unpack(list) })
  end)

  it("checks the ids of created resources and the type of logs", function()
    protocol(against('{"session_id":"../x"}', function(c) return c:create_session() end))
    protocol(against('{"id":{"a":1}}', function(c) return c:create_service { name = "s", bootstrap = "x" } end))
    protocol(against('{"snapshot_id":"a b"}', function(c) return c:session_snapshot("s1") end))
    protocol(against('{"log":42}', function(c) return c:service_logs("s1") end))
    local doc = against('{"session_id":"unsb-session-1"}', function(c) return c:create_session() end)
    assert.are.equal("unsb-session-1", doc.id)
  end)

  it("reports an HTTP/0.9 reply as a protocol error, not a bad URL", function()
    local h = hostile.start([[return function() return "hello, this is not HTTP\r\n" end]])
    local c = client(h)
    local v, err = c:validate_keys()
    c:close()
    h.stop()
    protocol(v, err)
    assert.matches("malformed response", err.message)
  end)

  it("clamps Retry-After from headers and bodies to a day", function()
    for _, ra in ipairs { "9223372036854775807", "99999999999999999999999", "Fri, 31 Dec 9999 23:59:59 GMT" } do
      local h = always(503, '{"error":"busy"}', string.format("{ [\"Retry-After\"] = %q }", ra))
      local c = client(h)
      local v, err = c:validate_keys()
      c:close()
      h.stop()
      assert.is_nil(v)
      assert.are.equal("http", err.kind)
      assert.are.equal(86400, err.retry_after, ra)
    end
    local _, err = against('{"error":"busy","retry_after":1e300}', function(c) return c:validate_keys() end, 429)
    assert.are.equal(86400, err.retry_after)
    _, err = against('{"error":"busy","retry_after":"soon"}', function(c) return c:validate_keys() end, 429)
    assert.is_nil(err.retry_after)
    _, err = against('{"error":"busy","retry_after":-5}', function(c) return c:validate_keys() end, 429)
    assert.are.equal(0, err.retry_after)
  end)

  it("drops a sudo challenge id that could not be sent back", function()
    local _, err = against('{"error":"sudo_required","challenge_id":"chal\\r\\nX-Evil: 1"}',
      function(c) return c:delete_session("s1") end, 428)
    assert.are.equal(428, err.status)
    assert.is_nil(err.challenge_id)
  end)

  it("execute_many submits every program before it polls any (a recording server)", function()
    local h = hostile.start([[
      local n = 0
      return function(method, path)
        if path == "/execute/async" then
          n = n + 1
          return reply(202, '{"job_id":"job_' .. n .. '","status":"pending"}')
        end
        local id = path:match("^/jobs/(job_%d)$")
        return reply(200, '{"job_id":"' .. id .. '","status":"completed","stdout":"' .. id .. '"}')
      end]])
    local c = client(h)
    local results, errors = c:execute_many({ { "bash", "a" }, { "bash", "b" }, { "bash", "c" } },
      { timeout = 20 })
    c:close()
    local seen = h.requests()
    h.stop()
    assert.same({}, errors)
    assert.are.same({ "job_1", "job_2", "job_3" }, { results[1].stdout, results[2].stdout, results[3].stdout })
    assert.are.same({ "POST /execute/async", "POST /execute/async", "POST /execute/async" },
      { seen[1], seen[2], seen[3] })
    assert.are.equal(6, #seen)
  end)

  it("health() keeps to the client's timeout when it is under 10 s", function()
    local h = hostile.start([[return function() return false end]])   -- never answers
    local c = client(h, { timeout = 2 })
    local ok, err = c:health()
    c:close()
    h.stop()
    assert.is_nil(ok)
    assert.are.equal("timeout", err.kind)
    assert.matches("after 2000 ms", err.message)
  end)
end)
