/*
** Fair shares: how much of a pool the parties share (job workers and
** queue places, object transfers, handler threads held by agent calls)
** one party may take. A party is what a request is charged to: an
** execution API key, a Control Plane tenant. The default rule is one
** for every pool, so it is explained once (docs/internals.md, "Fair
** shares"): a party may take three quarters of a pool, and a quarter
** (at least one unit) is always left for the others; a pool of one
** unit cannot be shared, and its one unit is anybody's.
**
** ux_shares counts the units each party holds right now, for pools
** whose units are taken and given back by one request (a transfer, an
** agent call); the job pool counts its own, since it also has to choose
** which queued job may run (jobs.c).
*/
#ifndef UX_SHARE_H
#define UX_SHARE_H

#include <stddef.h>

/* The default share of a pool of `total` units: total - max(1, total/4),
** at least 1; 0 for an empty pool. */
unsigned ux_share_default(unsigned total);

typedef struct ux_shares ux_shares;

/* A count of units held per party, each party at most per_party (0 = no
** cap). Never NULL (allocation failure aborts, mem.h). */
ux_shares *ux_shares_new(unsigned per_party);
void ux_shares_free(ux_shares *s);

/* Takes a unit for party (NULL counts as ""): 0, or -1 when the party
** holds per_party units already. Thread-safe. */
int ux_shares_take(ux_shares *s, const char *party);
/* Gives one back (a party that holds none is left alone). */
void ux_shares_give(ux_shares *s, const char *party);
/* Units party holds now. */
unsigned ux_shares_held(ux_shares *s, const char *party);
unsigned ux_shares_cap(const ux_shares *s);

/* The fair pick of a queue (the job pool's, jobs.c): of n waiting items,
** oldest first, item i charged to a party that holds held[i] units now
** (UX_SHARE_NOT_NOW: item i may not be taken now), the oldest item of
** the party that holds the fewest units, under cap: its index, or -1
** when none may be taken. Within a party the order stays first in, first
** out; across parties, one party's burst queued first does not keep
** another's job waiting behind it while the first already holds more. */
#define UX_SHARE_NOT_NOW 0xffffffffu
long ux_share_pick(const unsigned *held, size_t n, unsigned cap);

#endif
