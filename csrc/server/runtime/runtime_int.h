/*
** Internals shared by the runtime module's files: runtime.c (the
** registry and the public calls), runtime/run.c (one thread per runtime:
** starts its sandbox, waits for its end, reports it) and runtime/watch.c
** (the watcher: readiness and health pings, TTLs, joining ended threads).
**
** One mutex, rts->mu, guards the list and every field of every runtime
** except refs (atomic, so ux_rt_put needs no registry). The list holds
** one reference to each runtime until its thread has been joined; every
** handle and every waiter holds another, so a runtime is freed only when
** nobody can still look at it.
*/
#ifndef UX_RUNTIME_INT_H
#define UX_RUNTIME_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "server/runtime/agent_client.h"
#include "server/runtime/runtime.h"
#include "server/sandbox/membudget.h"

struct ux_rt {
  ux_runtimes *rts;
  atomic_int refs;
  char sb_id[32], ws_id[64], template_id[64];
  char root[64];              /* where the volume appears inside */
  int network, vcpu;          /* the sandbox's shape */
  int hard_ttl_s, idle_ttl_s; /* idle < 0: never released for idleness */
  char **env;                 /* its own KEY=VALUE (NULL-terminated) */
  long procs;                 /* the last ping's count, -1 before */
  int paused;                 /* no health checks, no idle clock */
  char *volume;               /* the volume's directory, held in use */
  ux_memclaim mem;            /* its sandbox's memory (membudget.h), from
                                 the start until the sandbox has ended */
  int volume_fd;              /* its root, until the sandbox has started */
  int status;                 /* UX_RT_* */
  long created_at;            /* unix seconds, for ux_rt_info */
  long created_ms, used_ms;   /* monotonic: start, last use (idle clock) */
  long ended_ms;
  char why[256];
  int control;                /* the server's end of the control channel */
  unsigned long long run_id;  /* 0 until the sandbox has started */
  int kill, kill_status, kill_soft;   /* a stop was asked; soft: the run's
                                         own end may say better why */
  long cancel_at;             /* soft: the run is cancelled then, unless it
                                 ended by itself first (0: not pending) */
  char kill_why[256];
  int released;               /* by ux_runtimes_release: no on_end */
  int forgotten;              /* no longer visible to lookups */
  int done;                   /* processes gone, volume given back */
  int reported;               /* on_end has returned (or was skipped) */
  int calls;                  /* ux_rt_call in flight */
  pthread_t thread;
  /* the watcher's ping in flight: readiness first, then health */
  int ping_fd;
  long ping_deadline, ping_next;
  int ping_misses;            /* health deadlines the ping in flight missed */
  long health_checks;         /* health pings answered */
  ux_agent_frames ping_in;
  struct ux_rt *next;
};

struct ux_runtimes {
  pthread_mutex_t mu;
  pthread_cond_t changed;     /* a status, done or reported changed */
  ux_rt_config cfg;           /* defaults filled in */
  int agent_fd;               /* O_PATH of the agent binary, or -1 */
  char **env;                 /* copies of cfg.agent_env */
  size_t n_env;
  ux_rt *head;
  int stopping;
  int wake_fd;                /* eventfd: wakes the watcher */
  pthread_t watcher;
  int has_watcher;
  int handles;                /* ux_runtimes_get handles not yet put */
};

#define UX_RT_AGENT_IN "/.unsandbox/agent"   /* where the agent is bound */

/* runtime.c */
void ux_rt_unref(ux_rt *rt);
void ux_rt_wake(ux_runtimes *rts);
/* Asks rt to stop (rts->mu held): the run is cancelled (or will be, as
** soon as it has started). The first reason given wins. A soft stop (the
** agent seems gone already) waits UX_RT_SOFT_MS first, so a sandbox that
** is ending by itself reports its own exit status rather than our kill. */
#define UX_RT_SOFT_MS 500
void ux_rt_kill_locked(ux_rt *rt, int status, const char *why, int soft);
/* Alive and not being stopped. */
int ux_rt_live(const ux_rt *rt);

/* runtime/run.c: the runtime's own thread (arg: the ux_rt). */
void *ux_rt_thread(void *arg);

/* runtime/watch.c: the watcher thread (arg: the ux_runtimes). */
void *ux_rt_watch(void *arg);
/* Drops a ping in flight (rts->mu held). */
void ux_rt_ping_close(ux_rt *rt);

#endif
