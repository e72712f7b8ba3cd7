/*
** Unit tests of unsandboxd's small helpers: ids, UTF-8 repair of
** program output, the allocation policy (mem.h) and the archive's
** error path before the agent is set up.
*/
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/ids.h"
#include "server/mem.h"
#include "server/sandbox/archive.h"
#include "server/http/reply.h"
#include "tests/tap.h"

static void test_ids(void) {
  ok(ux_valid_id("job_0123abcd"), "plain id is valid");
  ok(ux_valid_id("unsb-session-1.x"), "dots and dashes are valid");
  ok(!ux_valid_id(""), "empty id is invalid");
  ok(!ux_valid_id("."), "'.' is invalid");
  ok(!ux_valid_id(".."), "'..' is invalid");
  ok(!ux_valid_id("a/b"), "slash is invalid");
  ok(!ux_valid_id("a%2Fb"), "percent is invalid");
  char big[200];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  ok(!ux_valid_id(big), "ids over 128 bytes are invalid");
  char id[64];
  ok(ux_random_id(id, sizeof id, "job_", 12) == 0 && strlen(id) == 28 &&
     strspn(id + 4, "0123456789abcdef") == 24, "job ids are job_ + 24 hex");
}

static void test_utf8(void) {
  json_t *j = ux_json_bytes("ok \xc3\xa9", 5);
  is_str(json_string_value(j), "ok \xc3\xa9", "valid UTF-8 is kept");
  json_decref(j);
  j = ux_json_bytes("a\xff" "b\xc3", 4);
  is_str(json_string_value(j), "a\xef\xbf\xbd" "b\xef\xbf\xbd", "invalid bytes become U+FFFD");
  json_decref(j);
  j = ux_json_bytes("a\0b", 3);
  ok(json_string_length(j) == 3, "NUL bytes survive");
  json_decref(j);
  j = ux_json_bytes("\xed\xa0\x80", 3);
  is_str(json_string_value(j), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", "surrogates are invalid");
  json_decref(j);
}

/* Runs fn in a child and returns its wait status; its stderr goes to
** errbuf (at most len - 1 bytes). */
static int in_child(void (*fn)(void), char *errbuf, size_t len) {
  int pipefd[2], status = -1;
  if (pipe(pipefd) != 0) return -1;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pipefd[1], 2);
    close(pipefd[0]);
    fn();
    _exit(0);
  }
  close(pipefd[1]);
  size_t got = 0;
  ssize_t n;
  while (got + 1 < len && (n = read(pipefd[0], errbuf + got, len - 1 - got)) > 0) got += (size_t)n;
  errbuf[got] = '\0';
  /* our line, alone (a sanitizer may have written its own before it) */
  char *ours = strstr(errbuf, "unsandboxd:");
  if (ours) memmove(errbuf, ours, strlen(ours) + 1);
  errbuf[strcspn(errbuf, "\n")] = '\0';        /* one line in the TAP name */
  close(pipefd[0]);
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
  return status;
}

static void huge_malloc(void) { free(ux_xmalloc(SIZE_MAX / 2)); }
static void huge_calloc(void) { free(ux_xcalloc(SIZE_MAX / 4, 8)); }
static void huge_json(void) {
  /* jansson's own allocation of a string's copy goes through the hook */
  json_decref(json_stringn_nocheck("x", SIZE_MAX / 2));
}

static void test_mem(void) {
  char err[1024];
  int st = in_child(huge_malloc, err, sizeof err);
  ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "a failed malloc aborts the server");
  ok(strstr(err, "unsandboxd: out of memory (") != NULL, "... saying so on stderr (%s)", err);
  st = in_child(huge_calloc, err, sizeof err);
  ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "an overflowing calloc aborts, never wraps");
  json_malloc_t m = NULL;
  json_free_t f = NULL;
  json_get_alloc_funcs(&m, &f);
  ok(m == ux_xmalloc && f == free, "jansson allocates through the wrappers");
  st = in_child(huge_json, err, sizeof err);
  ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && strstr(err, "out of memory"),
     "a JSON value that cannot be allocated aborts the same way");
  char *d = ux_xstrndup("abcdef", 3);
  is_str(d, "abc", "xstrndup cuts");
  free(d);
  free(ux_xmalloc(0));
  ok(1, "xmalloc(0) is a valid pointer to free");
}

static void test_archive_unset(void) {
  char err[128];
  memset(err, 'X', sizeof err);            /* what an unset buffer would print */
  ok(ux_archive_tree(-1, -1, NULL, 0, err, sizeof err) == -1, "archiving without the agent fails");
  is_str(err, "the agent is not set up", "... with a message, never an unset buffer");
}

int main(void) {
  ux_mem_init();
  test_ids();
  test_utf8();
  test_mem();
  test_archive_unset();
  return tap_done();
}
