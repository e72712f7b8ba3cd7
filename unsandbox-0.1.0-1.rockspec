-- LuaRocks build of the module: the Lua facade and the C core/binding.
-- spec/rockspec_spec.lua checks that every source file is listed here.
rockspec_format = "3.0"
package = "unsandbox"
version = "0.1.0-1"
source = {
  url = "git+https://github.com/unsandbox/unsandbox-lua.git",
  tag = "v0.1.0",
}
description = {
  summary = "Run untrusted code in remote sandboxes (unsandbox execution API, sandbox Control Plane) from Lua 5.4",
  detailed = [[
    A client of the unsandbox execution API with a C core (libcurl, OpenSSL):
    execute code in 40+ languages, jobs and polling, languages, sessions,
    services and snapshots, HMAC-SHA256 request signing; and of the sandbox
    platform's Control Plane: Manager and Sandbox objects, workspaces and
    runtimes with leases, MCP file and shell tools with streamed output,
    PTY sessions, checkpoints, object storage with tickets, administration.
  ]],
  homepage = "https://unsandbox.com",
  license = "MIT",
}
dependencies = {
  "lua >= 5.4, < 5.5",
  "lua-cjson >= 2.1",
}
external_dependencies = {
  CURL = { header = "curl/curl.h", library = "curl" },
  OPENSSL = { header = "openssl/evp.h", library = "crypto" },
}
build = {
  type = "builtin",
  modules = {
    ["unsandbox.abandon"] = "lua/unsandbox/abandon.lua",
    ["unsandbox.admin"] = "lua/unsandbox/admin.lua",
    ["unsandbox.api"] = "lua/unsandbox/api.lua",
    ["unsandbox.check"] = "lua/unsandbox/check.lua",
    ["unsandbox.cli"] = "lua/unsandbox/cli.lua",
    ["unsandbox.cli_commands"] = "lua/unsandbox/cli_commands.lua",
    ["unsandbox.cli_cp"] = "lua/unsandbox/cli_cp.lua",
    ["unsandbox.context"] = "lua/unsandbox/context.lua",
    ["unsandbox.cp"] = "lua/unsandbox/cp.lua",
    ["unsandbox.cpapi"] = "lua/unsandbox/cpapi.lua",
    ["unsandbox.errors"] = "lua/unsandbox/errors.lua",
    ["unsandbox.execute"] = "lua/unsandbox/execute.lua",
    ["unsandbox"] = "lua/unsandbox/init.lua",
    ["unsandbox.languages"] = "lua/unsandbox/languages.lua",
    ["unsandbox.leases"] = "lua/unsandbox/leases.lua",
    ["unsandbox.manager"] = "lua/unsandbox/manager.lua",
    ["unsandbox.mcp"] = "lua/unsandbox/mcp.lua",
    ["unsandbox.objects"] = "lua/unsandbox/objects.lua",
    ["unsandbox.poll"] = "lua/unsandbox/poll.lua",
    ["unsandbox.results"] = "lua/unsandbox/results.lua",
    ["unsandbox.routes"] = "lua/unsandbox/routes.lua",
    ["unsandbox.sandbox"] = "lua/unsandbox/sandbox.lua",
    ["unsandbox.shell"] = "lua/unsandbox/shell.lua",
    ["unsandbox.tools"] = "lua/unsandbox/tools.lua",
    ["unsandbox.wsfiles"] = "lua/unsandbox/wsfiles.lua",
    ["unsandbox.shape"] = "lua/unsandbox/shape.lua",
    ["unsandbox.core"] = {
      sources = {
        "csrc/core/base64.c",
        "csrc/core/buf.c",
        "csrc/core/cache.c",
        "csrc/core/client.c",
        "csrc/core/clock.c",
        "csrc/core/cpclient.c",
        "csrc/core/cpids.c",
        "csrc/core/cprequest.c",
        "csrc/core/credentials.c",
        "csrc/core/digest.c",
        "csrc/core/error.c",
        "csrc/core/file.c",
        "csrc/core/form.c",
        "csrc/core/headers.c",
        "csrc/core/http.c",
        "csrc/core/http_xfer.c",
        "csrc/core/ids.c",
        "csrc/core/interrupt.c",
        "csrc/core/langmap.c",
        "csrc/core/lease.c",
        "csrc/core/leasecache.c",
        "csrc/core/mcp.c",
        "csrc/core/poll.c",
        "csrc/core/pseudonym.c",
        "csrc/core/quote.c",
        "csrc/core/request.c",
        "csrc/core/sign.c",
        "csrc/core/sse.c",
        "csrc/core/trace.c",
        "csrc/core/utf8.c",
        "csrc/core/validate.c",
        "csrc/core/wspath.c",
        "csrc/lua/cbox.c",
        "csrc/lua/client.c",
        "csrc/lua/cp_call.c",
        "csrc/lua/cp_form.c",
        "csrc/lua/cp_functions.c",
        "csrc/lua/files.c",
        "csrc/lua/functions.c",
        "csrc/lua/manager.c",
        "csrc/lua/manager_lease.c",
        "csrc/lua/module.c",
        "csrc/lua/sandbox.c",
        "csrc/lua/sse_parser.c",
        "csrc/lua/tracker.c",
        "csrc/lua/transfer.c",
        "csrc/lua/util.c",
        "csrc/lua/validate.c",
        -- libcurl and libcrypto are loaded on first use (csrc/lazy/lazy.h)
        "csrc/lazy/crypto.c",
        "csrc/lazy/curl.c",
        "csrc/lazy/lazy.c",
      },
      defines = { "_GNU_SOURCE" },
      incdirs = { "csrc", "$(CURL_INCDIR)", "$(OPENSSL_INCDIR)" },
      libraries = { "dl" },
    },
  },
}
