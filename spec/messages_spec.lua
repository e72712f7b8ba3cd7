-- The messages a new user meets first say what to do: a language named
-- the way people name it runs (python3, node, js, py, any case), an
-- unknown one names the nearest; a URL with /v1, the other service's port,
-- https:// at a plain-HTTP server, a port where nothing listens and no
-- credentials at all each get a hint; and `un` names the user's words,
-- never a function of the library.
local server = require "spec.helpers.unsandboxd"
local proc = require "spec.helpers.proc"
local fs = require "spec.helpers.fs"

describe("languages as people name them #integration", function()
  local srv, c
  setup(function()
    srv = server.start()
    c = require("unsandbox").client(srv.client_opts())
  end)
  teardown(function()
    c:close()
    srv.stop()
  end)

  it("runs python3, py and Python as python", function()
    for _, name in ipairs { "python3", "py", "Python", "PYTHON" } do
      local r, err = c:execute_code(name, "print(6 * 7)")
      assert.is_table(r, name .. ": " .. tostring(err))
      assert.equal("42\n", r.stdout, name)
      assert.equal("python", r.language, name)
    end
  end)

  it("sends node and js as javascript", function()
    local execute = require "unsandbox.exec.execute"
    for _, name in ipairs { "node", "js", "JS", "nodejs" } do
      local _, body = execute.args("execute_code", name, "1", {})
      assert.equal("javascript", body.language)
    end
  end)

  it("names the nearest languages the service runs for an unknown one", function()
    local r, err = c:execute_code("pyhton", "print(1)")
    assert.is_nil(r)
    assert.equal(400, err.status)
    assert.matches("language 'pyhton' is not one the service runs %(did you mean 'python'%?%)", err.hint)
    assert.matches("did you mean 'python'", tostring(err))
    local _, err2 = c:execute_async("bsh", "true")
    assert.matches("did you mean 'bash'", err2.hint)
  end)

  it("un takes the aliases and names the near match too", function()
    local env = { UNSANDBOX_URL = srv.url, UNSANDBOX_PUBLIC_KEY = srv.public_key,
                  UNSANDBOX_SECRET_KEY = srv.secret_key, HOME = "/nonexistent" }
    local out, code = proc.run("bin/un -s python3 'print(1)'", env)
    assert.equal(0, code, out)
    assert.equal("1\n", out)
    out, code = proc.run("bin/un -s pyhton 'print(1)'", env)
    assert.equal(69, code, out)
    assert.matches("did you mean 'python'", out)
  end)
end)

describe("hints for a URL or credentials that cannot work #integration", function()
  local srv
  setup(function() srv = server.start() end)
  teardown(function() srv.stop() end)

  local unsandbox = require "unsandbox"
  local keys = function(url)
    return { url = url, public_key = srv.public_key, secret_key = srv.secret_key }
  end

  it("the execution API's URL with /v1 appended", function()
    local _, err = unsandbox.execute_code("bash", "true", keys(srv.url .. "/v1"))
    assert.matches("the execution API's routes are at the root of its URL: use " .. srv.url:gsub("%p", "%%%0")
      .. " %(without /v1%)", err.hint)
  end)

  it("the Control Plane's port given as the execution API's", function()
    local _, err = unsandbox.execute_code("bash", "true", keys(srv.cp_url))
    assert.equal(404, err.status)
    assert.matches("has no POST /execute: is it the execution API %(UNSANDBOX_URL%)%?", err.hint)
  end)

  it("the execution API's port, or /v1, given as the Control Plane's", function()
    local m = unsandbox.manager { url = srv.url, token = srv.token }
    local _, err = m:list_workspaces()
    assert.equal(401, err.status)
    assert.matches("is " .. srv.url:gsub("%p", "%%%0") .. " the Control Plane", err.hint)
    m = unsandbox.manager { url = srv.cp_url .. "/v1", token = srv.token }
    _, err = m:list_workspaces()
    assert.matches("the client adds /v1 to every route; use " .. srv.cp_url:gsub("%p", "%%%0"), err.hint)
  end)

  it("https:// at a plain-HTTP server, and a port where nothing listens", function()
    local _, err = unsandbox.execute_code("bash", "true", keys(srv.url:gsub("^http:", "https:")))
    assert.equal("transport", err.kind)
    assert.matches("if that server speaks plain HTTP %(a local unsandboxd does%), use an http:// URL", err.message)
    _, err = unsandbox.health { url = "http://127.0.0.1:1" }
    assert.matches("nothing accepted the connection to 127%.0%.0%.1 .*is the server running", err.message)
  end)

  it("no credentials under stock lua5.4: how to run with none", function()
    local home = fs.tmpdir("unsb-nocreds")
    finally(function() fs.rm_rf(home) end)
    local e = { HOME = home, UNSANDBOX_PUBLIC_KEY = false, UNSANDBOX_SECRET_KEY = false, UNSANDBOX_ACCOUNT = false }
    for k, v in pairs(proc.LUA_ENV) do e[k] = v end
    local pwd = os.getenv("PWD")
    local script = "package.path = " .. string.format("%q", pwd .. "/lua/?.lua;" .. pwd .. "/lua/?/init.lua;")
      .. " .. package.path; package.cpath = " .. string.format("%q", pwd .. "/lua/?.so;")
      .. " .. package.cpath; print(select(2, require('unsandbox').execute_code('bash', 'true')))"
    local out, code = proc.run("sh -c " .. proc.quote("cd " .. proc.quote(home) .. " && lua5.4 -e "
      .. proc.quote(script)), e)
    assert.equal(0, code, out)
    assert.matches("credentials: no credentials found", out)
    assert.matches("`unlua %-%-local script%.lua`", out)
  end)
end)
