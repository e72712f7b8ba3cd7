/*
** Request counters (see cp_metrics.h).
*/
#include "server/cp/cp_metrics.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 512

typedef struct counter {
  const char *route;
  int status;
  unsigned long long n;
} counter;

struct ux_cp_metrics {
  pthread_mutex_t lock;
  counter c[SLOTS];
  size_t used;
  unsigned long long dropped;   /* pairs beyond SLOTS: never expected */
};

ux_cp_metrics *ux_cp_metrics_new(void) {
  ux_cp_metrics *m = calloc(1, sizeof *m);
  if (m) pthread_mutex_init(&m->lock, NULL);
  return m;
}

void ux_cp_metrics_free(ux_cp_metrics *m) {
  if (!m) return;
  pthread_mutex_destroy(&m->lock);
  free(m);
}

void ux_cp_metrics_count(ux_cp_metrics *m, const char *route, int status) {
  if (!m) return;
  pthread_mutex_lock(&m->lock);
  size_t i = 0;
  while (i < m->used && !(m->c[i].status == status &&
                          (m->c[i].route == route || !strcmp(m->c[i].route, route)))) i++;
  if (i == m->used && m->used < SLOTS) m->c[m->used++] = (counter){ route, status, 0 };
  if (i < m->used) m->c[i].n++;
  else m->dropped++;
  pthread_mutex_unlock(&m->lock);
}

char *ux_cp_metrics_text(ux_cp_metrics *m, size_t *len) {
  pthread_mutex_lock(&m->lock);
  size_t cap = 256 + m->used * 160, n = 0;
  char *out = malloc(cap);
  if (out) {
    n += (size_t)snprintf(out + n, cap - n,
      "# HELP sandbox_control_plane_requests_total Requests answered, by route and status.\n"
      "# TYPE sandbox_control_plane_requests_total counter\n");
    for (size_t i = 0; i < m->used; i++)
      n += (size_t)snprintf(out + n, cap - n,
        "sandbox_control_plane_requests_total{route=\"%s\",status=\"%d\"} %llu\n",
        m->c[i].route, m->c[i].status, m->c[i].n);
  }
  pthread_mutex_unlock(&m->lock);
  *len = n;
  return out;
}
