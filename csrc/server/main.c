/*
** unsandboxd: command line, start-up and shutdown.
**
**   unsandboxd --listen 127.0.0.1:0 --data DIR [--dev-keys] [--sync-ms N]
**              [--workers N] [--queue N] [--starts N] [--max-body BYTES] [--enable-faults] [--lenient]
**              [--cgroups auto|off]
**   unsandboxd keys add --data DIR
**
** The UNSANDBOX_URL line is printed only once the socket accepts
** connections, so a test harness can read it and connect at once.
** SIGTERM/SIGINT only write a byte to a pipe (async-signal-safe); main()
** then shuts down in order: stop accepting, cancel sandboxes, let
** in-flight responses finish (at most UX_HTTP_DRAIN_MS), exit 0. A
** request handler still blocked after that is not waited for: the
** process exits with _exit, leaving shared state to the kernel, since a
** thread that is still running may be using it.
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
#include "server/cli.h"
#include "server/cp/cp.h"
#include "server/cp/auth/auth.h"
#include "server/runtime/runtime.h"
#include "server/fsutil.h"
#include "server/mem.h"
#include "server/http/http.h"
#include "server/http/limits.h"
#include "server/exec/living.h"
#include "server/exec/expiry.h"
#include "server/exec/jobs.h"
#include "server/exec/leftovers.h"
#include "server/store/keys.h"
#include "server/exec/routes.h"
#include "server/sandbox/archive.h"
#include "server/sandbox/membudget.h"
#include "server/sandbox/runner.h"
#include "server/sandbox/volume.h"
#include "server/store/ledger.h"
#include "server/share.h"
#include "server/store/store.h"
#include "server/exec/svc.h"

/* The one process-global: the signal handler can reach nothing else. */
static int signal_pipe[2] = { -1, -1 };

/* --env-file, made absolute (the server runs in "/"); "" when not given */
static char env_file[PATH_MAX];

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
    "  --starts N           jobs that may be starting their sandbox at once; the others\n"
    "                       wait queued, fairly across keys (default: cores)\n"
    "  --max-body BYTES     largest request body (default 8388608)\n"
    "  --disk-mb N          disk of every session and service, and the size of an\n"
    "                       execute run's work directory (default 1024)\n"
    "  --disk-budget-mb N   most disk everything stored may take together: volumes,\n"
    "                       snapshots, images, job output, objects, checkpoints\n"
    "                       (default: half the free space of the data directory)\n"
    "  --key-quota-mb N     most one execution API key may store (default: a quarter\n"
    "                       of the budget, at least one volume and a sixteenth; beyond:\n"
    "                       507 insufficient_storage)\n"
    "  --tenant-quota-mb N  most one Control Plane tenant may store (default: as for a\n"
    "                       key; beyond: 429)\n"
    "  --job-retention S    finished jobs are removed S seconds after they ended, and\n"
    "                       their output with them (default 86400: a day)\n"
    "  --memory-budget-mb N most memory all runs may claim together: every run's\n"
    "                       limit (vcpu x 1024 MiB) is admitted against it (429\n"
    "                       beyond), and their parent cgroup is limited to it\n"
    "                       (default: 75%% of the machine's memory; at least 1024)\n"
    "  --enable-faults      allow POST /_faults (tests only)\n"
    "  --lenient            also accept the SDKs' variant signatures (path with query;\n"
    "                       \"\" for a {} body) and variant routes and keys (spec 8)\n"
    "  --cgroups auto|off   limit runs with cgroups (v2, else v1) when usable, as root\n"
    "                       (default auto); off: rlimits only, the fallback\n"
    "  --agent PATH         unsandboxd-agent (default: next to this program)\n"
    "  --pool N             keep N sandboxes per shape started ahead (default 2 per\n"
    "                       installed default shape; 0: none)\n"
    "  --pool-shapes LIST   their shapes, LANG or LANG/semitrusted, comma-separated\n"
    "                       (default " UX_POOL_DEFAULT_SHAPES ")\n"
    "  --cp-listen HOST:PORT  the Control Plane's address (default 127.0.0.1:0)\n"
    "  --image-registries LIST  comma-separated image prefixes templates may use\n"
    "                       (default none: template management disabled)\n"
    "  --cp-token-ttl S     scoped token lifetime (default 900)\n"
    "  --cp-idle-ttl S      runtimes unused this long are released (default 1800)\n"
    "  --cp-hard-ttl S      runtimes live at most this long (default 43200)\n"
    "  --cp-audit-rows N    the audit log keeps its newest N rows (default 100000)\n"
    "  --cp-max-runtimes N  runtimes at once, all tenants (default 4 x cores)\n"
    "  --cp-object-transfers N  object content transfers at once (default 64; beyond:\n"
    "                       503 with retry_after_seconds, the object queue-full fault)\n"
    "Fair shares (a quarter of each pool, at least one, is left for the others):\n"
    "  --key-jobs N         jobs one key may run at once (default 3/4 of --workers)\n"
    "  --key-queue N        jobs one key may have waiting besides (default 3/4 of --queue)\n"
    "  --cp-tenant-transfers N  object transfers one tenant may hold (default 3/4 of\n"
    "                       --cp-object-transfers; beyond: 429)\n"
    "  --cp-tenant-calls N  requests one tenant may have at its runtimes' agents\n"
    "                       (default 3/4 of the 512 handler threads; beyond: 429)\n"
    "  --max-connections N  connections per listener (default from RLIMIT_NOFILE, at\n"
    "                       most 4096); past 7/8 of them idle ones are closed,\n"
    "                       unauthenticated first\n"

    "  --env-file FILE      also write what is printed at start-up (and\n"
    "                       UNSANDBOXD_PID) to FILE, 0600, once listening; removed\n"
    "                       at shutdown: start in the background, then\n"
    "                       `set -a; . FILE; set +a`\n"
    "  --version, --help\n"
    "\n"
    "Prints UNSANDBOX_URL=... and SANDBOX_CONTROL_PLANE_URL=... (and with --dev-keys\n"
    "the execution API's dev keys and SANDBOX_TOKEN, this start's break-glass token)\n"
    "on stdout once listening. Subcommands (also while a server runs):\n"
    "  unsandboxd keys add --data DIR                  an execution API key pair\n"
    "  unsandboxd keys add --admin --data DIR          a Control Plane admin key\n"
    "  unsandboxd keys add --tenant ID [--act-as-subjects] --data DIR\n"
    "  unsandboxd tenants add ID [--display-name NAME] [--max-workspaces N]\n"
    "                     [--max-runtimes N] --data DIR\n");
}

/* The options of fair shares (share.h), the run queue and the connection budget, by
** their long name. */
static void share_option(const char *name, const char *v, ux_config *cfg) {
  if (!strcmp(name, "starts")) cfg->starts = (int)ux_parse_num("--starts", v, 1, 256);
  else if (!strcmp(name, "key-jobs")) cfg->key_jobs = (int)ux_parse_num("--key-jobs", v, 1, 256);
  else if (!strcmp(name, "key-queue")) cfg->key_queue = (int)ux_parse_num("--key-queue", v, 0, 100000);
  else if (!strcmp(name, "cp-tenant-transfers"))
    cfg->cp_tenant_transfers = (int)ux_parse_num("--cp-tenant-transfers", v, 1, 4096);
  else if (!strcmp(name, "cp-tenant-calls"))
    cfg->cp_tenant_calls = (int)ux_parse_num("--cp-tenant-calls", v, 1, UX_HTTP_MAX_HANDLERS);
  else
    cfg->max_connections = (unsigned)ux_parse_num("--max-connections", v, UX_HTTP_MIN_CONNECTIONS,
                                                  UX_HTTP_MAX_CONNECTIONS);
}

/* The shares not given on the command line: the default rule of share.h
** applied to the pool each is a share of. */
static void fill_shares(ux_config *cfg) {
  if (cfg->key_jobs < 0) cfg->key_jobs = (int)ux_share_default((unsigned)cfg->workers);
  if (cfg->key_queue < 0) cfg->key_queue = (int)ux_share_default((unsigned)cfg->queue);
  if (cfg->cp_tenant_transfers < 0)
    cfg->cp_tenant_transfers = (int)ux_share_default((unsigned)cfg->cp_object_transfers);
  if (cfg->cp_tenant_calls < 0) cfg->cp_tenant_calls = (int)ux_share_default(UX_HTTP_MAX_HANDLERS);
}

static void parse_args(int argc, char **argv, ux_config *cfg) {
  enum { OPT_LISTEN = 256, OPT_DATA, OPT_DEV, OPT_SYNC, OPT_WORKERS, OPT_QUEUE, OPT_BODY,
         OPT_DISK, OPT_BUDGET, OPT_KEY_QUOTA, OPT_TENANT_QUOTA, OPT_RETENTION, OPT_MEM_BUDGET, OPT_AGENT, OPT_FAULTS, OPT_LENIENT, OPT_CGROUPS, OPT_POOL, OPT_POOL_SHAPES,
         OPT_CP_LISTEN, OPT_REGISTRIES, OPT_TOKEN_TTL, OPT_IDLE_TTL, OPT_HARD_TTL, OPT_AUDIT_ROWS, OPT_MAX_RT,
         OPT_OBJ_XFERS, OPT_SHARE, OPT_ENV_FILE, OPT_VERSION, OPT_HELP };
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
    { "key-quota-mb", required_argument, NULL, OPT_KEY_QUOTA },
    { "tenant-quota-mb", required_argument, NULL, OPT_TENANT_QUOTA },
    { "job-retention", required_argument, NULL, OPT_RETENTION },
    { "memory-budget-mb", required_argument, NULL, OPT_MEM_BUDGET },
    { "enable-faults", no_argument, NULL, OPT_FAULTS },
    { "lenient", no_argument, NULL, OPT_LENIENT },
    { "cgroups", required_argument, NULL, OPT_CGROUPS },
    { "agent", required_argument, NULL, OPT_AGENT },
    { "pool", required_argument, NULL, OPT_POOL },
    { "pool-shapes", required_argument, NULL, OPT_POOL_SHAPES },
    { "cp-listen", required_argument, NULL, OPT_CP_LISTEN },
    { "image-registries", required_argument, NULL, OPT_REGISTRIES },
    { "cp-token-ttl", required_argument, NULL, OPT_TOKEN_TTL },
    { "cp-idle-ttl", required_argument, NULL, OPT_IDLE_TTL },
    { "cp-hard-ttl", required_argument, NULL, OPT_HARD_TTL },
    { "cp-audit-rows", required_argument, NULL, OPT_AUDIT_ROWS },
    { "cp-max-runtimes", required_argument, NULL, OPT_MAX_RT },
    { "cp-object-transfers", required_argument, NULL, OPT_OBJ_XFERS },
    { "starts", required_argument, NULL, OPT_SHARE },
    { "key-jobs", required_argument, NULL, OPT_SHARE },
    { "key-queue", required_argument, NULL, OPT_SHARE },
    { "cp-tenant-transfers", required_argument, NULL, OPT_SHARE },
    { "cp-tenant-calls", required_argument, NULL, OPT_SHARE },
    { "max-connections", required_argument, NULL, OPT_SHARE },
    { "env-file", required_argument, NULL, OPT_ENV_FILE },
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
  cfg->starts = (int)(cores > 0 ? cores : 1);
  cfg->pool = -1;                  /* not told: the default pool */
  cfg->max_body = 8u << 20;
  cfg->cgroups = 1;
  cfg->disk_mb = 1024;
  cfg->job_retention_s = 86400;
  cfg->cp_listen = "127.0.0.1:0";
  cfg->cp_token_ttl_s = 900;
  cfg->cp_idle_ttl_s = 1800;
  cfg->cp_audit_rows = 100000;
  cfg->cp_hard_ttl_s = 43200;
  cfg->cp_max_runtimes = (int)(4 * (cores > 0 ? cores : 1));
  cfg->cp_object_transfers = 64;
  cfg->key_jobs = cfg->key_queue = cfg->cp_tenant_transfers = cfg->cp_tenant_calls = -1;
  opterr = 0;
  int c, li = 0;
  while ((c = getopt_long(argc, argv, "", opts, &li)) != -1) {
    switch (c) {
    case OPT_LISTEN: cfg->listen = optarg; break;
    case OPT_DATA: data = optarg; break;
    case OPT_DEV: cfg->dev_keys = 1; break;
    case OPT_SYNC: cfg->sync_ms = ux_parse_num("--sync-ms", optarg, 0, 600000); break;
    case OPT_WORKERS: cfg->workers = (int)ux_parse_num("--workers", optarg, 1, 256); break;
    case OPT_QUEUE: cfg->queue = (int)ux_parse_num("--queue", optarg, 0, 100000); break;
    case OPT_BODY: cfg->max_body = (size_t)ux_parse_num("--max-body", optarg, 1, 1L << 30); break;
    case OPT_DISK: cfg->disk_mb = ux_parse_num("--disk-mb", optarg, 16, 1L << 20); break;
    case OPT_BUDGET: cfg->disk_budget_mb = ux_parse_num("--disk-budget-mb", optarg, 16, 1L << 30); break;
    case OPT_KEY_QUOTA: cfg->key_quota_mb = ux_parse_num("--key-quota-mb", optarg, 1, 1L << 30); break;
    case OPT_TENANT_QUOTA:
      cfg->tenant_quota_mb = ux_parse_num("--tenant-quota-mb", optarg, 1, 1L << 30);
      break;
    case OPT_RETENTION:
      cfg->job_retention_s = ux_parse_num("--job-retention", optarg, 1, 10L * 365 * 86400);
      break;
    case OPT_MEM_BUDGET:
      cfg->memory_budget_mb = ux_parse_num("--memory-budget-mb", optarg, UX_MEM_BUDGET_MIN_MB, 1L << 30);
      break;
    case OPT_FAULTS: cfg->enable_faults = 1; break;
    case OPT_LENIENT: cfg->lenient = 1; break;
    case OPT_AGENT: cfg->agent = optarg; break;
    case OPT_POOL: cfg->pool = (int)ux_parse_num("--pool", optarg, 0, UX_POOL_MAX); break;
    case OPT_POOL_SHAPES: cfg->pool_shapes = optarg; break;
    case OPT_CP_LISTEN: cfg->cp_listen = optarg; break;
    case OPT_REGISTRIES: cfg->registries = *optarg ? optarg : NULL; break;
    case OPT_TOKEN_TTL: cfg->cp_token_ttl_s = (int)ux_parse_num("--cp-token-ttl", optarg, 1, 86400); break;
    case OPT_IDLE_TTL: cfg->cp_idle_ttl_s = (int)ux_parse_num("--cp-idle-ttl", optarg, 1, 86400); break;
    case OPT_AUDIT_ROWS: cfg->cp_audit_rows = ux_parse_num("--cp-audit-rows", optarg, 10, 100000000); break;
    case OPT_HARD_TTL: cfg->cp_hard_ttl_s = (int)ux_parse_num("--cp-hard-ttl", optarg, 1, 604800); break;
    case OPT_MAX_RT: cfg->cp_max_runtimes = (int)ux_parse_num("--cp-max-runtimes", optarg, 1, 256); break;
    case OPT_OBJ_XFERS:
      cfg->cp_object_transfers = (int)ux_parse_num("--cp-object-transfers", optarg, 0, 4096);
      break;
    case OPT_SHARE: share_option(opts[li].name, optarg, cfg); break;
    case OPT_CGROUPS:
      if (!strcmp(optarg, "auto")) cfg->cgroups = 1;
      else if (!strcmp(optarg, "off")) cfg->cgroups = 0;
      else ux_die_usage("--cgroups wants auto or off, got '%s'", optarg);
      break;
    case OPT_ENV_FILE:
      if (ux_env_file_path(optarg, env_file, sizeof env_file) != 0)
        ux_die_usage("--env-file: cannot use '%s'", optarg);
      break;
    case OPT_VERSION: printf("unsandboxd %s\n", UNSB_VERSION); exit(0);
    case OPT_HELP: usage(stdout); exit(0);
    default:
      if (optopt) ux_die_usage("option needs a value or is unknown: %s", argv[optind - 1]);
      ux_die_usage("unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc) ux_die_usage("unexpected argument '%s'", argv[optind]);
  if (!data) ux_die_usage("--data DIR is required%s", "");
  if (cfg->pool_shapes && !cfg->pool) ux_die_usage("--pool-shapes needs a pool, not --pool 0%s", "");
  fill_shares(cfg);
  ux_set_data_dir(cfg, data);
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

/* The execution API's listener, with RLIMIT_NOFILE raised to its hard
** limit first and the connection caps derived from it. */
/* The two listeners: the execution API's and the Control Plane's. */
typedef struct listeners {
  ux_http *exec, *cp;
  char exec_url[400], cp_url[400];
} listeners;

/* Both listeners, with RLIMIT_NOFILE raised to its hard limit first and
** the connection caps derived from it (shared by the two). */
static int start_listeners(ux_server *srv, listeners *l, char *err, size_t errlen) {
  unsigned long long nofile = ux_http_raise_nofile();
  ux_http_config hc;
  ux_http_config_default(&hc, nofile, 2);
  ux_http_config_connections(&hc, srv->cfg.max_connections);
  hc.listen = srv->cfg.listen;
  hc.max_body = srv->cfg.max_body;
  ux_exec_router(srv, &hc.router);
  if (!(l->exec = ux_http_start(&hc, l->exec_url, sizeof l->exec_url, err, errlen))) return -1;
  if (!(l->cp = ux_cp_listen(srv->cp, nofile, l->cp_url, sizeof l->cp_url, err, errlen))) return -1;
  fprintf(stderr, "unsandboxd: at most %u connections per listener (idle ones closed past %u, "
          "NOFILE %llu), %u requests handled at once\n", hc.max_connections,
          ux_limit_conn_budget(hc.max_connections), nofile, hc.max_handlers);
  return 0;
}

/* Stops in order: the Control Plane in shutdown mode, no new connections,
** sandboxes cancelled (their waiting handlers wake), requests in flight
** answered until the drain deadline. A handler still blocked then may be
** using any shared state, so nothing is freed and the process leaves with
** _exit. */
static void shut_down(ux_server *srv, listeners *l, ux_expiry *expiry) {
  long deadline = ux_now_ms() + UX_HTTP_DRAIN_MS;
  ux_expiry_stop(expiry);
  ux_cp_shutting_down(srv->cp);
  ux_http_quiesce(l->exec);
  ux_http_quiesce(l->cp);
  ux_jobs_stop(srv->jobs);
  ux_svcs_stop_all(srv->svcs);
  ux_living_stop(srv);             /* sessions' calls and terminals end now */
  ux_runtimes_stop(srv->cp->rts);  /* MCP and file calls in flight end now */
  unsigned stuck = ux_http_stop(l->exec, deadline) + ux_http_stop(l->cp, deadline);
  if (stuck) {
    fprintf(stderr, "unsandboxd: %u request handler(s) still blocked, not waited for\n", stuck);
    fprintf(stderr, "unsandboxd: stopped\n");
    fflush(NULL);
    _exit(0);
  }
  ux_cp_free(srv->cp);            /* its runtimes end here */
  ux_living_close(srv);           /* and the sessions' and services' */
  ux_runner_shutdown();           /* every run has ended: our cgroups go */
  ux_jobs_free(srv->jobs);
  ux_svcs_free(srv->svcs);
  ux_faults_free(srv->faults);
  ux_store_close(srv->store);
}

/* The agent binary: --agent, else unsandboxd-agent next to this program. */
static void agent_path(const ux_config *cfg, char *out, size_t outlen) {
  char self[PATH_MAX];
  ssize_t n = cfg->agent ? -1 : readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) *slash = '\0';
    snprintf(out, outlen, "%.4000s/unsandboxd-agent", self);
  } else {
    snprintf(out, outlen, "%s", cfg->agent ? cfg->agent : "unsandboxd-agent");
  }
}

/*
** Everything the runs need, in the order it must happen: volumes first
** (entering a private mount namespace needs a process without threads),
** then the runner (which may move this process to a leaf cgroup and
** removes the cgroups of dead servers), a probe sandbox, and the agent.
*/
static int prepare_sandbox(ux_config *cfg, ux_isolation *iso, char *volumes, size_t vlen) {
  char tmp[4200], agent[PATH_MAX], err[512];
  if (ux_path(tmp, sizeof tmp, "%s/tmp", cfg->data) < 0 || ux_mkdir_p(tmp, 0700) < 0) {
    fprintf(stderr, "unsandboxd: cannot create %s/tmp\n", cfg->data);
    return -1;
  }
  if (ux_volume_init(cfg->data, (unsigned long long)cfg->disk_mb << 20, volumes, vlen,
                     err, sizeof err) != 0) {
    fprintf(stderr, "unsandboxd: %s\n", err);
    return -1;
  }
  if (ux_volume_runs_dir(cfg->data, tmp, sizeof tmp) != 0) {
    fprintf(stderr, "unsandboxd: cannot create %s/tmp/run: %s\n", cfg->data, strerror(errno));
    return -1;
  }
  install_signals();
  ux_runner_set_memory_budget((unsigned long long)cfg->memory_budget_mb << 20);
  ux_runner_init(cfg->cgroups, iso);
  if (chdir("/") < 0) { perror("unsandboxd: chdir /"); return -1; }
  ux_runner_set_tmpdir(tmp);
  /* a slot per sandbox that may run at once stays ours between runs */
  ux_runner_keep_slots(cfg->workers + cfg->cp_max_runtimes);
  /* a start-up probe can fail once for a passing reason; three strikes
  ** mean the sandbox really cannot run here */
  int checked = -1;
  for (int i = 0; i < 3 && checked < 0; i++)
    if ((checked = ux_runner_check(err, sizeof err)) < 0)
      fprintf(stderr, "unsandboxd: sandbox check %d failed: %s\n", i + 1, err);
  if (checked < 0) {
    fprintf(stderr, "unsandboxd: the sandbox cannot run here: %s\n", err);
    return -1;
  }
  agent_path(cfg, agent, sizeof agent);
  if (ux_archive_init(agent, cfg->data, err, sizeof err) != 0) {
    fprintf(stderr, "unsandboxd: %s\n", err);
    return -1;
  }
  /* a bad shape is a bad flag: exit 2; the default pool that cannot start
  ** is only a server without one */
  if (cfg->pool < 0) {
    static char used[128];
    cfg->pool = 0;
    if (ux_runner_pool_start_default(cfg->pool_shapes, used, sizeof used, err, sizeof err) == 0) {
      if (used[0]) cfg->pool = UX_POOL_DEFAULT_SIZE;
      cfg->pool_shapes = used;
    } else if (cfg->pool_shapes) {
      ux_die_usage("--pool-shapes: %s", err);
    } else {
      fprintf(stderr, "unsandboxd: no sandbox pool: %s\n", err);
    }
  } else if (cfg->pool > 0 && ux_runner_pool_start(cfg->pool, cfg->pool_shapes, err, sizeof err) != 0) {
    ux_die_usage("--pool: %s", err);
  }
  return 0;
}

/* The ledger of stored bytes with the configured limits; its line for
** the log in desc. 0, or -1 (logged). */
static int open_ledger(ux_server *srv, char *desc, size_t desclen) {
  char err[300], operator[UX_LEDGER_PARTY_MAX];
  /* quotas keep tenants apart; the platform's operator is none of them */
  ux_ledger_tenant(operator, sizeof operator, UX_CP_OPERATOR_TENANT);
  ux_ledger_limits lim = {
    (unsigned long long)srv->cfg.disk_budget_mb << 20, (unsigned long long)srv->cfg.key_quota_mb << 20,
    (unsigned long long)srv->cfg.tenant_quota_mb << 20, ux_volume_charge(), UX_SVC_LOG_CAP, operator };
  if (ux_ledger_open(srv->store, srv->cfg.data, &lim, err, sizeof err) != 0) {
    fprintf(stderr, "unsandboxd: %s\n", err);
    return -1;
  }
  ux_ledger_usage u;
  ux_ledger_limits_of(srv->store, &lim);
  ux_ledger_usage_of(srv->store, NULL, &u);
  snprintf(desc, desclen, "storage: %llu of %llu MiB used; at most %llu MiB per key, %llu MiB per"
           " tenant; finished jobs kept %ld s", u.used >> 20, lim.budget >> 20, lim.key_quota >> 20,
           lim.tenant_quota >> 20, srv->cfg.job_retention_s);
  return 0;
}

/* The start-up lines on stdout, and with --env-file the same lines and
** UNSANDBOXD_PID in that file (in text, which holds keys: the caller wipes
** it). 0, or -1 (logged). */
static int announce(ux_server *srv, listeners *l, const char *pk, const char *sk,
                    char *text, size_t len) {
  int n = snprintf(text, len, "UNSANDBOX_URL=%s\nSANDBOX_CONTROL_PLANE_URL=%s\n", l->exec_url, l->cp_url);
  if (srv->cfg.dev_keys)
    n += snprintf(text + n, len - (size_t)n, "UNSANDBOX_PUBLIC_KEY=%s\nUNSANDBOX_SECRET_KEY=%s\n"
                  "SANDBOX_TOKEN=%s\n", pk, sk, ux_cp_break_glass(srv->cp));
  fputs(text, stdout);
  fflush(stdout);
  if (!env_file[0]) return 0;
  char err[PATH_MAX + 100];
  snprintf(text + n, len - (size_t)n, "UNSANDBOXD_PID=%ld\n", (long)getpid());
  if (ux_env_file_write(env_file, text, err, sizeof err) == 0) return 0;
  fprintf(stderr, "unsandboxd: %s\n", err);
  return -1;
}

int main(int argc, char **argv) {
  char err[512];
  ux_mem_init();                       /* before any JSON value: mem.h's policy */
  int sub = ux_cli_subcommand(argc, argv);
  if (sub >= 0) return sub;
  ux_server srv;
  memset(&srv, 0, sizeof srv);
  parse_args(argc, argv, &srv.cfg);
  ux_isolation iso;
  char volumes[400];
  if (prepare_sandbox(&srv.cfg, &iso, volumes, sizeof volumes) != 0) return 1;

  srv.store = ux_store_open(srv.cfg.data, err, sizeof err);
  if (!srv.store) { fprintf(stderr, "unsandboxd: %s\n", err); return 1; }
  int lost = ux_store_recover_jobs(srv.store, ux_now());
  if (lost > 0) fprintf(stderr, "unsandboxd: %d unfinished job(s) marked failed (server restarted)\n", lost);
  ux_leftovers_sweep(&srv);            /* before anything new is made */
  char pk[UX_PK_LEN + 1], sk[UX_SK_LEN + 1];
  if (srv.cfg.dev_keys && ux_store_dev_key(srv.store, pk, sizeof pk, sk, sizeof sk) < 0 &&
      ux_keys_add(srv.store, pk, sk, 1) < 0) {
    fprintf(stderr, "unsandboxd: cannot create dev keys\n");
    return 1;
  }
  if (!(srv.jobs = ux_jobs_new(srv.store, srv.cfg.workers, srv.cfg.queue, srv.cfg.key_jobs,
                               srv.cfg.key_queue, srv.cfg.starts)) ||
      !(srv.svcs = ux_svcs_new(&srv)) || (srv.cfg.enable_faults && !(srv.faults = ux_faults_new()))) {
    fprintf(stderr, "unsandboxd: cannot initialise the job pool, services or faults\n");
    return 1;
  }
  if (ux_living_open(&srv, err, sizeof err) != 0) { fprintf(stderr, "unsandboxd: %s\n", err); return 1; }
  ux_living_expire_sessions(&srv);     /* the others start again when next used */
  ux_services_resume(&srv);

  if (!(srv.cp = ux_cp_new(&srv, err, sizeof err))) { fprintf(stderr, "unsandboxd: %s\n", err); return 1; }
  /* every table it follows exists now, and the jobs a crash left are
  ** final (ux_store_recover_jobs): the ledger settles with the rows */
  char storage[300];
  if (open_ledger(&srv, storage, sizeof storage) != 0) return 1;
  ux_jobs_set_retention(srv.jobs, srv.cfg.job_retention_s);
  ux_expiry *expiry = ux_expiry_start(srv.store, srv.cfg.job_retention_s);
  if (!expiry) { fprintf(stderr, "unsandboxd: cannot start the expiry of finished jobs\n"); return 1; }
  listeners l;
  memset(&l, 0, sizeof l);
  if (start_listeners(&srv, &l, err, sizeof err) != 0) { fprintf(stderr, "unsandboxd: %s\n", err); return 1; }
  char said[4096];
  if (announce(&srv, &l, pk, sk, said, sizeof said) != 0) return 1;
  memset(sk, 0, sizeof sk);
  fprintf(stderr, "unsandboxd %s listening on %s, Control Plane on %s (data %s, %d workers,"
          " queue %d%s); isolation: %s\n", UNSB_VERSION, l.exec_url, l.cp_url, srv.cfg.data, srv.cfg.workers, srv.cfg.queue,
          srv.cfg.enable_faults ? ", faults enabled" : "", iso.detail);
  fprintf(stderr, "unsandboxd: %s\n", volumes);
  fprintf(stderr, "unsandboxd: %s\n", storage);
  if (srv.cfg.pool)
    fprintf(stderr, "unsandboxd: %d sandbox(es) started ahead per shape (%s)\n", srv.cfg.pool,
            srv.cfg.pool_shapes ? srv.cfg.pool_shapes : UX_POOL_DEFAULT_SHAPES);

  char sig;
  while (read(signal_pipe[0], &sig, 1) < 0 && errno == EINTR) {}
  fprintf(stderr, "unsandboxd: signal %d, shutting down\n", sig);

  if (env_file[0]) ux_env_file_remove(env_file, said);
  explicit_bzero(said, sizeof said);
  shut_down(&srv, &l, expiry);
  fprintf(stderr, "unsandboxd: stopped\n");
  return 0;
}
