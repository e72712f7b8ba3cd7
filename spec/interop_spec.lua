-- The interop proof: an independent client written in Python
-- with the standard library only (spec/interop/unsandbox_interop.py, which
-- shares no code with the Lua client) drives every execution-API route of
-- spec section 4 against a real unsandboxd, once in the default strict mode
-- (where the SDKs' variant forms must be refused) and once with --lenient
-- (where they must be accepted). The script prints TAP; a failure shows
-- its not-ok lines here.
-- One Lua: the subject is the server, driven by other clients' SDKs.
local server = require "spec.helpers.unsandboxd"

local ROOT = os.getenv("UNSANDBOX_ROOT") or "."
local SCRIPT = ROOT .. "/spec/interop/unsandbox_interop.py"

local function run_interop(srv, lenient)
  local pk2, sk2 = server.add_key(srv)
  local q = server.sh_quote
  local cmd = table.concat({ "timeout 600 python3", q(SCRIPT), "--url", q(srv.url), "--pk", q(srv.public_key),
    "--sk", q(srv.secret_key), "--pk2", q(pk2), "--sk2", q(sk2), "--data", q(srv.data),
    "--vectors", q(ROOT .. "/spec/fixtures/signing.json"),
    lenient and "--lenient" or "", "2>&1" }, " ")
  local p = assert(io.popen(cmd))
  local out = p:read("*a")
  local ok, _, code = p:close()
  return ok, code, out
end

local function failures(out)
  local bad = {}
  for line in out:gmatch("[^\n]+") do
    if line:match("^not ok") or line:match("Error") or line:match("Traceback") then bad[#bad + 1] = line end
  end
  return table.concat(bad, "\n")
end

describe("interop: an independent Python client #integration", function()
  it("has python3 with only the standard library", function()
    local p = assert(io.popen("python3 -c 'import urllib.request, hmac, hashlib, json; print(1)' 2>&1"))
    assert.equal("1\n", p:read("*a"))
    p:close()
  end)

  for _, lenient in ipairs { false, true } do
    it("drives every route against unsandboxd in " .. (lenient and "lenient" or "strict") .. " mode", function()
      local srv = server.start { args = lenient and { "--lenient" } or {} }
      local ok, code, out = run_interop(srv, lenient)
      srv.stop()
      local passed, failed = out:match("# (%d+) passed, (%d+) failed")
      assert.is_truthy(passed, "the script did not finish:\n" .. out:sub(-3000))
      assert.equal("0", failed, failures(out))
      assert.is_true(tonumber(passed) > 100)
      assert.is_true(ok, "exit code " .. tostring(code))
    end)
  end
end)
