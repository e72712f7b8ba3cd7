-- #integration specs of un's Control Plane commands (un sandbox, un
-- object, un admin), run as processes against a real unsandboxd: output,
-- exit codes (the command's own for sandbox run, 2 usage, 3 auth, 4 API
-- error, 5 timeout), live streaming.
-- One Lua: un runs under unlua (5.4); the spec runs it as a program.
local server = require "spec.helpers.unsandboxd"
local proc = require "spec.helpers.proc"
local cp = require "spec.helpers.cp"

describe("un Control Plane commands #integration", function()
  local srv, env, dir

  local function un(args, extra)
    local e = {}
    for k, v in pairs(env) do e[k] = v end
    for k, v in pairs(extra or {}) do e[k] = v end
    local errfile = dir .. "/stderr"
    local out, code = proc.run("bin/un " .. args, e, errfile)
    local f = io.open(errfile)
    local err = f and f:read("*a") or ""
    if f then f:close() end
    return out, err, code
  end


  setup(function()
    srv = server.start()
    dir = server.tmpdir("unsb-uncp")
    env = { SANDBOX_CONTROL_PLANE_URL = srv.cp_url, SANDBOX_TOKEN = srv.token, HOME = dir,
            SANDBOX_SESSION_ID = false }
  end)
  teardown(function()
    srv.stop()
    server.rm_rf(dir)
  end)

  it("exits 64 on usage errors and 77 without a token, sending nothing", function()
    local _, err, code = un("sandbox frobnicate")
    assert.are.equal(64, code)
    assert.matches("unknown sandbox action 'frobnicate'", err)
    _, err, code = un("sandbox run box")
    assert.are.equal(64, code)
    assert.matches("un sandbox run: CMD expected", err)
    _, err, code = un("object ls upload:u1")
    assert.are.equal(64, code)
    assert.matches("give %-%-subject HEX .* or %-%-owner TENANT/SUBJECT", err)
    _, err, code = un("object ls bogus")
    assert.are.equal(64, code, err)
    _, err, code = un("sandbox list", { SANDBOX_TOKEN = false })
    assert.are.equal(77, code)
    assert.matches("no Control Plane token", err)
    _, err, code = un("sandbox list", { SANDBOX_TOKEN = "sk_wrong" })
    assert.are.equal(77, code)
    assert.matches("401", err)
    -- a path the library refuses is named as the user wrote it, with no
    -- function of the library in the message
    _, err, code = un("sandbox read box /etc/passwd")
    assert.are.equal(64, code)
    assert.matches("^un sandbox read: path '/etc/passwd' is outside /workspace", err)
    assert.is_nil(err:find("download_file", 1, true))
    assert.is_nil(err:find("bad argument", 1, true))
  end)

  it("creates, lists and stops a sandbox; stopping one that is not running exits 69", function()
    local out, err, code = un("sandbox create cli-box")
    assert.are.equal(0, code, err)
    local id = out:match("^cli%-box\t(sb%-%x+)\n$")
    assert.is_string(id, out)
    out, err, code = un("sandbox list")
    assert.are.equal(0, code, err)
    assert.matches(id .. "\t", out, 1, true)
    out, err, code = un("sandbox stop cli-box")
    assert.are.equal(0, code, err)
    assert.are.equal("stopped sandbox cli-box (its files stay)\n", out)
    local _
    _, err, code = un("sandbox stop cli-box")
    assert.are.equal(69, code)
    assert.matches("sandbox 'cli%-box' is not running", err)
  end)

  it("admin tenants, keys and audit", function()
    local _
    local out, err, code = un("admin tenants create cli-tenant")
    assert.are.equal(0, code, err)
    assert.are.equal("created tenant cli-tenant\n", out)
    out, _, code = un("admin tenants")
    assert.are.equal(0, code)
    assert.matches("cli%-tenant\tactive", out)
    out, err, code = un("admin keys issue cli-tenant --act-as-subjects --label ci --json")
    assert.are.equal(0, code, err)
    local key = require("cjson").decode(out)
    assert.matches("^sk_", key.api_key)
    out = un("admin keys list cli-tenant")
    assert.matches(key.id .. "\tcli%-tenant\t", out)
    assert.matches("act_as_subjects", out)
    assert.are.equal("revoked key " .. key.id .. "\n", (un("admin keys revoke " .. key.id)))
    out, _, code = un("admin audit --limit 50")
    assert.are.equal(0, code)
    assert.matches("key.revoke", out, 1, true)
    _, err, code = un("admin tenants", { SANDBOX_TOKEN = cp.tenant_key(srv, "cli-plain") })
    assert.are.equal(77, code, err)
  end)

  it("sandbox run streams live and exits with the command's code", function()
    local out, err, code = un("sandbox run cli-run -- " .. proc.quote("echo out; echo err >&2; exit 7"))
    assert.are.equal(7, code)
    assert.are.equal("out\n", out)
    assert.are.equal("err\n", err)
    local _
    out, _, code = un("sandbox run cli-run -- printf %s " .. proc.quote("a; echo unsafe"))
    assert.are.equal(0, code)
    assert.are.equal("a; echo unsafe", out)
    _, _, code = un("sandbox run cli-run --timeout 1 -- sleep 5")
    assert.are.equal(75, code)
    -- --json: the output collected into one document
    out, _, code = un("--json sandbox run cli-run -- " .. proc.quote("echo hi; exit 3"))
    assert.are.equal(3, code)
    local doc = require("cjson").decode(out)
    assert.are.equal("hi\n", doc.stdout)
    assert.are.equal(3, doc.exit_code)
    -- live: the first line is on the pipe while the command still waits
    -- for a file that a second run makes only once that line was read
    local p = io.popen(proc.env_prefix(env) .. "bin/un sandbox run cli-run -- " ..
      proc.quote("rm -f go; echo first; until [ -f go ]; do sleep 0.1; done; echo second") .. " 2>/dev/null")
    local first = p:read("*l")
    local _, _, made = un("sandbox run cli-run -- touch go")
    local rest = p:read("*a")
    p:close()
    assert.are.equal("first", first)
    assert.are.equal(0, made)
    assert.are.equal("second\n", rest)
  end)

  it("-v prints one line per exchange, the MCP call and the stream among them", function()
    local out, err, code = un("-v sandbox run cli-verbose -- echo seen")
    assert.are.equal(0, code, err)
    assert.are.equal("seen\n", out)
    assert.matches("unsandbox: method=POST path=/v1/sandboxes/sb%-%x+/mcp status=200 ", err)
    assert.is_nil(err:find(srv.token, 1, true))
    local _
    _, err, code = un("sandbox list -v")
    assert.are.equal(0, code, err)
    assert.matches("unsandbox: method=GET path=/v1/sandboxes status=200 ", err)
  end)

  it("sandbox write and read any bytes", function()
    local data = dir .. "/in.bin"
    local f = assert(io.open(data, "wb"))
    f:write("\0\1binary\255")
    f:close()
    local out, err, code = un("sandbox write cli-files data/uploads/in.bin " .. proc.quote(data))
    assert.are.equal(0, code, err)
    assert.matches("wrote data/uploads/in.bin in sandbox cli%-files %(9 bytes%)", out)
    assert.are.equal("\0\1binary\255", (un("sandbox read cli-files data/uploads/in.bin")))
    out, err, code = un("sandbox read cli-files data/uploads/missing.bin")
    assert.are.equal(69, code)
    assert.are.equal("", out)
    assert.matches("^un: ", err)
  end)

  it("sandbox checkpoint, checkpoints and restore", function()
    local data = dir .. "/keep.txt"
    local f = assert(io.open(data, "wb"))
    f:write("keep me\n")
    f:close()
    assert.are.equal(0, select(3, un("sandbox write cli-ckpt keep.txt " .. proc.quote(data))))
    local out, err, code = un("sandbox checkpoint cli-ckpt")
    assert.are.equal(0, code, err)
    local cpid = out:match("^(cp%-[%w-]+)\t")
    assert.is_string(cpid, out)
    assert.are.equal(0, select(3, un("sandbox run cli-ckpt -- rm keep.txt")))
    out, err, code = un("sandbox restore cli-ckpt " .. cpid)
    assert.are.equal(0, code, err)
    assert.are.equal("restored sandbox cli-ckpt to checkpoint " .. cpid .. "\n", out)
    assert.are.equal("keep me\n", (un("sandbox read cli-ckpt keep.txt")))
    assert.matches(cpid, (un("sandbox checkpoints cli-ckpt")), 1, true)
  end)

  it("object put, get, ls and rm for a subject", function()
    local key = cp.tenant_key(srv, "cli-objects", { act_as_subjects = true })
    local e = { SANDBOX_TOKEN = key }
    local subj = "--subject " .. string.rep("c", 32) .. " "
    local file = dir .. "/obj.txt"
    local f = assert(io.open(file, "wb"))
    f:write("object body\n")
    f:close()
    local _, err, code = un(subj .. "object put upload:u-cli/source/a.txt " .. proc.quote(file), e)
    assert.are.equal(0, code, err)
    assert.are.equal("object body\n", (un(subj .. "object get upload:u-cli/source/a.txt", e)))
    assert.matches("source/a.txt", (un(subj .. "object ls upload:u-cli", e)))
    assert.are.equal(0, select(3, un(subj .. "object rm upload:u-cli/source/a.txt --purge", e)))
    _, _, code = un(subj .. "object get upload:u-cli/source/a.txt", e)
    assert.are.equal(69, code)
  end)
end)
