-- #integration specs of the documentation: `make doc` builds the reference
-- from the sources (LDoc) and it leaves no public function out; the man
-- pages render without warnings and name every option the programs' own
-- usage texts list.
local fs = require "spec.helpers.fs"
local proc = require "spec.helpers.proc"

local ROOT = io.popen("cd " .. fs.quote(os.getenv("UNSANDBOX_ROOT") or ".") .. " && pwd"):read("*l")

describe("make doc #integration", function()
  local html

  setup(function()
    local out, code = proc.run("make -s --no-print-directory -C " .. proc.quote(ROOT) .. " doc")
    assert.equal(0, code, out)
    html = assert(fs.read(ROOT .. "/build/doc/modules/unsandbox.html"), "no reference written")
  end)

  local function documented(name)
    return html:find('<a name = "' .. name .. '"></a>', 1, true) ~= nil
  end

  it("documents every function of the module and every method of a Client", function()
    local unsandbox = require "unsandbox"
    local core = require "unsandbox.core"
    -- what loads on first use is documented too: load it all first
    local public = require "unsandbox.public"
    -- (the Control Plane's names are the unsandbox.cp module's)
    for name, from in pairs(public.LAZY_FIELDS) do
      if from[1] ~= "unsandbox.cp" then assert(unsandbox[name] ~= nil, name) end
    end
    for name in pairs(public.MODULE_OF) do assert(core.Client[name], name) end
    local missing = {}
    for name, v in pairs(unsandbox) do
      if type(v) == "function" and not documented(name) and not documented("Client:" .. name) then
        missing[#missing + 1] = name
      end
    end
    for name, v in pairs(core.Client) do
      if type(v) == "function" and not name:match("^_") and name ~= "request"
          and not documented("Client:" .. name) and not documented("Client." .. name) then
        missing[#missing + 1] = "Client:" .. name
      end
    end
    table.sort(missing)
    assert.same({}, missing)
  end)

  it("documents the options and result fields of a run and every error kind", function()
    for _, word in ipairs { "input_files", "network_mode", "return_artifacts", "on_poll",
        "exit_code", "execution_time_ms", "stdout_truncated", "request_id" } do
      assert.matches(word, html, 1, true)
    end
    local exits = assert(fs.read(ROOT .. "/build/doc/modules/unsandbox.cli.exits.html"))
    for name, code in pairs(require("unsandbox.cli.exits").codes) do
      assert.matches("<span class=\"parameter\">" .. name .. "</span>", exits, 1, true)
      assert.matches(tostring(code), exits, 1, true)
    end
    local errors = assert(fs.read(ROOT .. "/build/doc/modules/unsandbox.errors.html"))
    for _, kind in ipairs { "credentials", "http", "transport", "timeout", "protocol", "validation",
        "interrupted", "cancelled", "rpc" } do
      assert.matches('"' .. kind .. '"', errors, 1, true)
    end
  end)
end)

-- man and groff are the system's, not ours: under make sanitize they run
-- without the ASan runtime the specs' processes have preloaded (groff's
-- own allocations trip it)
local MAN = "env -u LD_PRELOAD man"

describe("man pages #unit", function()
  for _, page in ipairs { "un", "unlua", "unsandboxd" } do
    it(page .. ".1 renders without warnings", function()
      local out, code = proc.run(MAN .. " --warnings -l " .. proc.quote(ROOT .. "/docs/man/" .. page .. ".1")
        .. " >/dev/null")
      assert.equal(0, code, out)
      assert.equal("", out)
    end)
  end

  -- every option a program's usage text lists is in its page
  local function options_of(cmd)
    local out = proc.run("sh -c " .. proc.quote(cmd))
    local seen, list = {}, {}
    for opt in out:gmatch("%f[%w%-]%-%-?[%a][%w%-]*") do
      if not seen[opt] then seen[opt] = true; list[#list + 1] = opt end
    end
    return list
  end

  local function page_text(page)
    local out = proc.run("sh -c " .. proc.quote("MANWIDTH=200 " .. MAN .. " -l " .. proc.quote(ROOT .. "/docs/man/"
      .. page .. ".1") .. " | col -b"))
    return out
  end

  it("un.1 and unlua.1 name every option of the usage texts", function()
    local un = page_text("un")
    local help = proc.quote(ROOT .. "/bin/un") .. " --help 2>&1 | sed -n '/^options of a run:/,/^exit codes/p'"
    for _, opt in ipairs(options_of(help)) do
      assert.matches(opt, un, 1, true)
    end
    local unlua = page_text("unlua")
    for _, opt in ipairs(options_of(proc.quote(ROOT .. "/bin/unlua") .. " --bogus 2>&1")) do
      if opt ~= "--bogus" then assert.matches(opt, unlua, 1, true) end
    end
  end)
end)
