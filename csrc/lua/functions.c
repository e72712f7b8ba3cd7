/*
** Pure functions of unsandbox.core: signing, ids, languages, the poll
** schedule, clocks, the interrupt flag, base64 and isatty.
*/
#include "lua/binding.h"

#include <stdlib.h>
#include <unistd.h>

#include "core/base64.h"
#include "core/clock.h"
#include "core/ids.h"
#include "core/interrupt.h"
#include "core/langmap.h"
#include "core/poll.h"
#include "core/sign.h"

/* core.sign(secret, timestamp, method, path, body): the path is signed as
** given, so the caller decides about the query (the client strips it). */
static int l_sign(lua_State *L) {
  size_t secret_len, body_len = 0;
  char ts[32], sig[UNSB_SIGNATURE_HEX_LEN + 1];
  const char *secret = ub_check_string(L, 1, "secret", &secret_len);
  const char *timestamp;
  if (lua_isinteger(L, 2)) {
    snprintf(ts, sizeof ts, LUA_INTEGER_FMT, lua_tointeger(L, 2));
    timestamp = ts;
  } else if (lua_type(L, 2) == LUA_TSTRING) {
    timestamp = lua_tostring(L, 2);
  } else {
    return ub_type_error(L, 2, 2, "timestamp", "string or integer");
  }
  const char *method = ub_check_string(L, 3, "method", NULL);
  const char *path = ub_check_string(L, 4, "path", NULL);
  const char *body = ub_opt_string(L, 5, "body", &body_len);
  if (unsb_sign(secret, secret_len, timestamp, method, path, body, body_len, sig) != 0)
    return luaL_error(L, "signing failed (OpenSSL)");
  lua_pushlstring(L, sig, UNSB_SIGNATURE_HEX_LEN);
  return 1;
}

static int l_valid_id(lua_State *L) {
  size_t len;
  const char *s = ub_check_string(L, 1, "id", &len);
  lua_pushboolean(L, unsb_valid_id(s, len));
  return 1;
}

static int push_or_nil(lua_State *L, const char *s) {
  if (s) lua_pushstring(L, s); else lua_pushnil(L);
  return 1;
}

static int l_detect_language(lua_State *L) {
  size_t len;
  const char *f = ub_check_string(L, 1, "filename", &len);
  return push_or_nil(L, unsb_detect_language(f, len));
}

static int l_detect_shebang(lua_State *L) {
  size_t len;
  const char *line = ub_check_string(L, 1, "first_line", &len);
  return push_or_nil(L, unsb_detect_shebang(line, len));
}

static int l_extensions(lua_State *L) {
  size_t n;
  const unsb_langmap_entry *e = unsb_langmap_entries(&n);
  lua_createtable(L, 0, (int)n);
  for (size_t i = 0; i < n; i++) {
    lua_pushstring(L, e[i].language);
    lua_setfield(L, -2, e[i].ext);
  }
  return 1;
}

static int l_poll_delay(lua_State *L) {
  if (!lua_isinteger(L, 1)) return ub_type_error(L, 1, 1, "attempt", "integer");
  lua_pushinteger(L, unsb_poll_delay((long long)lua_tointeger(L, 1)));
  return 1;
}

/* Inside a task: a timer of the loop, and a wait until it fires (the
** thread may be resumed early by nothing but a cancelled wait: it looks
** at the clock again). The continuation gets due (monotonic ms). */
static int sleep_until(lua_State *L, int64_t due);

static int sleep_k(lua_State *L) {
  ub_wait_done(L);
  return sleep_until(L, (int64_t)luaL_checkinteger(L, 1));
}

static int sleep_until(lua_State *L, int64_t due) {
  unsb_error err;
  if (unsb_monotonic_ms() < due) {
    unsb_token tok = ub_wait(L, 0);
    if (unsb_loop_timer(ub_loop(L), due, tok, &err) != 0) return luaL_error(L, "not enough memory");
    lua_pushinteger(L, (lua_Integer)due);
    return ub_yield(L, sleep_k, 1);
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int l_sleep(lua_State *L) {
  lua_Integer ms = ub_check_ms(L, 1, "ms", LUA_MININTEGER);
  if (ms > 0 && ub_task_can_yield(L)) return sleep_until(L, unsb_monotonic_ms() + ms);
  if (unsb_sleep_ms(ms) != 0) {
    lua_pushnil(L);
    lua_pushliteral(L, "interrupted");
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* core.interrupt_take(): true if a Ctrl-C was pending (and now is not).
** For clean-up after an interrupt: the cancel of an abandoned job must not
** be cut short by the same Ctrl-C. */
static int l_interrupt_take(lua_State *L) {
  lua_pushboolean(L, unsb_interrupt_take());
  return 1;
}

static int l_now(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)unsb_now());
  return 1;
}

static int l_monotonic_ms(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)unsb_monotonic_ms());
  return 1;
}

static int l_interrupt(lua_State *L) {
  unsb_interrupt_request();
  return 0;
}

static int l_base64_encode(lua_State *L) {
  size_t len, out_len;
  const char *s = ub_check_string(L, 1, "data", &len);
  char **box = ub_box_new(L);
  if (!(*box = unsb_base64_encode((const unsigned char *)s, len, &out_len)))
    return luaL_error(L, "base64_encode: out of memory or input too large");
  ub_box_push(L, box, out_len);
  return 1;
}

static int l_base64_decode(lua_State *L) {
  size_t len, out_len;
  const char *s = ub_check_string(L, 1, "text", &len);
  char **box = ub_box_new(L);
  if (!(*box = (char *)unsb_base64_decode(s, len, &out_len))) {
    lua_pushnil(L);
    lua_pushliteral(L, "invalid base64");
    return 2;
  }
  ub_box_push(L, box, out_len);
  return 1;
}

/* core.isatty(fd): lets the CLI show progress only on a terminal. */
static int l_isatty(lua_State *L) {
  lua_Integer fd = luaL_checkinteger(L, 1);
  lua_pushboolean(L, fd >= 0 && fd <= 1024 && isatty((int)fd));
  return 1;
}

static const luaL_Reg FUNCTIONS[] = {
  {"sign", l_sign},
  {"valid_id", l_valid_id},
  {"detect_language", l_detect_language},
  {"detect_shebang", l_detect_shebang},
  {"extensions", l_extensions},
  {"poll_delay", l_poll_delay},
  {"sleep", l_sleep},
  {"now", l_now},
  {"monotonic_ms", l_monotonic_ms},
  {"interrupt", l_interrupt},
  {"interrupt_take", l_interrupt_take},
  {"base64_encode", l_base64_encode},
  {"base64_decode", l_base64_decode},
  {"isatty", l_isatty},
  {NULL, NULL},
};

void ub_open_functions(lua_State *L) { luaL_setfuncs(L, FUNCTIONS, 0); }
