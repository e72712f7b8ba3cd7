-- #integration specs of get_languages()'s cache file against a real
-- unsandboxd (the HTTP path is the real one: fetches are told apart from
-- cache hits by the source the call reports, and failures are the
-- server's fault modes). HOME is faked per spec, the module reloaded.
local unsandbox = require "unsandbox"
local server = require "spec.helpers.unsandboxd"
local hostile = require "spec.helpers.hostile"
local fs = require "spec.helpers.fs"

local real_getenv = os.getenv

describe("get_languages() cache #integration", function()
  local srv, c, home, langs

  setup(function()
    srv = server.start { args = { "--enable-faults" } }
    c = unsandbox.client(srv.client_opts())
  end)
  teardown(function()
    c:close()
    srv.stop()
  end)
  before_each(function()
    home = fs.tmpdir("unsb-langs")
    os.getenv = function(k)
      if k == "HOME" then return home end
      return real_getenv(k)
    end
    package.loaded["unsandbox.exec.languages"] = nil
    langs = require "unsandbox.exec.languages"
  end)
  after_each(function()
    os.getenv = real_getenv
    c:call("POST", "/_faults", { mode = "off" })
    fs.rm_rf(home)
  end)

  -- the server is on loopback: its list has the local cache file
  local function cache() return home .. "/.unsandbox/languages-local.json" end

  local function mode(path)
    local p = io.popen("stat -c %a " .. fs.quote(path))
    local m = p:read("*l")
    p:close()
    return m
  end

  it("fetches, writes the cache 0600 in a 0700 directory, then serves from it", function()
    local list, from = langs.get(c, c:url(), {})
    assert.are.equal("service", from)
    assert.is_true(#list > 5)
    assert.are.equal("700", mode(home .. "/.unsandbox"))
    assert.are.equal("600", mode(cache()))
    local again, from2 = langs.get(c, c:url(), {})
    assert.are.equal("cache", from2)
    assert.are.same(list, again)
    local _, from3 = langs.get(c, c:url(), { refresh = true })
    assert.are.equal("service", from3)
  end)

  it("refetches when the file is stale by mtime", function()
    langs.get(c, c:url(), {})
    os.execute("touch -d '2 hours ago' " .. fs.quote(cache()))
    local _, from = langs.get(c, c:url(), {})
    assert.are.equal("service", from)
  end)

  it("ignores a corrupt cache file and one written for another URL", function()
    os.execute("mkdir -p " .. fs.quote(home .. "/.unsandbox"))
    fs.write(cache(), "{not json")
    local _, from = langs.get(c, c:url(), {})
    assert.are.equal("service", from)
    fs.write(cache(),
      '{"languages":["cobol"],"url":"http://127.0.0.1:9","timestamp":0}')
    local list
    list, from = langs.get(c, c:url(), {})
    assert.are.equal("service", from)
    assert.are_not.same({ "cobol" }, list)
  end)

  it("never caches a failed or an empty fetch", function()
    c:call("POST", "/_faults", { mode = "status", status = 500, count = 1, path = "/languages" })
    local list, err = langs.get(c, c:url(), {})
    assert.is_nil(list)
    assert.are.equal(500, err.status)
    c:call("POST", "/_faults", { mode = "malformed", count = 1, path = "/languages" })
    list, err = langs.get(c, c:url(), {})
    assert.is_nil(list)
    assert.are.equal("protocol", err.kind)
    local h = hostile.start([[return function() return reply(200, '{"languages":[]}') end]])
    local hc = unsandbox.client { url = h.url, public_key = "pk", secret_key = "sk" }
    list, err = langs.get(hc, hc:url(), {})
    hc:close()
    h.stop()
    assert.is_nil(list)
    assert.are.equal("protocol", err.kind)
    assert.is_nil(io.open(cache()))
  end)

  it("a local service never overwrites the real service's cache file", function()
    local real = '{"languages":["cobol"],"url":"https://api.unsandbox.com","timestamp":1}'
    os.execute("mkdir -p " .. fs.quote(home .. "/.unsandbox"))
    fs.write(home .. "/.unsandbox/languages.json", real)
    local _, from = langs.get(c, c:url(), {})
    assert.are.equal("service", from)
    assert.are.equal(real, fs.read(home .. "/.unsandbox/languages.json"))
    assert.is_not_nil(io.open(cache()))
  end)

  it("tells loopback services from others by the URL's host", function()
    for _, url in ipairs { "http://127.0.0.1:8080", "http://127.5.6.7", "http://localhost:1/x",
        "http://LOCALHOST", "http://[::1]:9000" } do
      assert.matches("languages%-local%.json$", langs.cache_path(url), url)
    end
    for _, url in ipairs { "https://api.unsandbox.com", "http://127.0.0.1.example.com",
        "http://[::2]:1", "http://10.0.0.1", "" } do
      assert.matches("/languages%.json$", langs.cache_path(url), url)
    end
  end)

  it("works with no cache when HOME is unusable or unset", function()
    fs.write(home .. "/file", "")
    local real_home = home
    home = real_home .. "/file"                  -- root ignores modes: a file, not a directory
    local list, from = langs.get(c, c:url(), {})
    assert.are.equal("service", from)
    assert.is_true(#list > 5)
    home = nil
    list, from = langs.get(c, c:url(), {})
    assert.is_true(#list > 5)
    assert.are.equal("service", from)
    home = real_home
  end)
end)
