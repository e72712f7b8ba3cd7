/*
** Lease cache (see leasecache.h): a fixed array scanned linearly. With a
** few dozen sessions per Manager a scan is cheaper than any index, and a
** use counter per slot gives the LRU order with no list to keep straight.
*/
#include "core/leasecache.h"
#include "core/cpids.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char session_id[UNSB_SESSION_ID_LEN + 1];
  uint64_t used;                 /* 0 = free slot */
  unsb_lease lease;
} slot;

struct unsb_lease_cache {
  size_t cap, count;
  uint64_t tick;
  slot *slots;
};

unsb_lease_cache *unsb_lease_cache_new(size_t cap) {
  unsb_lease_cache *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->cap = cap == 0 ? UNSB_LEASE_CACHE_DEFAULT : cap > UNSB_LEASE_CACHE_MAX ? UNSB_LEASE_CACHE_MAX : cap;
  c->slots = calloc(c->cap, sizeof *c->slots);
  if (!c->slots) {
    free(c);
    return NULL;
  }
  return c;
}

void unsb_lease_cache_free(unsb_lease_cache *c) {
  if (!c) return;
  for (size_t i = 0; i < c->cap; i++)
    if (c->slots[i].used) unsb_lease_clear(&c->slots[i].lease);
  free(c->slots);
  free(c);
}

static int valid_session_id(const char *s) {
  if (!s || strlen(s) != UNSB_SESSION_ID_LEN) return 0;
  for (size_t i = 0; i < UNSB_SESSION_ID_LEN; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  return 1;
}

static slot *lookup(unsb_lease_cache *c, const char *session_id) {
  if (!valid_session_id(session_id)) return NULL;
  for (size_t i = 0; i < c->cap; i++)
    if (c->slots[i].used && strcmp(c->slots[i].session_id, session_id) == 0) return &c->slots[i];
  return NULL;
}

unsb_lease *unsb_lease_cache_find(unsb_lease_cache *c, const char *session_id) {
  slot *s = lookup(c, session_id);
  if (!s) return NULL;
  s->used = ++c->tick;
  return &s->lease;
}

/* A free slot, or the least recently used one emptied. */
static slot *free_slot(unsb_lease_cache *c) {
  slot *victim = &c->slots[0];
  for (size_t i = 0; i < c->cap; i++) {
    if (!c->slots[i].used) return &c->slots[i];
    if (c->slots[i].used < victim->used) victim = &c->slots[i];
  }
  unsb_lease_clear(&victim->lease);
  victim->used = 0;
  c->count--;
  return victim;
}

unsb_lease *unsb_lease_cache_obtain(unsb_lease_cache *c, const char *session_id,
                                    unsb_error *err) {
  slot *s;
  if (!valid_session_id(session_id)) {
    unsb_fail(err, UNSB_EVALIDATION, "not a session id (32 lowercase hex expected)");
    return NULL;
  }
  if ((s = lookup(c, session_id))) {
    s->used = ++c->tick;
    return &s->lease;
  }
  s = free_slot(c);
  memcpy(s->session_id, session_id, UNSB_SESSION_ID_LEN + 1);
  unsb_lease_init(&s->lease);
  s->used = ++c->tick;
  c->count++;
  return &s->lease;
}

int unsb_lease_cache_remove(unsb_lease_cache *c, const char *session_id) {
  slot *s = lookup(c, session_id);
  if (!s) return 0;
  unsb_lease_clear(&s->lease);
  s->used = 0;
  c->count--;
  return 1;
}

size_t unsb_lease_cache_count(const unsb_lease_cache *c) { return c->count; }
size_t unsb_lease_cache_capacity(const unsb_lease_cache *c) { return c->cap; }
