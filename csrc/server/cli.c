/*
** Command-line helpers and subcommands (see cli.h). Credentials go to
** stdout as NAME=value lines, the same form the server prints at start,
** so `eval "$(unsandboxd keys add ...)"` works; nothing else is printed
** there.
*/
#include "server/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/cp/cp.h"
#include "server/cp/auth/keys.h"
#include "core/cpshapes.h"
#include "server/cp/store.h"
#include "server/cp/tables/tenants.h"
#include "server/fsutil.h"
#include "server/store/keys.h"
#include "server/store/store.h"

void ux_die_usage(const char *fmt, const char *arg) {
  fprintf(stderr, "unsandboxd: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\nTry 'unsandboxd --help'.\n");
  exit(2);
}

long ux_parse_num(const char *opt, const char *s, long lo, long hi) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) {
    fprintf(stderr, "unsandboxd: %s wants an integer between %ld and %ld, got '%s'\n"
                    "Try 'unsandboxd --help'.\n", opt, lo, hi, s);
    exit(2);
  }
  return v;
}

/* The server later runs with "/" as its working directory, so the data
** directory is kept as an absolute path. */
void ux_set_data_dir(ux_config *cfg, const char *dir) {
  char abs[PATH_MAX];
  if (ux_mkdir_p(dir, 0700) < 0 || !realpath(dir, abs)) {
    fprintf(stderr, "unsandboxd: cannot create data directory %s: %s\n", dir, strerror(errno));
    exit(1);
  }
  if (strlen(abs) >= sizeof cfg->data - 200) {
    fprintf(stderr, "unsandboxd: data directory path too long\n");
    exit(1);
  }
  snprintf(cfg->data, sizeof cfg->data, "%s", abs);
}

int ux_env_file_path(const char *arg, char *out, size_t outlen) {
  char cwd[PATH_MAX];
  int n;
  if (arg[0] == '\0') return -1;
  if (arg[0] == '/') n = snprintf(out, outlen, "%s", arg);
  else if (getcwd(cwd, sizeof cwd)) n = snprintf(out, outlen, "%s/%s", cwd, arg);
  else return -1;
  return n > 0 && (size_t)n < outlen ? 0 : -1;
}

int ux_env_file_write(const char *path, const char *text, char *err, size_t errlen) {
  char tmp[PATH_MAX + 32];
  size_t len = strlen(text), done = 0;
  snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    snprintf(err, errlen, "--env-file: cannot create %s: %s", tmp, strerror(errno));
    return -1;
  }
  while (done < len) {
    ssize_t w = write(fd, text + done, len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    done += (size_t)w;
  }
  int ok = done == len && fsync(fd) == 0;
  if (close(fd) != 0) ok = 0;
  if (!ok || rename(tmp, path) != 0) {
    snprintf(err, errlen, "--env-file: cannot write %s: %s", path, strerror(errno));
    unlink(tmp);
    return -1;
  }
  return 0;
}

void ux_env_file_remove(const char *path, const char *text) {
  char buf[4096];
  size_t len = strlen(text);
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t n = len < sizeof buf ? read(fd, buf, sizeof buf) : -1;
  close(fd);
  if (n == (ssize_t)len && memcmp(buf, text, len) == 0) unlink(path);
}

typedef struct opts {
  const char *data, *tenant, *display, *id;
  int admin, act, maxw, maxr;
} opts;

static void parse(int argc, char **argv, opts *o, const char *what) {
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--data") && v) { o->data = v; i++; }
    else if (!strncmp(a, "--data=", 7)) o->data = a + 7;
    else if (!strcmp(a, "--tenant") && v) { o->tenant = v; i++; }
    else if (!strcmp(a, "--admin")) o->admin = 1;
    else if (!strcmp(a, "--act-as-subjects")) o->act = 1;
    else if (!strcmp(a, "--display-name") && v) { o->display = v; i++; }
    else if (!strcmp(a, "--max-workspaces") && v) { o->maxw = (int)ux_parse_num(a, v, 1, 100000); i++; }
    else if (!strcmp(a, "--max-runtimes") && v) { o->maxr = (int)ux_parse_num(a, v, 1, 10000); i++; }
    else if (a[0] != '-' && !o->id) o->id = a;
    else ux_die_usage("%s: unexpected argument", what);
  }
  if (!o->data) ux_die_usage("%s needs --data DIR", what);
}

/* The store of o->data with the Control Plane's tables. */
static ux_store *open_store(const opts *o, ux_server *srv) {
  char err[512];
  ux_set_data_dir(&srv->cfg, o->data);
  if (!(srv->store = ux_store_open(srv->cfg.data, err, sizeof err))) {
    fprintf(stderr, "unsandboxd: %s\n", err);
    return NULL;
  }
  ux_cp cp;
  memset(&cp, 0, sizeof cp);
  cp.srv = srv;
  if (ux_cp_store_init(&cp, err, sizeof err) != 0) {
    fprintf(stderr, "unsandboxd: %s\n", err);
    ux_store_close(srv->store);
    return NULL;
  }
  return srv->store;
}

static int keys_add(int argc, char **argv) {
  opts o = { 0 };
  ux_server srv;
  memset(&srv, 0, sizeof srv);
  parse(argc, argv, &o, "keys add");
  if (o.admin && o.tenant) ux_die_usage("keys add: --admin and --tenant exclude each other%s", "");
  if (!open_store(&o, &srv)) return 1;
  int rc = 1;
  if (!o.admin && !o.tenant) {                     /* the execution API's pair */
    char pk[UX_PK_LEN + 1], sk[UX_SK_LEN + 1];
    if (ux_keys_add(srv.store, pk, sk, 0) == 0) {
      printf("UNSANDBOX_PUBLIC_KEY=%s\nUNSANDBOX_SECRET_KEY=%s\n", pk, sk);
      rc = 0;
    }
  } else {
    int known = o.tenant && ux_tenants_state(srv.store, o.tenant) > UX_TENANT_UNKNOWN;
    ux_cp cp = { .srv = &srv };
    json_t *key = (o.admin || known) ? ux_cp_key_issue(&cp, o.tenant, "unsandboxd keys add", o.act, 0) : NULL;
    if (key) {
      printf("SANDBOX_TOKEN=%s\n", json_string_value(json_object_get(key, "api_key")));
      rc = 0;
    } else if (o.tenant && !known) {
      fprintf(stderr, "unsandboxd: unknown tenant: %s (unsandboxd tenants add %s)\n", o.tenant, o.tenant);
    }
    json_decref(key);
  }
  ux_store_close(srv.store);
  if (rc) fprintf(stderr, "unsandboxd: cannot create a key\n");
  return rc || fflush(stdout) != 0;
}

static int tenants_add(int argc, char **argv) {
  opts o = { .maxw = 64, .maxr = 4 };
  ux_server srv;
  memset(&srv, 0, sizeof srv);
  parse(argc, argv, &o, "tenants add");
  if (!o.id || !unsb_valid_tenant_id(o.id) || !strcmp(o.id, "management"))
    ux_die_usage("tenants add: a tenant id ([a-z0-9-], at most 32, not 'management') is needed, got '%s'",
                 o.id ? o.id : "");
  if (!open_store(&o, &srv)) return 1;
  int n = ux_tenants_add(srv.store, o.id, o.display ? o.display : o.id, (long long)o.maxw,
                         (long long)o.maxr, (long long)ux_now());
  ux_store_close(srv.store);
  if (n < 0) { fprintf(stderr, "unsandboxd: cannot create the tenant\n"); return 1; }
  if (n == 0) { fprintf(stderr, "unsandboxd: tenant %s already exists\n", o.id); return 1; }
  printf("SANDBOX_TENANT=%s\n", o.id);
  return fflush(stdout) != 0;
}

int ux_cli_subcommand(int argc, char **argv) {
  if (argc < 2) return -1;
  int keys = !strcmp(argv[1], "keys"), tenants = !strcmp(argv[1], "tenants");
  if (!keys && !tenants) return -1;
  if (argc < 3 || strcmp(argv[2], "add") != 0)
    ux_die_usage("unknown subcommand '%s' (want: keys add, tenants add)", argc >= 3 ? argv[2] : "");
  return keys ? keys_add(argc - 3, argv + 3) : tenants_add(argc - 3, argv + 3);
}
