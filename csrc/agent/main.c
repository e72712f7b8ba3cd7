/*
** unsandboxd-agent: the one program that touches a tree a sandbox can
** write. unsandboxd starts it inside the sandbox, as the sandbox's own
** user, seeing only that tree, so even a bug here cannot reach the host.
**
**   unsandboxd-agent archive DIR [--exclude NAME]... [--max-bytes N] [--max-entries N]
**   unsandboxd-agent extract DIR [--max-bytes N] [--max-entries N] [--max-file-bytes N]
**   unsandboxd-agent runtime --root DIR --control-fd N
**
** Processes of the same uid run next to it and are hostile, so the first
** thing it does is make itself undumpable (no ptrace, no /proc/PID/mem).
** A failure is one line "unsandboxd-agent: <what>: <why>" on stderr and a
** non-zero exit status (1 failure, 2 usage).
*/
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "agent/err.h"
#include "agent/fsfd.h"
#include "agent/runtime.h"
#include "agent/tar.h"

static int usage(const char *why) {
  fprintf(stderr, "unsandboxd-agent: usage: %s\n", why);
  return 2;
}

static int die(const char *what, const ag_err *e) {
  fprintf(stderr, "unsandboxd-agent: %s: %s\n", what, e->msg);
  return 1;
}

/* A decimal count, 1 .. 2^62: no sign, no spaces, no suffix. */
static int parse_count(const char *s, unsigned long long *out) {
  unsigned long long v = 0;
  if (!s || !*s || strlen(s) > 19) return -1;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9') return -1;
    v = v * 10 + (unsigned long long)(*p - '0');
  }
  if (v == 0 || v > (1ULL << 62)) return -1;
  *out = v;
  return 0;
}

static int parse_tar_args(int argc, char **argv, int archive, ag_tar_limits *lim,
                          const char **exclude) {
  for (int i = 3; i < argc; i++) {
    const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    unsigned long long *slot = NULL;
    if (archive && !strcmp(opt, "--exclude")) {
      if (!val || !*val || strchr(val, '/') || lim->n_exclude >= 64) return -1;
      exclude[lim->n_exclude++] = val;
      i++;
      continue;
    }
    if (!strcmp(opt, "--max-bytes")) slot = &lim->max_bytes;
    else if (!strcmp(opt, "--max-entries")) slot = &lim->max_entries;
    else if (!archive && !strcmp(opt, "--max-file-bytes")) slot = &lim->max_file_bytes;
    if (!slot || parse_count(val, slot) < 0) return -1;
    i++;
  }
  lim->exclude = exclude;
  return 0;
}

static int run_archive(int argc, char **argv) {
  const char *exclude[64];
  ag_tar_limits lim;
  ag_tar_stats st;
  ag_err e;
  int dirfd;
  ag_tar_limits_default(&lim);
  if (argc < 3 || parse_tar_args(argc, argv, 1, &lim, exclude) < 0)
    return usage("archive DIR [--exclude NAME]... [--max-bytes N] [--max-entries N]");
  if ((dirfd = ag_open_root(argv[2])) < 0) {
    ag_sysfail(&e, "%s", argv[2]);
    return die("archive", &e);
  }
  if (ag_tar_create(dirfd, STDOUT_FILENO, &lim, &st, &e) < 0) return die("archive", &e);
  close(dirfd);
  return 0;
}

static int run_extract(int argc, char **argv) {
  ag_tar_limits lim;
  ag_tar_stats st;
  ag_err e;
  int dirfd;
  ag_tar_limits_default(&lim);
  if (argc < 3 || parse_tar_args(argc, argv, 0, &lim, NULL) < 0)
    return usage("extract DIR [--max-bytes N] [--max-entries N] [--max-file-bytes N]");
  if ((dirfd = ag_open_root(argv[2])) < 0) {
    ag_sysfail(&e, "%s", argv[2]);
    return die("extract", &e);
  }
  if (ag_tar_extract(STDIN_FILENO, dirfd, &lim, &st, &e) < 0) return die("extract", &e);
  close(dirfd);
  printf("{\"files\":%llu,\"directories\":%llu,\"symlinks\":%llu,\"bytes\":%llu}\n",
         st.files, st.directories, st.symlinks, st.bytes);
  if (fflush(stdout) != 0) {
    ag_sysfail(&e, "stdout");
    return die("extract", &e);
  }
  return 0;
}

static int run_runtime(int argc, char **argv) {
  const char *root = NULL;
  unsigned long long fd = 0;
  if (argc != 6) return usage("runtime --root DIR --control-fd N");
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--root")) root = argv[i + 1];
    else if (!strcmp(argv[i], "--control-fd") && parse_count(argv[i + 1], &fd) == 0 && fd >= 3 && fd <= 65535) {}
    else return usage("runtime --root DIR --control-fd N");
  }
  if (!root || fd < 3) return usage("runtime --root DIR --control-fd N");
  return ag_runtime_main(root, (int)fd);
}

int main(int argc, char **argv) {
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
    fprintf(stderr, "unsandboxd-agent: prctl(PR_SET_DUMPABLE): %s\n", strerror(errno));
    return 1;
  }
  /* a server that goes away mid-write must not kill us with SIGPIPE */
  signal(SIGPIPE, SIG_IGN);
  if (argc < 2) return usage("unsandboxd-agent archive|extract|runtime ...");
  if (!strcmp(argv[1], "archive")) return run_archive(argc, argv);
  if (!strcmp(argv[1], "extract")) return run_extract(argc, argv);
  if (!strcmp(argv[1], "runtime")) return run_runtime(argc, argv);
  return usage("unsandboxd-agent archive|extract|runtime ...");
}
