/*
** The share rule and the per-party counters of share.h. The table holds
** only parties that hold a unit right now, so it is as long as the
** number of units in flight (a few hundred at most: each unit is a
** request being handled) and a linear search under one mutex is enough.
*/
#include "server/share.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "server/mem.h"

unsigned ux_share_default(unsigned total) {
  if (total == 0) return 0;
  unsigned left = total / 4 > 0 ? total / 4 : 1;
  return total > left ? total - left : 1;
}

typedef struct party {
  char *name;
  unsigned held;
} party;

struct ux_shares {
  pthread_mutex_t mu;
  unsigned per_party;
  party *p;
  size_t n, cap;
};

ux_shares *ux_shares_new(unsigned per_party) {
  ux_shares *s = ux_xcalloc(1, sizeof *s);
  pthread_mutex_init(&s->mu, NULL);
  s->per_party = per_party;
  return s;
}

void ux_shares_free(ux_shares *s) {
  if (!s) return;
  for (size_t i = 0; i < s->n; i++) free(s->p[i].name);
  free(s->p);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

/* The entry of name, or NULL (mu held). */
static party *find(ux_shares *s, const char *name) {
  for (size_t i = 0; i < s->n; i++)
    if (!strcmp(s->p[i].name, name)) return &s->p[i];
  return NULL;
}

int ux_shares_take(ux_shares *s, const char *name) {
  if (!name) name = "";
  pthread_mutex_lock(&s->mu);
  party *p = find(s, name);
  if (p && s->per_party && p->held >= s->per_party) {
    pthread_mutex_unlock(&s->mu);
    return -1;
  }
  if (!p) {
    if (s->n == s->cap) {
      s->cap = s->cap ? 2 * s->cap : 8;
      s->p = ux_xrealloc(s->p, s->cap * sizeof *s->p);
    }
    p = &s->p[s->n++];
    p->name = ux_xstrdup(name);
    p->held = 0;
  }
  p->held++;
  pthread_mutex_unlock(&s->mu);
  return 0;
}

void ux_shares_give(ux_shares *s, const char *name) {
  if (!name) name = "";
  pthread_mutex_lock(&s->mu);
  party *p = find(s, name);
  if (p && --p->held == 0) {                 /* forgotten once it holds nothing */
    free(p->name);
    *p = s->p[--s->n];
  }
  pthread_mutex_unlock(&s->mu);
}

unsigned ux_shares_held(ux_shares *s, const char *name) {
  if (!name) name = "";
  pthread_mutex_lock(&s->mu);
  party *p = find(s, name);
  unsigned n = p ? p->held : 0;
  pthread_mutex_unlock(&s->mu);
  return n;
}

unsigned ux_shares_cap(const ux_shares *s) { return s->per_party; }

long ux_share_pick(const unsigned *held, size_t n, unsigned cap) {
  long best = -1;
  for (size_t i = 0; i < n; i++) {
    if (held[i] == UX_SHARE_NOT_NOW || held[i] >= cap) continue;
    if (best < 0 || held[i] < held[best]) best = (long)i;   /* ties: the older */
  }
  return best;
}
