/*
** The binding under Lua memory errors: core.credentials, c:request,
** core.base64_encode and core.cache_read are called in a Lua state whose
** allocator fails at the k-th allocation, for every k until the call
** succeeds. A C resource the call made (a 256 KiB secret, a 256 KiB
** response body or result) must be freed however the pushing ends: the
** heap in use (mallinfo2) is the same after all the rounds as before, and
** the rounds did end in memory errors while results were being pushed.
** (Under AddressSanitizer the leak checker judges the same rounds.)
*/
#include <arpa/inet.h>
#include <malloc.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "tests/tap.h"

int luaopen_unsandbox_core(lua_State *L);

#define BIG (256 * 1024)

/* ---------------------------------------------------------------------
** an allocator that fails on purpose
** ------------------------------------------------------------------- */

static long budget = -1;             /* allocations left; < 0 = unlimited */

static void *failing_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  (void)ud;
  if (nsize == 0) { free(ptr); return NULL; }
  if (budget == 0 && nsize > (ptr ? osize : 0)) return NULL;
  if (budget > 0) budget--;
  return realloc(ptr, nsize);
}

/* ---------------------------------------------------------------------
** a loopback server answering every request with a BIG body
** ------------------------------------------------------------------- */

static int listener = -1;
static int port;

static void *serve(void *arg) {
  (void)arg;
  static char reply[BIG + 200];
  int head = snprintf(reply, sizeof reply, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n"
                      "X-Request-Id: req_1\r\nConnection: close\r\n\r\n", BIG);
  memset(reply + head, 'r', BIG);
  for (;;) {
    int c = accept(listener, NULL, NULL);
    if (c < 0) return NULL;
    char buf[4096];
    if (read(c, buf, sizeof buf) > 0) {
      size_t off = 0, len = (size_t)head + BIG;
      while (off < len) {
        ssize_t n = write(c, reply + off, len - off);
        if (n <= 0) break;
        off += (size_t)n;
      }
    }
    close(c);
  }
}

static int start_server(void) {
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  socklen_t len = sizeof a;
  pthread_t t;
  if ((listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
      bind(listener, (struct sockaddr *)&a, sizeof a) != 0 || listen(listener, 16) != 0 ||
      getsockname(listener, (struct sockaddr *)&a, &len) != 0 ||
      pthread_create(&t, NULL, serve, NULL) != 0) return -1;
  pthread_detach(t);
  port = ntohs(a.sin_port);
  return 0;
}

/* ---------------------------------------------------------------------
** the rounds
** ------------------------------------------------------------------- */

/* Lua code run with the failing allocator; `core` is a global. */
static char script_request[512], script_credentials[BIG + 200], script_cache[600];
static const char *const script_base64 = "return core.base64_encode(string.rep('b', 262144))";

/* Runs script in a fresh state with the allocator failing after k
** allocations (counted from the call); LUA_OK or the error status. */
static int round_with(const char *script, long k) {
  lua_State *L = lua_newstate(failing_alloc, NULL);
  luaL_openlibs(L);
  luaL_requiref(L, "unsandbox.core", luaopen_unsandbox_core, 0);
  lua_setglobal(L, "core");
  int rc = luaL_loadstring(L, script);
  if (rc == LUA_OK) {
    budget = k;
    rc = lua_pcall(L, 0, 1, 0);
    budget = -1;
  }
  lua_close(L);
  return rc;
}

/* Sweeps k from 0 until the call succeeds (at most 400 rounds). */
static void sweep(const char *name, const char *script) {
  int mem_errors = 0, succeeded = 0;
  round_with(script, -1);                       /* warm-up: libcurl's and libc's one-time state */
  struct mallinfo2 before = mallinfo2();
  for (long k = 0; k < 400 && !succeeded; k++) {
    int rc = round_with(script, k);
    if (rc == LUA_ERRMEM) mem_errors++;
    else if (rc == LUA_OK) succeeded = 1;
  }
  struct mallinfo2 after = mallinfo2();
  long grown = (long)after.uordblks - (long)before.uordblks;
  ok(succeeded && mem_errors > 0, "%s: memory errors at every allocation, then success (%d errors)",
     name, mem_errors);
  ok(grown < BIG / 2, "%s: nothing leaked over the rounds (heap grew by %ld bytes)", name, grown);
}

int main(void) {
  if (start_server() != 0) { perror("server"); return 2; }
  snprintf(script_request, sizeof script_request,
           "local c = core.client{url = 'http://127.0.0.1:%d', public_key = 'pk', secret_key = 'sk'}\n"
           "local r = c:request('GET', '/x', nil, {auth = false})\n"
           "c:close()\n"
           "assert(r and #r.body == %d)\n", port, BIG);
  char *secret = malloc(BIG + 1);
  memset(secret, 's', BIG);
  secret[BIG] = '\0';
  snprintf(script_credentials, sizeof script_credentials,
           "return core.credentials{public_key = 'pk', secret_key = '%s'}", secret);
  free(secret);
  char dir[] = "/tmp/unsb-box-XXXXXX";
  if (!mkdtemp(dir)) { perror("mkdtemp"); return 2; }
  snprintf(script_cache, sizeof script_cache,
           "assert(core.cache_write('%s/c', string.rep('c', 262144)))\n"
           "return core.cache_read('%s/c', 3600)", dir, dir);
  sweep("c:request", script_request);
  sweep("core.credentials", script_credentials);
  sweep("core.base64_encode", script_base64);
  sweep("core.cache_read", script_cache);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
  return tap_done();
}
