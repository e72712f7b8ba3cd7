/*
** Helpers shared by the agent_*_test.c files: where the agent binary is,
** temporary trees, running a mode with stdin/stdout/stderr captured (every
** wait bounded), and building hand-made (hostile) gzip tars with
** libarchive. Static functions in a header, like tap.h, because each test
** is one translation unit linked on its own.
*/
#ifndef AGENT_UTIL_H
#define AGENT_UTIL_H

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>
#include <dirent.h>
#include <openssl/evp.h>
#include <sys/socket.h>
#include "tests/tap.h"   /* ok(), for rt_refused */

static char agent_bin[PATH_MAX + 32];

/* bin/unsandboxd-agent relative to this test binary (build/tests/x), or
** $AGENT_TEST_BIN (e.g. a script that runs the agent under valgrind). */
static __attribute__((unused)) void agent_locate(void) {
  char self[PATH_MAX];
  const char *over = getenv("AGENT_TEST_BIN");
  /* the agent may answer (and close) before a big request is all written */
  signal(SIGPIPE, SIG_IGN);
  if (over && *over) {
    snprintf(agent_bin, sizeof agent_bin, "%s", over);
    return;
  }
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  char *slash;
  if (n <= 0) { perror("readlink /proc/self/exe"); exit(1); }
  self[n] = '\0';
  for (int i = 0; i < 3 && (slash = strrchr(self, '/')); i++) *slash = '\0';
  snprintf(agent_bin, sizeof agent_bin, "%s/bin/unsandboxd-agent", self);
  if (access(agent_bin, X_OK) != 0) { fprintf(stderr, "no agent at %s\n", agent_bin); exit(1); }
}

static __attribute__((unused)) double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static __attribute__((unused)) char *mk_tmp(const char *tag) {
  char *p;
  if (asprintf(&p, "/tmp/agent-test-%s-XXXXXX", tag) < 0 || !mkdtemp(p)) {
    perror("mkdtemp");
    exit(1);
  }
  return p;
}

/* Removes a test-made tree. The tests made it themselves, as root, and no
** sandbox writes into it, so a plain rm is fine here. */
static __attribute__((unused)) void rm_tree(const char *p) {
  char *cmd;
  if (strncmp(p, "/tmp/agent-test-", 16) != 0) return;
  if (asprintf(&cmd, "chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", p, p) < 0) return;
  if (system(cmd) != 0) fprintf(stderr, "# could not remove %s\n", p);
  free(cmd);
}

static __attribute__((unused)) void write_file(const char *path, const char *data, size_t len, mode_t mode) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0 || write(fd, data, len) != (ssize_t)len) { perror(path); exit(1); }
  fchmod(fd, mode);
  close(fd);
}

static __attribute__((unused)) char *read_file(const char *path, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat s;
  char *buf;
  if (fd < 0 || fstat(fd, &s) < 0) { if (fd >= 0) close(fd); return NULL; }
  buf = malloc((size_t)s.st_size + 1);
  if (!buf || read(fd, buf, (size_t)s.st_size) != s.st_size) { close(fd); free(buf); return NULL; }
  buf[s.st_size] = '\0';
  if (len) *len = (size_t)s.st_size;
  close(fd);
  return buf;
}

typedef struct {
  int status;        /* exit status, or 128+signal, or -1 when it timed out */
  char *out;         /* stdout, NUL-terminated */
  size_t out_len;
  char err[4096];    /* stderr */
} run_result;

/* Runs the agent with argv (argv[0] is replaced), stdin from in_fd (or
** /dev/null), capturing stdout and stderr; killed after limit_s seconds. */
static __attribute__((unused)) run_result run_agent(char *const argv[], int in_fd, double limit_s) {
  run_result r = { 0, NULL, 0, "" };
  int po[2], pe[2];
  size_t cap = 65536, elen = 0;
  double end = now_s() + limit_s;
  pid_t pid;
  int open_fds = 2, st;
  if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) { perror("pipe"); exit(1); }
  r.out = malloc(cap);
  if ((pid = fork()) == 0) {
    int in = in_fd >= 0 ? in_fd : open("/dev/null", O_RDONLY);
    dup2(in, 0); dup2(po[1], 1); dup2(pe[1], 2);
    execv(agent_bin, argv);
    _exit(127);
  }
  close(po[1]); close(pe[1]);
  while (open_fds > 0) {
    struct pollfd p[2] = { { po[0], POLLIN, 0 }, { pe[0], POLLIN, 0 } };
    int left = (int)((end - now_s()) * 1000);
    if (left <= 0 || poll(p, 2, left) <= 0) { kill(pid, SIGKILL); r.status = -1; break; }
    if (p[0].revents && po[0] >= 0) {
      if (r.out_len + 65536 > cap) { cap *= 2; r.out = realloc(r.out, cap); }
      ssize_t n = read(po[0], r.out + r.out_len, cap - r.out_len - 1);
      if (n <= 0) { close(po[0]); po[0] = -1; open_fds--; } else r.out_len += (size_t)n;
    }
    if (p[1].revents && pe[0] >= 0) {
      ssize_t n = read(pe[0], r.err + elen, sizeof r.err - 1 - elen);
      if (n <= 0) { close(pe[0]); pe[0] = -1; open_fds--; } else elen += (size_t)n;
    }
  }
  if (po[0] >= 0) close(po[0]);
  if (pe[0] >= 0) close(pe[0]);
  r.out[r.out_len] = '\0';
  r.err[elen] = '\0';
  waitpid(pid, &st, 0);
  if (r.status != -1)
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

/* One member of a hand-made archive. */
typedef struct {
  const char *name;
  char type;            /* 'f' file, 'd' dir, 'l' symlink, 'h' hard link, 'p' fifo, 'c' char device */
  const char *data;     /* file content, or link target */
  long long size;       /* declared size when data is NULL (the body is zeros) */
  mode_t mode;
} member;

/* Writes a gzip pax tar of the members to path. */
static __attribute__((unused)) void make_tgz(const char *path, const member *m, size_t n) {
  struct archive *w = archive_write_new();
  static char zeros[65536];
  archive_write_add_filter_gzip(w);
  archive_write_set_format_pax_restricted(w);
  if (archive_write_open_filename(w, path) != ARCHIVE_OK) { fprintf(stderr, "open %s\n", path); exit(1); }
  for (size_t i = 0; i < n; i++) {
    struct archive_entry *e = archive_entry_new();
    long long size = m[i].data && m[i].type == 'f' ? (long long)strlen(m[i].data) : m[i].size;
    archive_entry_set_pathname(e, m[i].name);
    archive_entry_set_perm(e, m[i].mode ? m[i].mode : 0644);
    archive_entry_set_mtime(e, 1000000000, 0);
    switch (m[i].type) {
    case 'd': archive_entry_set_filetype(e, AE_IFDIR); break;
    case 'l': archive_entry_set_filetype(e, AE_IFLNK); archive_entry_set_symlink(e, m[i].data); break;
    case 'h': archive_entry_set_filetype(e, AE_IFREG); archive_entry_set_hardlink(e, m[i].data); break;
    case 'p': archive_entry_set_filetype(e, AE_IFIFO); break;
    case 'c': archive_entry_set_filetype(e, AE_IFCHR); archive_entry_set_rdev(e, makedev(1, 3)); break;
    default: archive_entry_set_filetype(e, AE_IFREG); archive_entry_set_size(e, size); break;
    }
    archive_write_header(w, e);
    if (m[i].type == 'f') {
      if (m[i].data) archive_write_data(w, m[i].data, strlen(m[i].data));
      else for (long long left = size; left > 0; left -= (long long)sizeof zeros)
        archive_write_data(w, zeros, left < (long long)sizeof zeros ? (size_t)left : sizeof zeros);
    }
    archive_entry_free(e);
  }
  archive_write_close(w);
  archive_write_free(w);
}

/* 1 when s (NUL-terminated) is valid UTF-8: an independent check (iconv
** would do too), so the agent's decoder is not tested against itself. */
static __attribute__((unused)) int ag_utf8_ok(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    int n = *p < 0x80 ? 0 : (*p >> 5) == 6 ? 1 : (*p >> 4) == 14 ? 2 : (*p >> 3) == 30 ? 3 : -1;
    if (n < 0) return 0;
    for (int i = 1; i <= n; i++) if ((p[i] & 0xC0) != 0x80) return 0;
    p += n + 1;
  }
  return 1;
}

/* Alive and not a zombie. */
static __attribute__((unused)) int proc_alive(long pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  int fd = open(path, O_RDONLY);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  char *rp = strrchr(buf, ')');
  return rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
}

/* Waits (bounded) until pid is gone. */
static __attribute__((unused)) int gone_within(long pid, double s) {
  for (double end = now_s() + s; now_s() < end;) {
    if (!proc_alive(pid)) return 1;
    t_sleep_ms(20);
  }
  return !proc_alive(pid);
}

/* Makes the empty file dir/rel (a command waiting for it goes on). */
static __attribute__((unused)) void touch_in(const char *dir, const char *rel) {
  char *p;
  if (asprintf(&p, "%s/%s", dir, rel) < 0) exit(1);
  int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) close(fd);
  free(p);
}

/* How many entries of dir have names starting with prefix. */
static __attribute__((unused)) int count_in(const char *dir, const char *prefix) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;
  while (d && (e = readdir(d)))
    n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
  if (d) closedir(d);
  return n;
}

/* The number a command wrote into dir/rel, or -1. */
static __attribute__((unused)) long read_pid_in(const char *dir, const char *rel) {
  char *p, *c;
  long v;
  if (asprintf(&p, "%s/%s", dir, rel) < 0) exit(1);
  c = read_file(p, NULL);
  free(p);
  v = c ? atol(c) : -1;
  free(c);
  return v;
}

/* ---- runtime mode: a client like the server's ---- */

typedef struct {
  pid_t pid;
  int control;          /* our end of the SOCK_SEQPACKET control channel */
} agent_rt;

#define RT_CONTROL_FD 7

/* Starts `unsandboxd-agent runtime --root ROOT --control-fd 7`, with the
** extra environment entries env (NULL-ended, may be NULL), in its own
** process group. With argv_prefix (e.g. a bwrap command line, NULL-ended)
** the agent runs under it, named agent there (NULL: agent_bin). */
static __attribute__((unused)) agent_rt rt_start_with(const char *root, char *const *env, char *const *argv_prefix,
                                                       const char *agent) {
  agent_rt a = { -1, -1 };
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) { perror("socketpair"); exit(1); }
  if ((a.pid = fork()) == 0) {
    char *argv[64];
    int n = 0;
    setpgid(0, 0);
    if (dup2(sv[1], RT_CONTROL_FD) < 0) _exit(126);
    for (char *const *e = env; e && *e; e++) putenv(*e);
    for (char *const *p = argv_prefix; p && *p && n < 50; p++) argv[n++] = *p;
    argv[n++] = (char *)(agent ? agent : agent_bin); argv[n++] = "runtime"; argv[n++] = "--root"; argv[n++] = (char *)root;
    argv[n++] = "--control-fd"; argv[n++] = "7"; argv[n] = NULL;
    execv(argv[0], argv);
    _exit(127);
  }
  setpgid(a.pid, a.pid);
  close(sv[1]);
  a.control = sv[0];
  return a;
}

static __attribute__((unused)) agent_rt rt_start(const char *root, char *const *env) { return rt_start_with(root, env, NULL, NULL); }

/* Sends a new request socket (and datafd when >= 0); returns our end. */
static __attribute__((unused)) int rt_open(agent_rt *a, int datafd) {
  int sv[2], fds[2];
  char cbuf[CMSG_SPACE(2 * sizeof(int))];
  struct iovec iov = { "r", 1 };
  struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf };
  struct cmsghdr *c;
  size_t nfd = datafd >= 0 ? 2 : 1;
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) return -1;
  fds[0] = sv[1]; fds[1] = datafd;
  memset(cbuf, 0, sizeof cbuf);
  m.msg_controllen = CMSG_SPACE(nfd * sizeof(int));
  c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET; c->cmsg_type = SCM_RIGHTS; c->cmsg_len = CMSG_LEN(nfd * sizeof(int));
  memcpy(CMSG_DATA(c), fds, nfd * sizeof(int));
  if (sendmsg(a->control, &m, MSG_NOSIGNAL) < 0) { close(sv[0]); close(sv[1]); return -1; }
  close(sv[1]);
  return sv[0];
}

/* Reads one "\n"-terminated frame within limit_s; NULL on EOF/timeout. */
static __attribute__((unused)) json_t *rt_frame(int fd, double limit_s, char *leftover, size_t cap, size_t *nleft) {
  double end = now_s() + limit_s;
  for (;;) {
    char *nl = *nleft ? memchr(leftover, '\n', *nleft) : NULL;
    if (nl) {
      json_error_t je;
      json_t *v = json_loadb(leftover, (size_t)(nl - leftover), JSON_ALLOW_NUL, &je);
      size_t used = (size_t)(nl - leftover) + 1;
      memmove(leftover, leftover + used, *nleft - used);
      *nleft -= used;
      if (!v) printf("# bad frame from the agent: %s\n", je.text);
      return v;
    }
    struct pollfd p = { fd, POLLIN, 0 };
    int left = (int)((end - now_s()) * 1000);
    if (left <= 0 || poll(&p, 1, left) <= 0) return NULL;
    if (*nleft >= cap) return NULL;
    ssize_t n = read(fd, leftover + *nleft, cap - *nleft);
    if (n <= 0) return NULL;
    *nleft += (size_t)n;
  }
}

typedef struct {
  json_t *final;        /* the final frame, or NULL */
  json_t *events;       /* array of event frames */
  double first_event_s; /* seconds from send to the first event (-1: none) */
  double final_s;
} rt_reply;

/* Sends one request (raw text, "\n" added) and collects the reply. */
static __attribute__((unused)) rt_reply rt_call_raw(agent_rt *a, const char *req, size_t len, int datafd, double limit_s) {
  rt_reply r = { NULL, json_array(), -1, -1 };
  static char *buf;
  size_t nleft = 0;
  double t0 = now_s();
  int fd = rt_open(a, datafd);
  if (!buf) buf = malloc(16u << 20);
  if (fd < 0) return r;
  /* a write cut short (the agent refused the frame and closed) still has
  ** an answer to read */
  if (write(fd, req, len) == (ssize_t)len && write(fd, "\n", 1) != 1) printf("# short write\n");
  for (;;) {
    json_t *f = rt_frame(fd, limit_s - (now_s() - t0), buf, 16u << 20, &nleft);
    if (!f) break;
    if (json_object_get(f, "event")) {
      if (r.first_event_s < 0) r.first_event_s = now_s() - t0;
      json_array_append_new(r.events, f);
      continue;
    }
    r.final = f;
    r.final_s = now_s() - t0;
    break;
  }
  close(fd);
  return r;
}

static __attribute__((unused)) rt_reply rt_call(agent_rt *a, const char *req) {
  return rt_call_raw(a, req, strlen(req), -1, 60);
}

static __attribute__((unused)) void rt_free(rt_reply *r) {
  json_decref(r->final);
  json_decref(r->events);
  r->final = r->events = NULL;
}

/* The result object of a successful reply, else NULL. */
static __attribute__((unused)) json_t *rt_result(const rt_reply *r) {
  if (!r->final || !json_is_true(json_object_get(r->final, "ok"))) return NULL;
  return json_object_get(r->final, "result");
}

/* "kind: message" of a failed reply, or "" (a static buffer). */
static __attribute__((unused)) const char *rt_error(const rt_reply *r) {
  static char out[1024];
  json_t *e = r->final ? json_object_get(r->final, "error") : NULL;
  snprintf(out, sizeof out, "%s: %s", e ? json_string_value(json_object_get(e, "kind")) : "",
           e ? json_string_value(json_object_get(e, "message")) : "");
  return e ? out : "";
}

/* The result of a call that must succeed (60 s at most), or NULL with
** the request and its error printed as a TAP comment. */
static __attribute__((unused)) json_t *rt_ok(agent_rt *a, const char *req, rt_reply *r) {
  *r = rt_call_raw(a, req, strlen(req), -1, 60);
  json_t *res = rt_result(r);
  if (!res) printf("# %.120s -> %s\n", req, rt_error(r));
  return res;
}

/* A test that the call is refused as invalid with part in its message. */
static __attribute__((unused)) void rt_refused(agent_rt *a, const char *req, const char *part) {
  rt_reply r = rt_call(a, req);
  ok(strstr(rt_error(&r), part) != NULL && !strncmp(rt_error(&r), "invalid", 7), "%.100s -> %s", req, rt_error(&r));
  rt_free(&r);
}

static __attribute__((unused)) const char *rs(json_t *o, const char *key) {
  const char *v = json_string_value(json_object_get(o, key));
  return v ? v : "(missing)";
}

static __attribute__((unused)) long long ri(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_integer(v) ? json_integer_value(v) : -99999;
}

/* Closes the control channel and waits (bounded) for the agent to exit. */
static __attribute__((unused)) int rt_stop(agent_rt *a) {
  int st = -1;
  close(a->control);
  for (double end = now_s() + 10; now_s() < end;) {
    pid_t p = waitpid(a->pid, &st, WNOHANG);
    if (p == a->pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    t_sleep_ms(10);
  }
  kill(-a->pid, SIGKILL);
  waitpid(a->pid, &st, 0);
  return -1;
}

#endif
