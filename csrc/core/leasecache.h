/*
** The per-Manager lease cache (spec §7.6; pitfall §10: "a process-wide
** lease cache that is never evicted, behind one lock held across network
** calls"). Each Manager owns one: no global state. It is bounded (a fixed
** capacity, least recently used entry evicted, its tokens wiped) and has
** no lock at all: a Manager lives in one Lua state, which runs one
** coroutine at a time, and coroutines switch only while a call waits on
** the network, when no lease pointer may be held (see lease.h: decide,
** copy, request, then look the lease up again and apply the reply).
**
** Keyed by session_id (32 lowercase hex, the hash of the session key), so
** the cache never holds a caller's raw session key. Evicting a session's
** lease forgets only the client's copy: its workspace and runtime stay on
** the server and the next call finds them again.
*/
#ifndef UNSB_LEASECACHE_H
#define UNSB_LEASECACHE_H

#include <stddef.h>

#include "core/error.h"
#include "core/lease.h"

#define UNSB_LEASE_CACHE_DEFAULT 64
#define UNSB_LEASE_CACHE_MAX 4096

typedef struct unsb_lease_cache unsb_lease_cache;

/* cap 0 = UNSB_LEASE_CACHE_DEFAULT; above UNSB_LEASE_CACHE_MAX is clamped.
** NULL when out of memory. */
unsb_lease_cache *unsb_lease_cache_new(size_t cap);
/* Wipes every token and frees everything; NULL is fine. */
void unsb_lease_cache_free(unsb_lease_cache *c);

/* The lease of session_id, marked most recently used, or NULL. Valid until
** the next obtain/remove on this cache. */
unsb_lease *unsb_lease_cache_find(unsb_lease_cache *c, const char *session_id);

/* The lease of session_id, created empty when absent (evicting the least
** recently used one when full). NULL with err: validation (not a
** session_id). */
unsb_lease *unsb_lease_cache_obtain(unsb_lease_cache *c, const char *session_id,
                                    unsb_error *err);

/* Forgets session_id's lease (wiped). 1 if there was one, else 0. */
int unsb_lease_cache_remove(unsb_lease_cache *c, const char *session_id);

size_t unsb_lease_cache_count(const unsb_lease_cache *c);
size_t unsb_lease_cache_capacity(const unsb_lease_cache *c);

#endif
