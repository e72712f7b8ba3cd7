/*
** unsandboxd: a faithful local emulation of the unsandbox execution API.
** This header holds what every part of the server shares: the parsed
** command line and the one server context passed to every handler, so
** no part keeps its own process-global state (the signal flag and the
** fault table are the only exceptions, each explained where it lives).
*/
#ifndef UX_SERVER_H
#define UX_SERVER_H

#include <stddef.h>

#include "core/version.h"

typedef struct ux_store ux_store;
typedef struct ux_jobs ux_jobs;
typedef struct ux_svcs ux_svcs;
typedef struct ux_faults ux_faults;
typedef struct ux_runtimes ux_runtimes;

typedef struct ux_config {
  const char *listen;     /* "HOST:PORT", "[V6]:PORT" */
  char data[4096];        /* absolute data directory */
  int dev_keys;
  long sync_ms;           /* how long POST /execute waits for the result */
  int workers;
  int queue;
  int starts;             /* jobs starting their sandbox at once: the run queue (jobs.h) */
  size_t max_body;
  long disk_mb;           /* size of every volume (volume.h) */
  long disk_budget_mb;    /* everything stored (store/ledger.h); 0 = half the free space */
  long key_quota_mb;      /* what one execution API key may store; 0 = a quarter of the budget */
  long tenant_quota_mb;   /* what one Control Plane tenant may store; 0 = a quarter */
  long job_retention_s;   /* finished jobs are removed this long after they ended */
  long memory_budget_mb;  /* all runs' memory limits together; 0 = 75% of RAM */
  int enable_faults;
  int lenient;            /* --lenient: the variant signatures and routes of spec §8 */
  const char *agent;      /* --agent: unsandboxd-agent; NULL = next to us */
  int cgroups;            /* limit runs with cgroups when usable (else rlimits) */
  int pool;               /* sandboxes prepared ahead per shape; 0 = none, -1 = the
                          ** default (runner.h), until the runner starts */
  const char *pool_shapes;/* their shapes (runner.h); NULL = the default */
  /* the Control Plane's listener and settings (cp/) */
  const char *cp_listen;  /* "HOST:PORT" of the Control Plane */
  const char *registries; /* --image-registries: template management */
  int cp_token_ttl_s;     /* scoped tokens (900) */
  int cp_idle_ttl_s;      /* runtimes unused this long are released (1800) */
  int cp_hard_ttl_s;      /* runtimes live at most this long (43200) */
  long cp_audit_rows;     /* the audit log keeps its newest this many rows */
  int cp_max_runtimes;    /* runtimes of the whole server at once */
  int cp_object_transfers;  /* object content transfers at once (64); beyond: 503 */
  /* fair shares (share.h): what one key or tenant may take; -1 until
  ** main.c fills in the defaults */
  int key_jobs;           /* jobs of one key running at once */
  int key_queue;          /* and waiting besides */
  int cp_tenant_transfers;  /* object transfers of one tenant at once; beyond: 429 */
  int cp_tenant_calls;    /* requests of one tenant to runtimes' agents at once */
  unsigned max_connections; /* per listener; 0 = from RLIMIT_NOFILE (limits.h) */
} ux_config;

typedef struct ux_server {
  ux_config cfg;
  ux_store *store;
  ux_jobs *jobs;
  ux_svcs *svcs;
  ux_runtimes *living;    /* the sandboxes of sessions and services (exec/living.h) */
  ux_faults *faults;      /* NULL unless --enable-faults */
  struct ux_cp *cp;       /* the Control Plane */
} ux_server;

#endif
