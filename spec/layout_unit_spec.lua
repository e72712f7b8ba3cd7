-- #unit specs of how the C tree is layered, read from its #include lines:
-- folders by concern that include one another downwards only (a cycle
-- between two folders means neither can be read or changed alone), and
-- the Lua-free core. main.c and cli.c of unsandboxd put the server
-- together, so they may include every folder; the C tests are outside the
-- layers. No build, no server.
-- One Lua: the subject is the C sources' includes.
local ROOT = os.getenv("UNSANDBOX_ROOT") or "."

-- Every C file of csrc/ (paths relative to csrc/) with the project
-- headers it includes.
local function sources()
  local p = assert(io.popen("cd " .. ROOT .. "/csrc && find . -name '*.[ch]' | sort"))
  local files = {}
  for path in p:lines() do
    path = path:gsub("^%./", "")
    local f = assert(io.open(ROOT .. "/csrc/" .. path))
    local includes = {}
    for line in f:lines() do
      local inc = line:match('^%s*#%s*include%s+"([^"]+)"')
      if inc then includes[#includes + 1] = inc end
    end
    f:close()
    files[#files + 1] = { path = path, includes = includes }
  end
  p:close()
  return files
end

-- The layer a file belongs to: its folder, except the server's assembly.
local function layer(path)
  if path == "server/main.c" or path:match("^server/cli%.[ch]$") then return "server:main" end
  return path:match("^(.*)/[^/]+$") or "."
end

-- Folder -> set of folders it includes (itself and the tests left out).
local function graph(files)
  local g = {}
  for _, f in ipairs(files) do
    local from = layer(f.path)
    if from ~= "tests" then
      g[from] = g[from] or {}
      for _, inc in ipairs(f.includes) do
        local to = layer(inc)
        if to ~= from then g[from][to] = true end
      end
    end
  end
  return g
end

-- One cycle of g as a list of folders, or nil (depth-first search).
local function find_cycle(g)
  local state, stack = {}, {}
  local function visit(n)
    state[n] = "open"
    stack[#stack + 1] = n
    local nexts = {}
    for m in pairs(g[n] or {}) do nexts[#nexts + 1] = m end
    table.sort(nexts)
    for _, m in ipairs(nexts) do
      if state[m] == "open" then
        local cycle, on = {}, false
        for _, s in ipairs(stack) do
          if s == m then on = true end
          if on then cycle[#cycle + 1] = s end
        end
        cycle[#cycle + 1] = m
        return cycle
      elseif not state[m] then
        local c = visit(m)
        if c then return c end
      end
    end
    stack[#stack] = nil
    state[n] = "done"
  end
  local nodes = {}
  for n in pairs(g) do nodes[#nodes + 1] = n end
  table.sort(nodes)
  for _, n in ipairs(nodes) do
    if not state[n] then
      local c = visit(n)
      if c then return c end
    end
  end
end

describe("the C tree's layers #unit", function()
  local files = sources()

  it("are read from the whole tree", function()
    assert.is_true(#files > 100, "found only " .. #files .. " C files")
    local g = graph(files)
    assert.is_true(g["server/exec"]["server/http"], "exec includes http")
  end)

  it("include one another without a cycle between folders", function()
    local cycle = find_cycle(graph(files))
    assert.is_nil(cycle, cycle and ("folders include each other: " .. table.concat(cycle, " -> ")))
  end)

  it("find a cycle when there is one", function()
    local cycle = find_cycle({ a = { b = true }, b = { c = true }, c = { a = true }, d = { a = true } })
    assert.same({ "a", "b", "c", "a" }, cycle)
    assert.is_nil(find_cycle({ a = { b = true }, b = { c = true }, d = { a = true, c = true } }))
  end)

  it("keep the transport, the runner, the runtimes and the store below the two APIs", function()
    local g = graph(files)
    for _, low in ipairs({ "server/http", "server/runtime", "server/sandbox", "server/store" }) do
      for to in pairs(g[low] or {}) do
        assert.is_nil(to:match("^server/exec") or to:match("^server/cp"), low .. " includes " .. to)
      end
    end
  end)

  -- Every statement of a Control Plane table sits in that table's module
  -- (cp/tables/, and the object store's own tables in cp/objects/store.c):
  -- handlers call named functions, so no SQL runs anywhere else in cp/.
  it("keep the Control Plane's SQL in its table modules", function()
    local found = {}
    for _, f in ipairs(files) do
      local p = f.path
      if p:match("^server/cp/") and not p:match("^server/cp/tables/")
          and p ~= "server/cp/objects/store.c" then
        local h = assert(io.open(ROOT .. "/csrc/" .. p))
        local text = h:read("a")
        h:close()
        if text:find("ux_db_exec%s*%(") or text:find("ux_db_rows?%s*%(") then
          found[#found + 1] = p
        end
      end
    end
    assert.same({}, found, "SQL outside cp/tables/: " .. table.concat(found, ", "))
  end)

  it("keep the core free of Lua and of the server", function()
    for _, f in ipairs(files) do
      if f.path:match("^core/") then
        for _, inc in ipairs(f.includes) do
          assert.is_nil(inc:match("^lua") or inc:match("^lauxlib") or inc:match("^server/")
            or inc:match("^lua/"), f.path .. " includes " .. inc)
        end
        local h = assert(io.open(ROOT .. "/csrc/" .. f.path))
        local text = h:read("a")
        h:close()
        assert.is_nil(text:match("#%s*include%s*<lua"), f.path .. " includes a Lua header")
      end
    end
  end)
end)
