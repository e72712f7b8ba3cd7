/*
** The version of the whole project, written once: the module's
** core.VERSION, unlua -v, unsandboxd --version and GET /health, and the
** MCP client version all print this. The rockspec's own version string is
** LuaRocks metadata and is checked against it by spec/rockspec_spec.lua.
*/
#ifndef UNSB_VERSION_H
#define UNSB_VERSION_H

#define UNSB_VERSION "0.1.0"

#endif
