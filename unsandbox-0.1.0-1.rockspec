-- LuaRocks build: the Makefile's `rock` target (the module and unlua)
-- and `install-rock` into the tree (the Lua files, core.so, unlua and un),
-- so the rock builds exactly what `make` does, with no second list of
-- sources. It builds for whichever Lua LuaRocks targets (5.1, LuaJIT, 5.3
-- or 5.4): the Makefile reads which from LUA_INCDIR's headers; only a 5.4
-- rock has unlua and un. The include and library directories LuaRocks
-- found (its variables and the external dependencies') reach the Makefile
-- as build variables. unlua links the system's lua-cjson (liblua5.4-cjson, Debian's
-- lua-cjson-dev), so that is what the rock requires: an external
-- dependency, which the system package satisfies (a lua-cjson rock would
-- not give unlua a library to link). `luarocks test` runs the #unit specs,
-- which need no network and no server.
rockspec_format = "3.0"
package = "unsandbox"
version = "0.1.0-1"
source = {
  url = "git+https://github.com/unsandbox/unsandbox-lua.git",
  tag = "v0.1.0",
}
description = {
  summary = "Run untrusted code in remote sandboxes (unsandbox execution API, sandbox Control Plane) from Lua 5.1-5.4 and LuaJIT",
  detailed = [[
    A client of the unsandbox execution API with a C core (libcurl, OpenSSL;
    session terminals too: WebSocket over libcurl's connections):
    execute code in 40+ languages, jobs and polling, languages, sessions,
    services and snapshots, HMAC-SHA256 request signing; and of the sandbox
    platform's Control Plane: Manager and Sandbox objects, workspaces and
    runtimes with leases, MCP file and shell tools with streamed output,
    PTY sessions, checkpoints, object storage with tickets, administration.
    The rock installs the module, unlua and un; it has no unsandboxd, the
    local backend that `unlua --local` and `un --local` start (it needs
    libmicrohttpd, jansson, SQLite, libarchive and bubblewrap): build it
    with `make` from the source tree, or set UNSANDBOXD to one.
  ]],
  homepage = "https://unsandbox.com",
  license = "MIT",
}
dependencies = {
  "lua >= 5.1, < 5.5",
}
external_dependencies = {
  CURL = { header = "curl/curl.h", library = "curl" },
  OPENSSL = { header = "openssl/evp.h", library = "crypto" },
  CJSON = { library = "lua5.4-cjson" },
  READLINE = { header = "readline/readline.h", library = "readline" },   -- unlua -i
}
build = {
  type = "make",
  build_target = "rock",
  build_variables = {
    CFLAGS = "$(CFLAGS)", LUA_INCDIR = "$(LUA_INCDIR)", LUA_LIBDIR = "$(LUA_LIBDIR)",
    CURL_INCDIR = "$(CURL_INCDIR)", OPENSSL_INCDIR = "$(OPENSSL_INCDIR)", CJSON_LIBDIR = "$(CJSON_LIBDIR)",
  },
  install_target = "install-rock",
  install_variables = { BINDIR = "$(BINDIR)", LUADIR = "$(LUADIR)", LIBDIR = "$(LIBDIR)",
                        LUA_INCDIR = "$(LUA_INCDIR)" },
}
-- the system's busted (Debian's lua-busted), not a rock to download: the
-- #unit specs run offline (busted still runs the set-up of the other
-- describes, which start bin/unsandboxd: `make all` builds it)
test = {
  type = "command",
  command = "make -s --no-print-directory all && busted --tags=unit",
}
