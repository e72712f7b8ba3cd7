/*
** The runs' memory budget (membudget.h): one counter under one mutex.
** The default is read from /proc/meminfo once, when the first claim or
** report needs it and no budget was set. A condition variable wakes the
** runs waiting for room (ux_mem_claim_wait) whenever claims shrink.
*/
#include "server/sandbox/membudget.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/sandbox/limits.h"

static struct {
  pthread_mutex_t mu;
  pthread_cond_t released;        /* a claim shrank or was given back */
  unsigned long long budget, claimed;
  unsigned long long passing;     /* of claimed: held by the runner for single runs */
  int set;
} mb = { .mu = PTHREAD_MUTEX_INITIALIZER, .released = PTHREAD_COND_INITIALIZER };

unsigned long long ux_run_memory_bytes(int vcpu) {
  int n = vcpu < 1 ? 1 : vcpu > 8 ? 8 : vcpu;
  return (unsigned long long)UX_SB_MEM_PER_VCPU * (unsigned)n;
}

unsigned long long ux_membudget_default_from(const char *text) {
  const char *p = text ? strstr(text, "MemTotal:") : NULL;
  if (!p || (p != text && p[-1] != '\n')) return 0;
  char *end;
  unsigned long long kb = strtoull(p + 9, &end, 10);
  if (end == p + 9 || kb == 0) return 0;
  unsigned long long share = kb / 100 * UX_MEM_DEFAULT_SHARE * 1024;
  unsigned long long least = (unsigned long long)UX_MEM_BUDGET_MIN_MB << 20;
  return share < least ? least : share;
}

static unsigned long long default_budget(void) {
  char buf[4096];
  int fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
  if (fd >= 0) close(fd);
  buf[n > 0 ? n : 0] = '\0';
  unsigned long long b = ux_membudget_default_from(buf);
  return b ? b : (unsigned long long)UX_MEM_BUDGET_MIN_MB << 20;
}

/* Under mb.mu: the budget, decided on first use. */
static unsigned long long budget_locked(void) {
  if (!mb.set) {
    mb.budget = default_budget();
    mb.set = 1;
  }
  return mb.budget;
}

void ux_membudget_set(unsigned long long bytes) {
  pthread_mutex_lock(&mb.mu);
  mb.budget = bytes ? bytes : default_budget();
  mb.set = 1;
  pthread_mutex_unlock(&mb.mu);
}

/* Resizes *c to bytes when it fits; 1 done, 0 not. Under mb.mu. */
static int resize_locked(ux_memclaim *c, unsigned long long bytes) {
  unsigned long long budget = budget_locked(), have = c->bytes;
  if (bytes > have && mb.claimed - have + bytes > budget) return 0;
  mb.claimed = mb.claimed - have + bytes;
  if (c->passing) mb.passing = mb.passing - have + bytes;
  c->bytes = bytes;
  if (bytes < have) pthread_cond_broadcast(&mb.released);
  return 1;
}

int ux_mem_claim_wait(ux_memclaim *c, unsigned long long bytes, long timeout_ms,
                      char *err, size_t errlen) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += timeout_ms / 1000;
  until.tv_nsec += (timeout_ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) { until.tv_sec++; until.tv_nsec -= 1000000000L; }
  pthread_mutex_lock(&mb.mu);
  int ok;
  while (!(ok = resize_locked(c, bytes)) &&
         pthread_cond_timedwait(&mb.released, &mb.mu, &until) == 0) {}
  pthread_mutex_unlock(&mb.mu);
  return ok ? 0 : ux_mem_claim(c, bytes, err, errlen);   /* the refusal's text */
}

int ux_mem_claim(ux_memclaim *c, unsigned long long bytes, char *err, size_t errlen) {
  pthread_mutex_lock(&mb.mu);
  unsigned long long budget = budget_locked();
  int ok = resize_locked(c, bytes);
  unsigned long long claimed = mb.claimed;
  pthread_mutex_unlock(&mb.mu);
  if (!ok && err)
    snprintf(err, errlen, "not enough memory for a run of %llu MiB: %llu of the %llu MiB memory "
             "budget are claimed by runs in progress", bytes >> 20, claimed >> 20, budget >> 20);
  return ok ? 0 : -1;
}

int ux_mem_fits(unsigned long long bytes, char *err, size_t errlen) {
  pthread_mutex_lock(&mb.mu);
  unsigned long long budget = budget_locked(), lasting = mb.claimed - mb.passing;
  pthread_mutex_unlock(&mb.mu);
  if (lasting + bytes <= budget) return 0;
  if (err)
    snprintf(err, errlen, "not enough memory for a run of %llu MiB: %llu of the %llu MiB memory "
             "budget are claimed by sessions, services and runtimes; retry when some have ended",
             bytes >> 20, lasting >> 20, budget >> 20);
  return -1;
}

void ux_mem_release(ux_memclaim *c) {
  if (!c || !c->bytes) return;
  pthread_mutex_lock(&mb.mu);
  mb.claimed -= c->bytes <= mb.claimed ? c->bytes : mb.claimed;
  if (c->passing) mb.passing -= c->bytes <= mb.passing ? c->bytes : mb.passing;
  c->bytes = 0;
  pthread_cond_broadcast(&mb.released);
  pthread_mutex_unlock(&mb.mu);
}

void ux_mem_move(ux_memclaim *to, ux_memclaim *from) {
  pthread_mutex_lock(&mb.mu);
  if (!to->bytes) to->passing = from->passing;
  else if (to->passing != from->passing)            /* one kind per claim */
    mb.passing = to->passing ? mb.passing + from->bytes : mb.passing - from->bytes;
  to->bytes += from->bytes;
  from->bytes = 0;
  pthread_mutex_unlock(&mb.mu);
}

void ux_membudget_usage(unsigned long long *claimed, unsigned long long *budget) {
  pthread_mutex_lock(&mb.mu);
  *budget = budget_locked();
  *claimed = mb.claimed;
  pthread_mutex_unlock(&mb.mu);
}
