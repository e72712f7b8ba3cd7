/*
** Request counters (see counters.h).
*/
#include "server/http/counters.h"

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

struct ux_counters {
  pthread_mutex_t lock;
  counter c[SLOTS];
  size_t used;
  unsigned long long dropped;   /* pairs beyond SLOTS: never expected */
};

ux_counters *ux_counters_new(void) {
  ux_counters *m = calloc(1, sizeof *m);
  if (m) pthread_mutex_init(&m->lock, NULL);
  return m;
}

void ux_counters_free(ux_counters *m) {
  if (!m) return;
  pthread_mutex_destroy(&m->lock);
  free(m);
}

void ux_counters_count(ux_counters *m, const char *route, int status) {
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

char *ux_counters_text(ux_counters *m, const char *family, const char *help, size_t *len) {
  pthread_mutex_lock(&m->lock);
  size_t cap = 256 + strlen(help) + m->used * (160 + strlen(family)), n = 0;
  char *out = malloc(cap);
  if (out) {
    n += (size_t)snprintf(out + n, cap - n, "# HELP %s %s\n# TYPE %s counter\n",
                          family, help, family);
    for (size_t i = 0; i < m->used; i++)
      n += (size_t)snprintf(out + n, cap - n, "%s{route=\"%s\",status=\"%d\"} %llu\n",
                            family, m->c[i].route, m->c[i].status, m->c[i].n);
  }
  pthread_mutex_unlock(&m->lock);
  *len = n;
  return out;
}
