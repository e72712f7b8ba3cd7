/*
** unsandboxd: command line, start-up and shutdown.
**
**   unsandboxd --listen 127.0.0.1:0 --data DIR [--dev-keys] [--sync-ms N]
**              [--workers N] [--queue N] [--max-body BYTES] [--enable-faults]
**   unsandboxd keys add --data DIR
**
** The UNSANDBOX_URL line is printed only once the socket accepts
** connections, so a test harness can read it and connect at once.
** SIGTERM/SIGINT only write a byte to a pipe (async-signal-safe); main()
** then shuts down in order: stop accepting, cancel sandboxes, let
** in-flight responses finish, exit 0.
*/
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/http/faults.h"
#include "server/fsutil.h"
#include "server/http/http.h"
#include "server/exec/jobs.h"
#include "server/store/keys.h"
#include "server/http/routes.h"
#include "server/sandbox/runner.h"
#include "server/sandbox/volume.h"
#include "server/store/store.h"
#include "server/exec/svc.h"

/* The one process-global: the signal handler can reach nothing else. */
static int signal_pipe[2] = { -1, -1 };

static void on_signal(int sig) {
  int saved = errno;
  char c = (char)sig;
  if (write(signal_pipe[1], &c, 1) < 0) { /* nothing to do in a handler */ }
  errno = saved;
}

static void usage(FILE *f) {
  fprintf(f,
    "usage: unsandboxd --data DIR [--listen HOST:PORT] [options]\n"
    "       unsandboxd keys add --data DIR\n"
    "\n"
    "A local emulation of the unsandbox execution API.\n"
    "\n"
    "  --listen HOST:PORT   address to listen on (default 127.0.0.1:0 = any free port;\n"
    "                       IPv6 as [::1]:0)\n"
    "  --data DIR           state directory (created 0700)\n"
    "  --dev-keys           print a key pair at start-up (made once per data directory)\n"
    "  --sync-ms N          how long POST /execute waits for a result (default 5000)\n"
    "  --workers N          sandboxes run at once (default 2 x cores)\n"
    "  --queue N            jobs that may wait for a worker (default 64)\n"
    "  --max-body BYTES     largest request body (default 8388608)\n"
    "  --disk-mb N          disk of every session and service, and the size of an\n"
    "                       execute run's work directory (default 1024)\n"
    "  --disk-budget-mb N   most disk all sessions and services may claim together\n"
    "                       (default: half the free space of the data directory)\n"
    "  --enable-faults      allow POST /_faults (tests only)\n"
    "  --version, --help\n"
    "\n"
    "Prints UNSANDBOX_URL=... (and the dev keys) on stdout once listening.\n");
}

static void die_usage(const char *fmt, const char *arg) {
  fprintf(stderr, "unsandboxd: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\nTry 'unsandboxd --help'.\n");
  exit(2);
}

static long parse_num(const char *opt, const char *s, long lo, long hi) {
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

/* Creates the data directory and stores its absolute path: the server
** later runs with "/" as its working directory (see snapshot.c). */
static void set_data_dir(ux_config *cfg, const char *dir) {
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

static int keys_add(int argc, char **argv) {
  const char *data = NULL;
  char pk[UX_PK_LEN + 1], sk[UX_SK_LEN + 1], err[512];
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--data") && i + 1 < argc) data = argv[++i];
    else if (!strncmp(argv[i], "--data=", 7)) data = argv[i] + 7;
    else die_usage("keys add: unexpected argument '%s'", argv[i]);
  }
  if (!data) die_usage("keys add needs --data DIR%s", "");
  ux_config cfg;
  set_data_dir(&cfg, data);
  ux_store *st = ux_store_open(cfg.data, err, sizeof err);
  if (!st) { fprintf(stderr, "unsandboxd: %s\n", err); return 1; }
  int rc = ux_keys_add(st, pk, sk, 0);
  ux_store_close(st);
  if (rc < 0) { fprintf(stderr, "unsandboxd: cannot create a key\n"); return 1; }
  printf("UNSANDBOX_PUBLIC_KEY=%s\nUNSANDBOX_SECRET_KEY=%s\n", pk, sk);
  return fflush(stdout) == 0 ? 0 : 1;
}

static void parse_args(int argc, char **argv, ux_config *cfg) {
  enum { OPT_LISTEN = 256, OPT_DATA, OPT_DEV, OPT_SYNC, OPT_WORKERS, OPT_QUEUE, OPT_BODY,
         OPT_DISK, OPT_BUDGET, OPT_FAULTS, OPT_VERSION, OPT_HELP };
  static const struct option opts[] = {
    { "listen", required_argument, NULL, OPT_LISTEN },
    { "data", required_argument, NULL, OPT_DATA },
    { "dev-keys", no_argument, NULL, OPT_DEV },
    { "sync-ms", required_argument, NULL, OPT_SYNC },
    { "workers", required_argument, NULL, OPT_WORKERS },
    { "queue", required_argument, NULL, OPT_QUEUE },
    { "max-body", required_argument, NULL, OPT_BODY },
    { "disk-mb", required_argument, NULL, OPT_DISK },
    { "disk-budget-mb", required_argument, NULL, OPT_BUDGET },
    { "enable-faults", no_argument, NULL, OPT_FAULTS },
    { "version", no_argument, NULL, OPT_VERSION },
    { "help", no_argument, NULL, OPT_HELP },
    { NULL, 0, NULL, 0 },
  };
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const char *data = NULL;
  cfg->listen = "127.0.0.1:0";
  cfg->sync_ms = 5000;
  cfg->workers = (int)(2 * (cores > 0 ? cores : 1));
  cfg->queue = 64;
  cfg->max_body = 8u << 20;
  cfg->disk_mb = 1024;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
    case OPT_LISTEN: cfg->listen = optarg; break;
    case OPT_DATA: data = optarg; break;
    case OPT_DEV: cfg->dev_keys = 1; break;
    case OPT_SYNC: cfg->sync_ms = parse_num("--sync-ms", optarg, 0, 600000); break;
    case OPT_WORKERS: cfg->workers = (int)parse_num("--workers", optarg, 1, 256); break;
    case OPT_QUEUE: cfg->queue = (int)parse_num("--queue", optarg, 0, 100000); break;
    case OPT_BODY: cfg->max_body = (size_t)parse_num("--max-body", optarg, 1, 1L << 30); break;
    case OPT_DISK: cfg->disk_mb = parse_num("--disk-mb", optarg, 16, 1L << 20); break;
    case OPT_BUDGET: cfg->disk_budget_mb = parse_num("--disk-budget-mb", optarg, 16, 1L << 30); break;
    case OPT_FAULTS: cfg->enable_faults = 1; break;
    case OPT_VERSION: printf("unsandboxd %s\n", UX_VERSION); exit(0);
    case OPT_HELP: usage(stdout); exit(0);
    default:
      if (optopt) die_usage("option needs a value or is unknown: %s", argv[optind - 1]);
      die_usage("unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc) die_usage("unexpected argument '%s'", argv[optind]);
  if (!data) die_usage("--data DIR is required%s", "");
  set_data_dir(cfg, data);
}

static void install_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &sa, NULL);
  if (pipe2(signal_pipe, O_CLOEXEC) < 0) { perror("unsandboxd: pipe"); exit(1); }
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
}

int main(int argc, char **argv) {
  char err[512], url[400];
  if (argc >= 2 && !strcmp(argv[1], "keys")) {
    if (argc >= 3 && !strcmp(argv[2], "add")) return keys_add(argc - 3, argv + 3);
    die_usage("unknown keys subcommand '%s' (want: keys add --data DIR)", argc >= 3 ? argv[2] : "");
  }
  ux_server srv;
  memset(&srv, 0, sizeof srv);
  parse_args(argc, argv, &srv.cfg);
  /* volumes first: entering a private mount namespace needs a process
  ** that has no other thread yet */
  char tmp[4200], volumes[400];
  if (ux_path(tmp, sizeof tmp, "%s/tmp", srv.cfg.data) < 0 || ux_mkdir_p(tmp, 0700) < 0) {
    fprintf(stderr, "unsandboxd: cannot create %s/tmp\n", srv.cfg.data);
    return 1;
  }
  if (ux_volume_init(srv.cfg.data, (unsigned long long)srv.cfg.disk_mb << 20,
                     (unsigned long long)srv.cfg.disk_budget_mb << 20,
                     volumes, sizeof volumes, err, sizeof err) != 0) {
    fprintf(stderr, "unsandboxd: %s\n", err);
    return 2;
  }
  install_signals();
  /* a start-up probe can fail once for a passing reason; three strikes
  ** mean the sandbox really cannot run here */
  int checked = -1;
  for (int i = 0; i < 3 && checked < 0; i++)
    if ((checked = ux_runner_check(err, sizeof err)) < 0)
      fprintf(stderr, "unsandboxd: sandbox check %d failed: %s\n", i + 1, err);
  if (checked < 0) {
    fprintf(stderr, "unsandboxd: the sandbox cannot run here: %s\n", err);
    return 1;
  }
  if (chdir("/") < 0) { perror("unsandboxd: chdir /"); return 1; }
  ux_runner_set_tmpdir(tmp);

  srv.store = ux_store_open(srv.cfg.data, err, sizeof err);
  if (!srv.store) { fprintf(stderr, "unsandboxd: %s\n", err); return 1; }
  int lost = ux_store_recover_jobs(srv.store, ux_now());
  if (lost > 0) fprintf(stderr, "unsandboxd: %d unfinished job(s) marked failed (server restarted)\n", lost);
  char pk[UX_PK_LEN + 1], sk[UX_SK_LEN + 1];
  if (srv.cfg.dev_keys && ux_store_dev_key(srv.store, pk, sizeof pk, sk, sizeof sk) < 0 &&
      ux_keys_add(srv.store, pk, sk, 1) < 0) {
    fprintf(stderr, "unsandboxd: cannot create dev keys\n");
    return 1;
  }
  srv.jobs = ux_jobs_new(srv.store, srv.cfg.workers, srv.cfg.queue);
  srv.svcs = ux_svcs_new();
  if (srv.cfg.enable_faults) srv.faults = ux_faults_new();
  ux_services_resume(&srv);

  ux_http *http = ux_http_start(&srv, url, sizeof url, err, sizeof err);
  if (!http) { fprintf(stderr, "unsandboxd: %s\n", err); return 1; }
  printf("UNSANDBOX_URL=%s\n", url);
  if (srv.cfg.dev_keys) printf("UNSANDBOX_PUBLIC_KEY=%s\nUNSANDBOX_SECRET_KEY=%s\n", pk, sk);
  fflush(stdout);
  memset(sk, 0, sizeof sk);
  fprintf(stderr, "unsandboxd %s listening on %s (data %s, %d workers, queue %d%s)\n",
          UX_VERSION, url, srv.cfg.data, srv.cfg.workers, srv.cfg.queue,
          srv.cfg.enable_faults ? ", faults enabled" : "");
  fprintf(stderr, "unsandboxd: %s\n", volumes);

  char sig;
  while (read(signal_pipe[0], &sig, 1) < 0 && errno == EINTR) {}
  fprintf(stderr, "unsandboxd: signal %d, shutting down\n", sig);

  ux_http_quiesce(http);          /* no new connections */
  ux_jobs_stop(srv.jobs);         /* cancel sandboxes; waiting handlers wake */
  ux_svcs_stop_all(srv.svcs);
  ux_http_stop(http);             /* in-flight responses finish */
  ux_jobs_free(srv.jobs);
  ux_svcs_free(srv.svcs);
  ux_faults_free(srv.faults);
  ux_store_close(srv.store);
  fprintf(stderr, "unsandboxd: stopped\n");
  return 0;
}
