/*
** unlua: the stand-alone Lua 5.4 interpreter with unsandbox built in.
**
** It behaves like the stock `lua` program (options, the `arg` table,
** LUA_INIT, LUA_PATH, tracebacks, exit statuses, the REPL) and adds:
**   - `cjson` (and `cjson.safe`) in package.preload, linked in, and
**     `unsandbox.core` in package.preload too: a loader of the module
**     that came with this unlua (core.so next to the facade), so no C
**     path is needed. It is loaded only when required, and the network
**     stack inside it only when a client is made: unlua links Lua alone
**     and starts as fast as `lua` does;
**   - the Lua facade (`require "unsandbox"`) found without LUA_PATH:
**     package.path starts with <dir of unlua>/../lua (a build tree) and
**     <dir of unlua>/../share/lua/5.4 (an installed prefix), where they
**     hold an unsandbox/ directory;
**   - SIGINT also raises the core's interrupt flag, so a script blocked in
**     a C wait (core.sleep, an HTTP request, a poll) stops too;
**   - `--local`: the script runs against the user's lasting unsandboxd
**     when one runs (`un local start`, local_server.c), else a private one
**     that unlua starts and always stops (local_backend.c); `unlua.local`
**     in package.preload manages the lasting one (local_lua.c).
**
** The structure follows lua.c: main() runs everything in a protected
** pmain(), so even a memory error at start-up is reported properly.
*/
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"
#include "lua-cjson.h"

#include "core/interrupt.h"
#include "core/version.h"
#include "host/facade.h"
#include "host/lineedit.h"
#include "host/local_backend.h"
#include "host/local_lua.h"


#ifndef LUA_IGMARK  /* luaconf.h has it only from 5.4.5 on */
#define LUA_IGMARK "-"
#endif

#define UNLUA_INIT_VAR  "LUA_INIT"
#define UNLUA_INITVARVERSION  UNLUA_INIT_VAR LUA_VERSUFFIX

/* lua-cjson's second entry point */
extern int luaopen_cjson_safe(lua_State *L);

static lua_State *globalL = NULL;
static const char *progname = "unlua";

/* What SIGINT does outside protected calls: die (SIG_DFL), or, while a
** private backend runs, stop it and then die. */
static void (*outside_handler)(int) = SIG_DFL;

/* The directory of this executable, "" if unknown. */
static char exedir[PATH_MAX];


/*
** {==================================================================
** Signals: Ctrl-C interrupts the running Lua code
** ===================================================================
*/

static void setsignal(int sig, void (*handler)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigfillset(&sa.sa_mask);
  sigaction(sig, &sa, NULL);
}

/* The hook raises the error at the next safe point of the Lua code. */
static void lstop(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "interrupted!");
}

/*
** SIGINT while Lua code runs. lua_sethook is the one Lua call that is safe
** in a signal handler. A script may instead be blocked in C (core.sleep, a
** transfer): the core sees the flag within 100 ms and returns, and the
** hook fires as soon as Lua code runs again. A second Ctrl-C acts as if
** there were no handler.
*/
static void laction(int sig) {
  int flag = LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT;
  setsignal(sig, outside_handler);
  unsb_interrupt_request();
  lua_sethook(globalL, lstop, flag, 1);
}

/* }================================================================== */


/*
** {==================================================================
** Messages and protected calls
** ===================================================================
*/

static void print_usage(const char *badoption) {
  lua_writestringerror("%s: ", progname);
  if (badoption[1] == 'e' || badoption[1] == 'l')
    lua_writestringerror("'%s' needs argument\n", badoption);
  else
    lua_writestringerror("unrecognized option '%s'\n", badoption);
  lua_writestringerror(
    "usage: %s [options] [script [args]]\n"
    "Available options are:\n"
    "  -e stat   execute string 'stat'\n"
    "  -i        enter interactive mode after executing 'script'\n"
    "  -l mod    require library 'mod' into global 'mod'\n"
    "  -l g=mod  require library 'mod' into global 'g'\n"
    "  -v        show version information\n"
    "  -E        ignore environment variables\n"
    "  -W        turn warnings on\n"
    "  --local   run against a private unsandboxd, started and stopped here\n"
    "  --        stop handling options\n"
    "  -         stop handling options and execute stdin\n", progname);
}

/* "progname: msg" on stderr; no progname for errors typed in the REPL. */
static void l_message(const char *pname, const char *msg) {
  if (pname) lua_writestringerror("%s: ", pname);
  lua_writestringerror("%s\n", msg);
}

/* Reports a non-OK status with the message on top of the stack. */
static int report(lua_State *L, int status) {
  if (status != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    if (msg == NULL) msg = "(error object is not a string)";
    l_message(progname, msg);
    lua_pop(L, 1);
  }
  return status;
}

/* Is source a file of the facade, ".../unsandbox/<name>.lua" (on disk or
** built in as "=[unlua]/unsandbox/<name>.lua")? */
static int library_chunk(const char *source) {
  size_t n = strlen(source), i = n;
  if (n < 4 || strcmp(source + n - 4, ".lua") != 0) return 0;
  while (i > 0 && source[i - 1] != '/') {
    char c = source[i - 1];
    if (!(c == '_' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
          (c >= 'A' && c <= 'Z')))
      return 0;
    i--;
  }
  return i >= 10 && memcmp(source + i - 10, "unsandbox/", 10) == 0;
}

/* Message handler: turns any error object into a string with a traceback. */
/* Where the error was raised: the first Lua frame with a line (assert and
** error themselves are C functions) outside the library's own files (an
** Error the library raises, an interrupt, points at the caller's line as
** its misuse errors do), as "chunk:line: ", or "". */
static const char *raised_at(lua_State *L) {
  lua_Debug ar;
  for (int level = 1; lua_getstack(L, level, &ar); level++) {
    if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0 && !library_chunk(ar.source))
      return lua_pushfstring(L, "%s:%d: ", ar.short_src, ar.currentline);
  }
  return lua_pushliteral(L, "");
}

/* Unlike lua.c, an object that describes itself (an unsandbox.Error
** passed to assert or error) also gets the position and the traceback a
** string error has: `assert(call())` must say which call failed. */
static int msghandler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) {
      const char *text = lua_tostring(L, -1);
      msg = lua_pushfstring(L, "%s%s", raised_at(L), text);
    } else {
      msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/* Calls the function below its narg arguments with the message handler and
** with Ctrl-C turned into an error. */
static int docall(lua_State *L, int narg, int nres) {
  int status;
  int base = lua_gettop(L) - narg;
  lua_pushcfunction(L, msghandler);
  lua_insert(L, base);
  globalL = L;
  setsignal(SIGINT, laction);
  status = lua_pcall(L, narg, nres, base);
  setsignal(SIGINT, outside_handler);
  (void)unsb_interrupt_take();  /* a late Ctrl-C must not spoil the next call */
  lua_remove(L, base);
  return status;
}

static void print_version(void) {
  static const char version[] =
    "unlua " UNSB_VERSION " (unsandbox for Lua)  " LUA_COPYRIGHT;
  lua_writestring(version, sizeof version - 1);
  lua_writeline();
}

/* }================================================================== */


/*
** {==================================================================
** The state: arg, preloads, paths
** ===================================================================
*/

/*
** arg: the script name at index 0, its arguments at 1.., the interpreter
** and its options at negative indices. Without a script the interpreter
** name is arg[0].
*/
static void createargtable(lua_State *L, char **argv, int argc, int script) {
  int i, narg;
  if (script <= 0) script = 0;
  narg = argc - (script + 1);
  lua_createtable(L, narg > 0 ? narg : 0, script + 1);
  for (i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
}

/*
** package.preload["unsandbox.core"]: the core and binding are linked into
** unlua (libcurl and libcrypto still load on first use, csrc/lazy), so a
** copied unlua needs no core.so; never a core.so from disk, which would be
** a second copy of the core beside this one. The facade's Lua files come
** from disk when a path has them, else from the copy built in (facade.c).
*/
int luaopen_unsandbox_core(lua_State *L);

static void preload_modules(lua_State *L) {
  static const luaL_Reg builtin[] = {
    { "unsandbox.core", luaopen_unsandbox_core },
    { "cjson", luaopen_cjson },
    { "cjson.safe", luaopen_cjson_safe },
    { NULL, NULL }
  };
  const luaL_Reg *m;
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  for (m = builtin; m->name != NULL; m++) {
    lua_pushcfunction(L, m->func);
    lua_setfield(L, -2, m->name);
  }
  lua_pushstring(L, exedir);  /* where a build tree keeps unsandboxd */
  lua_pushcclosure(L, luaopen_unlua_local, 1);
  lua_setfield(L, -2, "unlua.local");
  lua_pop(L, 1);
}

/* Where this program lives: /proc/self/exe, else argv[0] if it has a '/'. */
static void find_exedir(const char *argv0) {
  char buf[PATH_MAX];
  char *slash;
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0)
    buf[n] = '\0';
  else if (argv0 == NULL || strchr(argv0, '/') == NULL || !realpath(argv0, buf))
    return;
  slash = strrchr(buf, '/');
  if (slash == NULL) return;
  *slash = '\0';
  snprintf(exedir, sizeof exedir, "%s", buf[0] ? buf : "/");
}

/* Adds "dir/?.lua;dir/?/init.lua;" to b when exedir/rel/unsandbox exists. */
static void add_facade_dir(luaL_Buffer *b, const char *rel) {
  char cand[PATH_MAX], dir[PATH_MAX];
  struct stat st;
  if (snprintf(cand, sizeof cand, "%s/%s/unsandbox", exedir, rel) >= (int)sizeof cand)
    return;
  if (!realpath(cand, dir) || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
    return;
  *strrchr(dir, '/') = '\0';  /* back to the directory that holds unsandbox/ */
  luaL_addstring(b, dir);
  luaL_addstring(b, "/" LUA_PATH_MARK ".lua" LUA_PATH_SEP);
  luaL_addstring(b, dir);
  luaL_addstring(b, "/" LUA_PATH_MARK "/init.lua" LUA_PATH_SEP);
}

/*
** package.path = <our dirs> .. <what the package library made of
** LUA_PATH_5_4, LUA_PATH or the default>: the facade that came with this
** unlua wins, everything else keeps the stock semantics.
*/
static void add_facade_paths(lua_State *L) {
  luaL_Buffer b;
  if (exedir[0] == '\0') return;
  lua_getglobal(L, "package");
  luaL_buffinit(L, &b);
  add_facade_dir(&b, "../lua");
  add_facade_dir(&b, "../share/lua/" LUA_VERSION_MAJOR "." LUA_VERSION_MINOR);
  lua_getfield(L, -2, "path");  /* after the buffer: luaL_addvalue takes it */
  luaL_addvalue(&b);
  luaL_pushresult(&b);
  lua_setfield(L, -2, "path");
  lua_pop(L, 1);
}

/* }================================================================== */


/*
** {==================================================================
** Running chunks
** ===================================================================
*/

static int dochunk(lua_State *L, int status) {
  if (status == LUA_OK) status = docall(L, 0, 0);
  return report(L, status);
}

static int dofile(lua_State *L, const char *name) {
  return dochunk(L, luaL_loadfile(L, name));
}

static int dostring(lua_State *L, const char *s, const char *name) {
  return dochunk(L, luaL_loadbuffer(L, s, strlen(s), name));
}

/* -l mod: global mod = require "mod"; -l g=mod: global g. As in lua.c, a
** "-" in mod (an ignore mark, as in "mod-2.0") cuts the global name. */
static int dolibrary(lua_State *L, const char *spec) {
  const char *eq = strchr(spec, '=');
  const char *modname = eq ? eq + 1 : spec;
  size_t glen = eq ? (size_t)(eq - spec) : strcspn(spec, LUA_IGMARK);
  int status;
  lua_getglobal(L, "require");
  lua_pushstring(L, modname);
  status = docall(L, 1, 1);
  if (status == LUA_OK) {
    const char *globname = lua_pushlstring(L, spec, glen);
    lua_insert(L, -2);             /* name, module */
    lua_setglobal(L, globname);    /* the name stays on the stack meanwhile */
    lua_pop(L, 1);
  }
  return report(L, status);
}

/* Pushes the script's arguments (arg[1..n]) and returns n. */
static int pushargs(lua_State *L) {
  int i, n;
  if (lua_getglobal(L, "arg") != LUA_TTABLE)
    luaL_error(L, "'arg' is not a table");
  n = (int)luaL_len(L, -1);
  luaL_checkstack(L, n + 3, "too many arguments to script");
  for (i = 1; i <= n; i++) lua_rawgeti(L, -i, i);
  lua_remove(L, -i);
  return n;
}

static int handle_script(lua_State *L, char **argv) {
  int status;
  const char *fname = argv[0];
  if (strcmp(fname, "-") == 0 && strcmp(argv[-1], "--") != 0)
    fname = NULL;  /* "-" is stdin, unless it follows "--" */
  status = luaL_loadfile(L, fname);
  if (status == LUA_OK) {
    int n = pushargs(L);
    status = docall(L, n, LUA_MULTRET);
  }
  return report(L, status);
}

/* }================================================================== */


/*
** {==================================================================
** Command line
** ===================================================================
*/

#define has_error  1  /* bad option */
#define has_i      2  /* -i */
#define has_v      4  /* -v */
#define has_e      8  /* -e */
#define has_E     16  /* -E */
#define has_local 32  /* --local */

/*
** Checks the options up to the script name and sets *first to the index
** of the script (0 when there is none, or the bad option on error).
*/
static int collectargs(char **argv, int *first) {
  int args = 0;
  int i;
  for (i = 1; argv[i] != NULL; i++) {
    *first = i;
    if (argv[i][0] != '-') return args;  /* the script */
    switch (argv[i][1]) {
      case '-':
        if (strcmp(argv[i], "--local") == 0) {
          args |= has_local;
          break;
        }
        if (argv[i][2] != '\0') return has_error;
        *first = (argv[i + 1] != NULL) ? i + 1 : 0;
        return args;
      case '\0':  /* "-": stdin */
        return args;
      case 'E':
        if (argv[i][2] != '\0') return has_error;
        args |= has_E;
        break;
      case 'W':
        if (argv[i][2] != '\0') return has_error;
        break;
      case 'i':  /* -i implies -v */
        args |= has_i;
        /* fall through */
      case 'v':
        if (argv[i][2] != '\0') return has_error;
        args |= has_v;
        break;
      case 'e':
        args |= has_e;
        /* fall through */
      case 'l':
        if (argv[i][2] == '\0') {  /* the argument is the next word */
          i++;
          if (argv[i] == NULL || argv[i][0] == '-') return has_error;
        }
        break;
      default:
        return has_error;
    }
  }
  *first = 0;
  return args;
}

/* Runs -e, -l and -W in order, up to the script. Returns 0 on error. */
static int runargs(lua_State *L, char **argv, int n) {
  int i;
  for (i = 1; i < n; i++) {
    int option = argv[i][1];
    switch (option) {
      case 'e':
      case 'l': {
        const char *extra = argv[i] + 2;
        int status;
        if (*extra == '\0') extra = argv[++i];
        status = (option == 'e') ? dostring(L, extra, "=(command line)")
                                 : dolibrary(L, extra);
        if (status != LUA_OK) return 0;
        break;
      }
      case 'W':
        lua_warning(L, "@on", 0);
        break;
    }
  }
  return 1;
}

static int handle_luainit(lua_State *L) {
  const char *name = "=" UNLUA_INITVARVERSION;
  const char *init = getenv(name + 1);
  if (init == NULL) {
    name = "=" UNLUA_INIT_VAR;
    init = getenv(name + 1);
  }
  if (init == NULL) return LUA_OK;
  if (init[0] == '@') return dofile(L, init + 1);
  return dostring(L, init, name);
}

/* }================================================================== */


/*
** {==================================================================
** The REPL: lines from stdin, edited on a terminal (lineedit.c)
** ===================================================================
*/

#define EOFMARK "<eof>"
#define EOFMARK_LEN (sizeof(EOFMARK) / sizeof(char) - 1)

static const char *get_prompt(lua_State *L, int firstline) {
  if (lua_getglobal(L, firstline ? "_PROMPT" : "_PROMPT2") == LUA_TNIL)
    return firstline ? "> " : ">> ";
  return luaL_tolstring(L, -1, NULL);  /* the caller pops what is left */
}

/* A syntax error at <eof> means the statement goes on on the next line. */
static int incomplete(lua_State *L, int status) {
  if (status == LUA_ERRSYNTAX) {
    size_t lmsg;
    const char *msg = lua_tolstring(L, -1, &lmsg);
    if (lmsg >= EOFMARK_LEN && strcmp(msg + lmsg - EOFMARK_LEN, EOFMARK) == 0) {
      lua_pop(L, 1);
      return 1;
    }
  }
  return 0;
}

/* Prompts, reads one line (lineedit.c: readline on a terminal) and pushes
** it (without the newline). A first line "=expr" means "return expr", as
** in Lua 5.2. */
static int pushline(lua_State *L, int firstline) {
  int top = lua_gettop(L);
  char *line = ul_readline(get_prompt(L, firstline));
  lua_settop(L, top);  /* drop what get_prompt left */
  if (!line) return 0;
  if (firstline && line[0] == '=')
    lua_pushfstring(L, "return %s", line + 1);
  else
    lua_pushstring(L, line);
  free(line);
  return 1;
}

/* Tries the line as an expression: "return <line>". */
static int addreturn(lua_State *L) {
  const char *line = lua_tostring(L, -1);
  const char *retline = lua_pushfstring(L, "return %s;", line);
  int status = luaL_loadbuffer(L, retline, strlen(retline), "=stdin");
  if (status == LUA_OK)
    lua_remove(L, -2);  /* keep the function, drop the modified line */
  else
    lua_pop(L, 2);      /* the error and the modified line */
  return status;
}

/* Reads more lines while the statement is incomplete. */
static int multiline(lua_State *L) {
  for (;;) {
    size_t len;
    const char *line = lua_tolstring(L, 1, &len);
    int status = luaL_loadbuffer(L, line, len, "=stdin");
    if (!incomplete(L, status) || !pushline(L, 0))
      return status;
    lua_pushliteral(L, "\n");
    lua_insert(L, -2);
    lua_concat(L, 3);
  }
}

/* Reads a complete line and compiles it, leaving the function (or the
** error) on the stack; -1 at end of input. */
static int loadline(lua_State *L) {
  int status;
  lua_settop(L, 0);
  if (!pushline(L, 1)) return -1;
  if ((status = addreturn(L)) != LUA_OK)
    status = multiline(L);
  ul_saveline(lua_tostring(L, 1));  /* the whole statement, for the history */
  lua_remove(L, 1);  /* the line */
  return status;
}

/* Prints whatever the line returned, through the global print. */
static void l_print(lua_State *L) {
  int n = lua_gettop(L);
  if (n > 0) {
    luaL_checkstack(L, LUA_MINSTACK, "too many results to print");
    lua_getglobal(L, "print");
    lua_insert(L, 1);
    if (lua_pcall(L, n, 0, 0) != LUA_OK)
      l_message(progname, lua_pushfstring(L, "error calling 'print' (%s)",
                                          lua_tostring(L, -1)));
  }
}

static void doREPL(lua_State *L) {
  int status;
  const char *oldprogname = progname;
  progname = NULL;  /* errors typed at the prompt need no program name */
  while ((status = loadline(L)) != -1) {
    if (status == LUA_OK) status = docall(L, 0, LUA_MULTRET);
    if (status == LUA_OK) l_print(L);
    else report(L, status);
  }
  lua_settop(L, 0);
  lua_writeline();
  progname = oldprogname;
}

/* }================================================================== */


/*
** pmain: everything that can raise runs in here, protected. Returns true
** as its result when the script and the options ran without error.
*/
static int pmain(lua_State *L) {
  int argc = (int)lua_tointeger(L, 1);
  char **argv = (char **)lua_touserdata(L, 2);
  int script = 0;
  int args = collectargs(argv, &script);
  int optlim = (script > 0) ? script : argc;
  luaL_checkversion(L);
  if (args == has_error) {
    print_usage(argv[script]);
    return 0;
  }
  if (args & has_v) print_version();
  if (args & has_E) {  /* the package library reads this */
    lua_pushboolean(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, "LUA_NOENV");
  }
  luaL_openlibs(L);
  preload_modules(L);
  add_facade_paths(L);
  ul_facade_install(L);
  createargtable(L, argv, argc, script);
  lua_gc(L, LUA_GCRESTART);
  lua_gc(L, LUA_GCGEN, 0, 0);
  if (args & has_local) {  /* before any user code, so LUA_INIT sees it too */
    if (local_start(progname, exedir) != 0) return 0;
    outside_handler = local_fatal_signal;
  }
  if (!(args & has_E) && handle_luainit(L) != LUA_OK) return 0;
  if (!runargs(L, argv, optlim)) return 0;
  if (script > 0 && handle_script(L, argv + script) != LUA_OK) return 0;
  if (args & has_i)
    doREPL(L);
  else if (script == 0 && !(args & (has_e | has_v))) {
    if (isatty(STDIN_FILENO)) {
      print_version();
      doREPL(L);
    }
    else
      dofile(L, NULL);  /* a script on stdin */
  }
  lua_pushboolean(L, 1);
  return 1;
}

int main(int argc, char **argv) {
  int status, result;
  lua_State *L;
  if (argv[0] != NULL && argv[0][0] != '\0') {
    const char *base = strrchr(argv[0], '/');
    progname = base ? base + 1 : argv[0];
  }
  find_exedir(argv[0]);
  L = luaL_newstate();
  if (L == NULL) {
    l_message(progname, "cannot create state: not enough memory");
    return EXIT_FAILURE;
  }
  lua_gc(L, LUA_GCSTOP);  /* no collections while the libraries load */
  lua_pushcfunction(L, pmain);
  lua_pushinteger(L, argc);
  lua_pushlightuserdata(L, argv);
  status = lua_pcall(L, 2, 1, 0);
  result = lua_toboolean(L, -1);
  report(L, status);
  lua_close(L);
  local_stop();  /* after lua_close: __gc of clients may still talk to it */
  return (result && status == LUA_OK) ? EXIT_SUCCESS : EXIT_FAILURE;
}
