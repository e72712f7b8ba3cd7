/*
** Boxes for C resources that are more than one string (a response with
** its body and ids, resolved credentials with the secret): a userdata
** made BEFORE the core call fills it, whose __gc runs the resource's own
** cleanup. Pushing the results may raise (out of memory) at any point;
** the box is then collected like any garbage and the cleanup still runs,
** so nothing leaks and a secret is still wiped. ub_cbox_done runs the
** cleanup at once on the normal path (a secret should not wait for a
** collection).
*/
#include "lua/binding.h"

#include <string.h>

#define UB_CBOX "unsandbox.CBox"

/* The resource is aligned as a userdata's memory is in every Lua built
** for (5.1 and 5.3 align it for double, void * and long only: 8 bytes
** here); max_align_t would ask for 16, which those Luas do not give. The
** core's resources hold nothing that needs more. */
typedef union {
  void *p;
  double d;
  long long l;
} cbox_align;

typedef struct {
  ub_cleanup cleanup;        /* NULL once run */
  cbox_align obj[];          /* the resource, zeroed */
} cbox;

static int cbox_gc(lua_State *L) {
  cbox *b = luaL_checkudata(L, 1, UB_CBOX);
  if (b->cleanup) {
    ub_cleanup fn = b->cleanup;
    b->cleanup = NULL;
    fn(b->obj);
  }
  return 0;
}

void *ub_cbox_new(lua_State *L, size_t size, ub_cleanup cleanup) {
  cbox *b = lua_newuserdatauv(L, sizeof *b + size, 0);
  b->cleanup = NULL;                 /* nothing to clean until the metatable is set */
  memset(b->obj, 0, size);
  if (luaL_newmetatable(L, UB_CBOX)) {
    lua_pushcfunction(L, cbox_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  b->cleanup = cleanup;
  return b->obj;
}

void ub_cbox_done(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  lua_pushcfunction(L, cbox_gc);
  lua_pushvalue(L, idx);
  lua_call(L, 1, 0);                 /* cannot raise: the box is a CBox */
  lua_remove(L, idx);
}
