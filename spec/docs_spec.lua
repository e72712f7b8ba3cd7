-- #integration specs of the documentation: `make doc` builds the reference
-- from the sources (LDoc) without a warning, one page for the module and
-- one per class, with no internal section, and it leaves no public
-- function or method of either API out (the Client, the Manager, the
-- Sandbox and what it makes, tasks, errors) and no parameter untyped; the
-- man pages render without warnings and name every option the programs'
-- own usage texts list.
-- One Lua: the subject is the reference LDoc generates from the sources.
local fs = require "spec.helpers.fs"
local proc = require "spec.helpers.proc"

local ROOT = io.popen("cd " .. fs.quote(os.getenv("UNSANDBOX_ROOT") or ".") .. " && pwd"):read("*l")

describe("make doc #integration", function()
  -- the pages of the reference: the module's, and one per class
  local PAGES = { "modules/unsandbox", "modules/unsandbox.cli.exits", "classes/Client",
    "classes/Manager", "classes/Sandbox", "classes/Shell", "classes/Process", "classes/Context",
    "classes/Error" }
  local html, pages, stderr = nil, {}, nil

  setup(function()
    local errfile = os.tmpname()
    local out, code = proc.run("make -s --no-print-directory -C " .. proc.quote(ROOT) .. " doc", nil, errfile)
    stderr = fs.read(errfile) or ""
    os.remove(errfile)
    assert.equal(0, code, out .. stderr)
    local all = {}
    for _, page in ipairs(PAGES) do
      pages[page] = assert(fs.read(ROOT .. "/build/doc/" .. page .. ".html"), "no page " .. page)
      all[#all + 1] = pages[page]
    end
    html = table.concat(all, "\n")
  end)

  local function documented(name)
    return html:find('<a name = "' .. name .. '"></a>', 1, true) ~= nil
  end

  -- the public functions of a method table: not plumbing (_x), not
  -- metamethods (__x), less what skip names
  local function methods_of(t, skip)
    local names = {}
    for name, v in pairs(t) do
      if type(v) == "function" and not name:match("^_") and not (skip or {})[name] then
        names[#names + 1] = name
      end
    end
    table.sort(names)
    return names
  end

  -- the names of list (prefixed) that no page documents
  local function undocumented(prefix, list, missing)
    for _, name in ipairs(list) do
      if not documented(prefix .. name) then missing[#missing + 1] = prefix .. name end
    end
    return missing
  end

  it("writes the module's page and one per class, with no LDoc warning", function()
    assert.equal("", stderr)
    local listed, seen = {}, {}
    for dir, name in fs.read(ROOT .. "/build/doc/index.html"):gmatch('href="(%a+)/([^"]+)%.html"') do
      if not seen[dir .. "/" .. name] then listed[#listed + 1] = dir .. "/" .. name end
      seen[dir .. "/" .. name] = true
    end
    table.sort(listed)
    local want = {}
    for i, p in ipairs(PAGES) do want[i] = p end
    table.sort(want)
    assert.same(want, listed)
  end)

  it("has no internal sections", function()
    for page, text in pairs(pages) do
      for section in text:gmatch('<h2 class="section%-header[^"]*"><a name="[^"]*"></a>([^<]*)</h2>') do
        -- what @submodule made of a file: "exec.jobs Functions"
        assert.is_nil(section:match("^[%w_]+%.[%w_.]+ Functions"), page .. ": " .. section)
        assert.is_nil(section:match("^Class Client") or section:match("^Class Manager"), page .. ": " .. section)
      end
      assert.is_nil(text:find("lua/unsandbox/cp.lua", 1, true), page)
    end
  end)

  it("documents every function of the module and every method of a Client", function()
    local unsandbox = require "unsandbox"
    local core = require "unsandbox.core"
    -- what loads on first use is documented too: load it all first
    local public = require "unsandbox.public"
    for name in pairs(public.LAZY_FIELDS) do assert(unsandbox[name] ~= nil, name) end
    for name in pairs(public.MODULE_OF) do assert(core.Client[name], name) end
    local missing = {}
    for name, v in pairs(unsandbox) do
      if type(v) == "function" and not documented(name) and not documented("Client:" .. name)
          and not documented("unsandbox." .. name) then
        missing[#missing + 1] = name
      end
    end
    undocumented("Client:", methods_of(core.Client, { request = true }), missing)
    undocumented("Task:", methods_of(unsandbox.Task), missing)
    undocumented("Terminal:", methods_of(core.Terminal), missing)
    local binding = unsandbox.trace(unsandbox.new_trace_id())
    binding:close()
    undocumented("Binding:", methods_of(getmetatable(binding).__index), missing)
    undocumented("Error.", methods_of(unsandbox.Error), missing)
    table.sort(missing)
    assert.same({}, missing)
  end)

  it("documents every method of a Manager, a Sandbox and what a Sandbox makes", function()
    local unsandbox = require "unsandbox"
    local core = require "unsandbox.core"
    local agent = require "unsandbox.agent.sandbox"
    local missing = {}
    undocumented("Manager:", methods_of(core.cp.Manager), missing)
    undocumented("Sandbox:", methods_of(core.cp.Sandbox), missing)
    undocumented("Sandbox.", methods_of(unsandbox.Sandbox), missing)
    -- (Shell.new is what sb:shell calls)
    undocumented("Shell:", methods_of(require "unsandbox.cp.shell", { new = true }), missing)
    undocumented("Process:", methods_of(agent.classes[1]), missing)
    undocumented("Context:", methods_of(agent.classes[2]), missing)
    for _, name in ipairs { "unsandbox.manager", "ObjectReader:read", "ObjectReader:close" } do
      if not documented(name) then missing[#missing + 1] = name end
    end
    table.sort(missing)
    assert.same({}, missing)
  end)

  it("shows a comment's <close> and <placeholders> as text, not as tags", function()
    assert.matches("local x &lt;close&gt; = resource", pages["modules/unsandbox"], 1, true)
    assert.matches("00-&lt;trace&gt;-&lt;new span&gt;-&lt;flags&gt;", pages["modules/unsandbox"], 1, true)
    for page, text in pairs(pages) do
      assert.is_nil(text:find("<close>", 1, true), page)
    end
  end)

  it("gives every parameter and field a type", function()
    local untyped = {}
    for page, text in pairs(pages) do
      for name, after in text:gmatch('<li><span class="parameter">([^<]*)</span>%s*(<?[%a]*)') do
        -- a table whose fields are listed below it has them typed instead
        if after ~= "<span" and after ~= "<ul" and name ~= "..." then
          untyped[#untyped + 1] = page .. ": " .. name
        end
      end
    end
    assert.same({}, untyped)
  end)

  it("documents the options and result fields of a run and every error kind", function()
    for _, word in ipairs { "input_files", "network_mode", "return_artifacts", "on_poll",
        "exit_code", "execution_time_ms", "stdout_truncated", "request_id" } do
      assert.matches(word, pages["classes/Client"], 1, true)
    end
    local exits = pages["modules/unsandbox.cli.exits"]
    for name, code in pairs(require("unsandbox.cli.exits").codes) do
      assert.matches("<span class=\"parameter\">" .. name .. "</span>", exits, 1, true)
      assert.matches(tostring(code), exits, 1, true)
    end
    local errors = pages["classes/Error"]
    for _, kind in ipairs { "credentials", "http", "transport", "timeout", "protocol", "validation",
        "interrupted", "cancelled", "rpc", "not_found", "sandbox", "integrity" } do
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
