/*
** The bench's baselines, measured from C so that neither a shell nor Lua
** sits between the clock and what is measured:
**
**   tool spawn N [--uid UID] [--open FD=PATH]... -- PROG ARGS...
**       starts PROG N times (posix_spawn, stdout and stderr to /dev/null,
**       or, with --uid, a child that drops to UID first: the bare bwrap
**       spawn runs as an unprivileged user, as the server's sandboxes
**       do; --open: PATH opened read-only at FD in every child, as the
**       server passes bwrap the /etc files it copies in) and prints each
**       start-to-reaped time in microseconds;
**   tool http N URL
**       one libcurl easy handle, keep-alive: a warm-up GET, then N timed
**       GETs, each time in microseconds (the raw client overhead that the
**       Lua client's own GET is compared with).
**
** Exit 0 when every start or request succeeded, else 1 (with a message).
*/
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAX_OPEN 16
static struct { int fd; const char *path; } opens[MAX_OPEN];
static int n_opens;

static long long now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/* One start with a uid change: fork (the tool is small), drop, exec. */
static pid_t start_as(uid_t uid, char **argv) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  int null = open("/dev/null", O_RDWR);
  if (null < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0) _exit(126);
  for (int i = 0; i < n_opens; i++) {
    int fd = open(opens[i].path, O_RDONLY);
    if (fd < 0 || (fd != opens[i].fd && (dup2(fd, opens[i].fd) < 0 || close(fd) < 0))) _exit(126);
  }
  if (setgroups(0, NULL) != 0 || setresgid(uid, uid, uid) != 0 || setresuid(uid, uid, uid) != 0)
    _exit(126);
  execve(argv[0], argv, environ);
  _exit(127);
}

static int spawn(int n, long uid, char **argv) {
  posix_spawn_file_actions_t fa;
  if (posix_spawn_file_actions_init(&fa) != 0 ||
      posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0) != 0 ||
      posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0) != 0) {
    fprintf(stderr, "tool: posix_spawn_file_actions: %s\n", strerror(errno));
    return 1;
  }
  for (int i = 0; i < n_opens; i++)
    if (posix_spawn_file_actions_addopen(&fa, opens[i].fd, opens[i].path, O_RDONLY, 0) != 0) {
      fprintf(stderr, "tool: posix_spawn_file_actions: %s\n", strerror(errno));
      return 1;
    }
  int bad = 0;
  for (int i = 0; i < n && !bad; i++) {
    long long t0 = now_us();
    pid_t pid;
    int status = 0;
    if (uid >= 0) pid = start_as((uid_t)uid, argv);
    else if ((errno = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ)) != 0) pid = -1;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
      fprintf(stderr, "tool: cannot run %s: %s\n", argv[0], strerror(errno));
      bad = 1;
      break;
    }
    long long t1 = now_us();
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "tool: %s exited with status %d\n", argv[0], status);
      bad = 1;
    }
    printf("%lld\n", t1 - t0);
  }
  posix_spawn_file_actions_destroy(&fa);
  return bad;
}

static size_t discard(char *p, size_t s, size_t n, void *ud) { (void)p; (void)ud; return s * n; }

static int http(int n, const char *url) {
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) { fprintf(stderr, "tool: curl init\n"); return 1; }
  CURL *h = curl_easy_init();
  if (!h) { fprintf(stderr, "tool: curl_easy_init\n"); return 1; }
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  int bad = 0;
  for (int i = -1; i < n && !bad; i++) {          /* -1: the warm-up */
    long long t0 = now_us();
    CURLcode rc = curl_easy_perform(h);
    long long t1 = now_us();
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK || status != 200) {
      fprintf(stderr, "tool: GET %s: %s (status %ld)\n", url, curl_easy_strerror(rc), status);
      bad = 1;
    } else if (i >= 0) {
      printf("%lld\n", t1 - t0);
    }
  }
  curl_easy_cleanup(h);
  curl_global_cleanup();
  return bad;
}

static int usage(void) {
  fprintf(stderr, "usage: tool spawn N [--uid UID] [--open FD=PATH]... -- PROG ARGS...\n"
                  "       tool http N URL\n");
  return 2;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc < 4) return usage();
  int n = atoi(argv[2]);
  if (n < 1 || n > 100000) return usage();
  if (!strcmp(argv[1], "http") && argc == 4) return http(n, argv[3]);
  if (strcmp(argv[1], "spawn") != 0) return usage();
  long uid = -1;
  int i = 3;
  if (!strcmp(argv[i], "--uid") && i + 2 < argc) { uid = atol(argv[i + 1]); i += 2; }
  while (!strcmp(argv[i], "--open") && i + 2 < argc) {
    char *eq = strchr(argv[i + 1], '=');
    int fd = eq ? atoi(argv[i + 1]) : -1;
    if (fd < 3 || !eq[1] || n_opens == MAX_OPEN) return usage();
    opens[n_opens].fd = fd;
    opens[n_opens++].path = eq + 1;
    i += 2;
  }
  if (strcmp(argv[i], "--") != 0 || i + 1 >= argc) return usage();
  return spawn(n, uid, argv + i + 1);
}
