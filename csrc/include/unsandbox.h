/*
** unsandbox.h: what a C host that embeds unsandbox for Lua calls. It is
** the public face of libunsandbox.a (the C core and the Lua binding,
** installed by `make install` with unsandbox.pc), kept this small so the
** internal headers under csrc/ can change freely. See examples/embed/.
*/
#ifndef UNSANDBOX_H
#define UNSANDBOX_H

#include <lua.h>

/* The C part of the module; register it as package.preload["unsandbox.core"]
** (or luaL_requiref it), then `require "unsandbox"` finds the facade on
** package.path (<prefix>/share/lua/5.4 once installed). */
int luaopen_unsandbox_core(lua_State *L);

/* Async-signal-safe: a host's SIGINT handler calls it, and waits for jobs
** and HTTP replies give up with an error of kind "interrupted". */
void unsb_interrupt_request(void);

#endif
