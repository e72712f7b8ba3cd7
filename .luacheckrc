-- luacheck's configuration (spec/lint_unit_spec.lua runs it in `make test`):
-- one standard per tree, every warning on, lines of at most 120 columns.

-- scripts that unlua runs (examples/, bench/, scripts/): Lua 5.4
std = "lua54"
max_line_length = 120

-- the facade runs under every Lua that engines embed (5.1, 5.3, 5.4,
-- LuaJIT): the globals of any of them, each one guarded where it is used
files["lua/unsandbox"] = { std = "max" }

-- busted specs and their helpers; specs fake the environment by replacing
-- os.getenv for the length of a test (and put it back)
files["spec"] = {
  std = "lua54+busted",
  globals = { os = { fields = { "getenv" } } },
}

-- the examples that run inside other hosts: LÖVE and Neovim (both LuaJIT)
files["examples/love"] = { std = "luajit", globals = { "love" } }
files["examples/nvim"] = { std = "luajit", globals = { "vim" } }
