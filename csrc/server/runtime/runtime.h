/*
** Runtimes: long-lived bubblewrap sandboxes, each running `unsandboxd-agent
** runtime` on a volume, through the same runner (slot uid, cgroup, limits)
** as every other run. The Control Plane's runtimes (one per workspace,
** the platform's gVisor pod: the volume at /workspace, no network) and
** the execution API's living sessions and services (the volume at
** /sandbox, their network mode and vcpu, a hard TTL or none) are both
** runtimes, each API with a registry of its own. The agent executes what
** the APIs ask inside the sandbox, as the sandbox's user
** (docs/internals.md, "unsandboxd-agent"); this module starts and stops
** runtimes, keeps the registry, enforces the idle and hard TTLs, watches
** the agents' health and carries requests to them over their control
** sockets.
**
** The registry is in memory: runtimes are processes and die with the
** server. Persistent records (sandbox ids and statuses, sessions,
** services) are the APIs' stores', kept up to date through the on_end
** callback.
*/
#ifndef UX_RUNTIME_H
#define UX_RUNTIME_H

#include <stddef.h>
#include <jansson.h>

typedef struct ux_runtimes ux_runtimes;
typedef struct ux_rt ux_rt;

enum { UX_RT_PENDING = 1, UX_RT_RUNNING, UX_RT_FAILED, UX_RT_RELEASED };

typedef struct ux_rt_config {
  /* Every number: 0 means the default in brackets. */
  int idle_ttl_s;             /* released when unused this long (1800); the
                                 clock starts when the runtime is ready and
                                 ux_runtimes_touch restarts it; never while
                                 a call is in flight */
  int hard_ttl_s;             /* released this long after its start (43200) */
  int start_timeout_s;        /* pending longer than this: failed (110) */
  int max_live;               /* all runtimes of the process (global
                                 capacity; 64) */
  int health_interval_s;      /* a running runtime's agent is pinged this
                                 often (1) ... */
  int health_timeout_s;       /* ... and fails when it does not answer in
                                 this time (5): a stopped agent */
  int forget_after_s;         /* an ended runtime stays visible to
                                 ux_runtimes_info / wait_ready this long (60) */
  int vcpu;                   /* the sandbox's size, runner.h (1) */
  const char *agent_path;     /* the agent binary; NULL: the one
                                 ux_archive_init checked (archive.h) */
  const char *const *agent_env; /* extra "KEY=VALUE" for the agent
                                 (NULL-terminated, may be NULL), e.g. the
                                 session caps UNSANDBOXD_AGENT_SESSION_* */
  /* Called (on a runtimes thread, no lock held) when a runtime ends for
  ** any reason other than ux_runtimes_release: reaped by a TTL, failed to
  ** start, its sandbox died, its agent stopped answering or broke the
  ** protocol, or the registry is freed (shutdown). status is
  ** UX_RT_FAILED or UX_RT_RELEASED; why is one readable line. By then
  ** the runtime's processes are gone and its volume use is given back.
  ** May call the functions of this header (not ux_runtimes_free). */
  void (*on_end)(void *ctx, const char *sb_id, int status, const char *why);
  void *ctx;
} ux_rt_config;

/* What the registry knows of one runtime. Times are unix seconds. */
typedef struct ux_rt_info {
  char sb_id[32], ws_id[64], template_id[64];
  int status;
  long created_at, expires_at, idle_expires_at;   /* idle: 0 when never */
  long procs;                 /* processes in the sandbox besides the
                                 agent's own, at the last health ping
                                 (-1: none answered yet) */
  int paused;                 /* ux_runtimes_pause */
  char why[256];              /* for FAILED */
  long health_checks;         /* health pings its agent has answered */
} ux_rt_info;

/* The registry and its watcher thread (readiness, health, TTLs); NULL
** when out of memory. A missing agent binary is not an error here: each
** start then fails with err saying so. */
ux_runtimes *ux_runtimes_new(const ux_rt_config *cfg);
/* The first step of a shutdown: refuses new starts and stops every
** runtime (RELEASED, "the server is shutting down"), so calls in flight
** end at once with UX_RTC_GONE and their handlers can answer within the
** drain; returns without waiting. ux_runtimes_free still follows. */
void ux_runtimes_stop(ux_runtimes *rts);
/* Kills every runtime and waits for them (shutdown): on_end is called for
** each live one (RELEASED, "the server is shutting down"), so free this
** before what on_end uses. Calls in flight get UX_RTC_GONE; handles must
** be put within 5 s, else the registry is left allocated (logged). */
void ux_runtimes_free(ux_runtimes *rts);

/* Starts runtime sb_id for workspace ws_id on the volume dir (a volume
** of volume.h, taken in use here, so a missing or removed volume is -1 at
** once, and held until the runtime's processes are gone) and returns
** without waiting for the sandbox; the runtime becomes RUNNING once its
** agent answers a ping, or FAILED. Ids: id characters (ids.h) that fit
** ux_rt_info; template_id NULL means "default". 0; -1 with err; -2 when
** max_live runtimes run already (capacity; runtimes still stopping
** count) or the memory budget has no room for its sandbox (membudget.h:
** claimed here, given back once its processes are gone); -3 when the workspace already has a live (pending or running)
** runtime. A runtime of the workspace that is being stopped (TTL,
** failure) is waited for (at most 30 s), so two never share a volume. */
int ux_runtimes_start(ux_runtimes *rts, const char *sb_id, const char *ws_id,
                      const char *volume_dir, const char *template_id,
                      char *err, size_t errlen);

/* How one runtime differs from the registry's defaults. */
typedef struct ux_rt_start {
  const char *sb_id, *ws_id;  /* its id, and what it serves: one live
                                 runtime per ws_id (id characters; < 32, < 64) */
  const char *volume_dir;     /* as for ux_runtimes_start */
  const char *template_id;    /* NULL: "default" */
  int network;                /* 1: semitrusted (slirp4netns); 0: none */
  int vcpu;                   /* 0: the registry's */
  int hard_ttl_s;             /* 0: the registry's */
  int idle_ttl_s;             /* 0: the registry's; -1: never idle */
  const char *root;           /* where the volume appears (the agent's
                                 DIR, cwd and HOME); NULL: /workspace */
  const char *const *env;     /* "KEY=VALUE" besides the registry's
                                 agent_env, NULL-terminated (may be NULL) */
} ux_rt_start;

/* ux_runtimes_start with the differences of st; the same results. */
int ux_runtimes_start_with(ux_runtimes *rts, const ux_rt_start *st, char *err, size_t errlen);

/* Pauses (1) or resumes (0) the watcher's health checks and idle clock of
** sb_id, for a caller that freezes its sandbox (a frozen agent cannot
** answer); the hard TTL keeps counting. 0, or -1 when unknown. */
int ux_runtimes_pause(ux_runtimes *rts, const char *sb_id, int paused);

/* Waits until sb_id is no longer pending, for at most timeout_ms; returns
** its status (0 when unknown). */
int ux_runtimes_wait_ready(ux_runtimes *rts, const char *sb_id, int timeout_ms);

/* 0 and *out, or -1 when sb_id is unknown to the registry. A runtime
** that ended by itself stays visible (FAILED or RELEASED, with why) for
** forget_after_s after on_end was called; a released one is forgotten at
** once. A runtime being stopped still shows its last status. */
int ux_runtimes_info(ux_runtimes *rts, const char *sb_id, ux_rt_info *out);

/* The live (pending or running, not being stopped) runtime of a
** workspace: 0 and its id, or -1. At most one exists at any time. */
int ux_runtimes_of_workspace(ux_runtimes *rts, const char *ws_id, char sb_id[32]);

/* Number of live runtimes of the given workspaces (a tenant's capacity). */
int ux_runtimes_count(ux_runtimes *rts, const char *const *ws_ids, size_t n);

/* An fd of the network namespace of sb_id's sandbox (runner.h's
** ux_run_netns_id), or -1. */
int ux_runtimes_netns(ux_runtimes *rts, const char *sb_id);

/* Refreshes the idle clock (MCP and token calls). */
void ux_runtimes_touch(ux_runtimes *rts, const char *sb_id);

/* Kills sb_id and forgets it (on_end is not called, unless the runtime
** had ended by itself already and reported it). Returns once its
** processes are gone and its volume is given back (at most 30 s), except
** when called from on_end for the runtime being reported. 0, or -1
** unknown. */
int ux_runtimes_release(ux_runtimes *rts, const char *sb_id);

/* A handle on a RUNNING runtime for calls (NULL otherwise, also while it
** is being stopped); the runtime's memory stays valid under a held
** handle: release kills it, and a call then fails with UX_RTC_GONE.
** Every handle needs ux_rt_put, before ux_runtimes_free. */
ux_rt *ux_runtimes_get(ux_runtimes *rts, const char *sb_id);
void ux_rt_put(ux_rt *rt);
/* The runtime id of a handle. */
const char *ux_rt_sb_id(const ux_rt *rt);

enum {
  UX_RTC_OK = 0,
  UX_RTC_INVALID,             /* the agent's "invalid" (JSON-RPC -32602) */
  UX_RTC_BUSY,                /* "busy" (-32001) */
  UX_RTC_INTERNAL,            /* "internal" (-32603) */
  UX_RTC_GONE,                /* the runtime ended, the request's handler
                                 died, or the agent broke the protocol */
  UX_RTC_TIMEOUT,             /* no final frame within timeout_ms */
  UX_RTC_CANCELLED            /* on_event asked to stop */
};

/* One request to the runtime's agent: req is the agent request object
** ({"op":..., ...}); data_fd (> 0) is passed along (checkpoint/restore).
** Events (chunk frames) go to on_event as they arrive, and on_event is
** also called with event NULL at least every 250 ms while nothing arrives
** (so a streaming caller notices its client has gone); a non-zero return
** cancels: the request socket is closed, which kills a running exec.
** On UX_RTC_OK *result holds the agent's result object (caller frees);
** otherwise err holds the message (the agent's own for INVALID, BUSY and
** INTERNAL, cut at a character boundary). timeout_ms <= 0 means 45 000
** (the platform's upstream timeout). A request that is not an object, or
** encodes to more than 8 MiB, is INVALID before anything is sent.
** An agent that breaks the protocol (a malformed, oversized or unknown
** frame, more than 32 MiB of events) makes the call GONE and stops the
** runtime as FAILED; one that closes the request without an answer (the
** command killed its handler) makes it GONE and triggers a health check.
** The call does not refresh the idle clock (ux_runtimes_touch does), but
** a runtime is never released for idleness while a call is in flight. */
int ux_rt_call(ux_rt *rt, const json_t *req, int data_fd, int timeout_ms,
               int (*on_event)(void *ctx, const json_t *event), void *ctx,
               json_t **result, char *err, size_t errlen);

/* ux_rt_call without the 32 MiB bound on events, for a caller whose
** on_event keeps a bounded amount of them (a log ring, a capped result)
** while the call may last for days (a service's bootstrap). */
int ux_rt_call_follow(ux_rt *rt, const json_t *req, int data_fd, int timeout_ms,
                      int (*on_event)(void *ctx, const json_t *event), void *ctx,
                      json_t **result, char *err, size_t errlen);

#endif
