/*
** Unit tests of the fair-share rule and the per-party counters
** (server/share.h): the default share of pools of every size, a party
** refused at its cap while others still take, giving back, forgetting
** parties that hold nothing, eight threads taking and giving at once,
** and the fair pick of the job pool's queue (order within a party,
** fairness across parties, items held back). The pools that use them are proven by spec/fair_shares*_spec.lua.
*/
#include <pthread.h>
#include <stdio.h>

#include "server/share.h"
#include "tests/tap.h"

static void test_rule(void) {
  ok(ux_share_default(0) == 0, "an empty pool: nothing");
  ok(ux_share_default(1) == 1, "one unit cannot be shared: it is anybody's");
  ok(ux_share_default(2) == 1, "2: one, one left");
  ok(ux_share_default(4) == 3, "4: three, one left");
  ok(ux_share_default(7) == 6, "7: six (a quarter rounds down, at least one is left)");
  ok(ux_share_default(8) == 6, "8: six, two left");
  ok(ux_share_default(64) == 48, "64: 48, 16 left");
  ok(ux_share_default(512) == 384, "512: 384, 128 left");
  int left_ok = 1;
  for (unsigned t = 2; t < 5000; t++) {
    unsigned s = ux_share_default(t);
    if (s < 1 || s >= t || t - s < t / 4) left_ok = 0;
  }
  ok(left_ok, "every pool of 2 or more leaves the others a quarter, at least one");
}

static void test_counts(void) {
  ux_shares *s = ux_shares_new(2);
  ok(ux_shares_take(s, "a") == 0 && ux_shares_take(s, "a") == 0, "a takes its two");
  ok(ux_shares_take(s, "a") == -1, "a third is refused");
  ok(ux_shares_take(s, "b") == 0, "b still takes one");
  ok(ux_shares_held(s, "a") == 2 && ux_shares_held(s, "b") == 1, "held: a 2, b 1");
  ux_shares_give(s, "a");
  ok(ux_shares_take(s, "a") == 0, "a gives one back and takes it again");
  ux_shares_give(s, "b");
  ux_shares_give(s, "b");
  ok(ux_shares_held(s, "b") == 0, "one give too many leaves a party at 0");
  ok(ux_shares_take(s, NULL) == 0 && ux_shares_held(s, "") == 1, "NULL is the party \"\"");
  ux_shares_give(s, NULL);
  ok(ux_shares_cap(s) == 2, "the cap is the one given");
  ux_shares_free(s);
  s = ux_shares_new(0);
  int all = 1;
  for (int i = 0; i < 1000; i++) all &= ux_shares_take(s, "x") == 0;
  ok(all && ux_shares_held(s, "x") == 1000, "cap 0: no cap");
  ux_shares_free(s);
}

/* many parties come and go: the table stays as long as the holders */
static void test_many_parties(void) {
  ux_shares *s = ux_shares_new(1);
  char name[32];
  int fine = 1;
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < 100; i++) {
      snprintf(name, sizeof name, "tenant-%d", i);
      fine &= ux_shares_take(s, name) == 0 && ux_shares_take(s, name) == -1;
    }
    for (int i = 99; i >= 0; i--) {
      snprintf(name, sizeof name, "tenant-%d", i);
      ux_shares_give(s, name);
      fine &= ux_shares_held(s, name) == 0;
    }
  }
  ok(fine, "100 parties at their cap, given back in another order, three times");
  ux_shares_free(s);
}

static void *hammer(void *arg) {
  ux_shares *s = arg;
  for (int i = 0; i < 20000; i++) {
    const char *p = i % 2 ? "odd" : "even";
    if (ux_shares_take(s, p) == 0) ux_shares_give(s, p);
  }
  return NULL;
}

static void test_threads(void) {
  ux_shares *s = ux_shares_new(3);
  pthread_t t[8];
  for (int i = 0; i < 8; i++) pthread_create(&t[i], NULL, hammer, s);
  for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
  ok(ux_shares_held(s, "odd") == 0 && ux_shares_held(s, "even") == 0,
     "8 threads taking and giving leave nothing held");
  ux_shares_free(s);
}

static void test_pick(void) {
  unsigned none[1] = { 0 };
  ok(ux_share_pick(none, 0, 3) == -1, "an empty queue: nothing to pick");
  unsigned full[3] = { 3, 3, 3 };
  ok(ux_share_pick(full, 3, 3) == -1, "every party at its cap: nothing");
  unsigned tie[4] = { 1, 1, 1, 1 };
  ok(ux_share_pick(tie, 4, 3) == 0, "parties holding as much: the oldest item");
  unsigned fewer[4] = { 2, 2, 0, 1 };
  ok(ux_share_pick(fewer, 4, 3) == 2, "the party holding the fewest, though queued later");
  unsigned held_back[3] = { UX_SHARE_NOT_NOW, UX_SHARE_NOT_NOW, 2 };
  ok(ux_share_pick(held_back, 3, 3) == 2, "items that may not be taken now are skipped");
  unsigned all_back[2] = { UX_SHARE_NOT_NOW, UX_SHARE_NOT_NOW };
  ok(ux_share_pick(all_back, 2, 0xfffffff0u) == -1, "and never taken, whatever the cap");
  unsigned capped[3] = { 3, 3, 2 };
  ok(ux_share_pick(capped, 3, 3) == 2, "a party at its cap waits; another's item goes");
}

/* A queue as the job pool runs it: party A queues a burst of 20, then B
** 3 and C 1; 4 workers, a cap of 3 per party; the pick runs a job while
** a worker is free, else the oldest running job ends. */
#define SIM_JOBS 24
static void test_pick_queue(void) {
  char party[SIM_JOBS];
  int seq[SIM_JOBS], taken[SIM_JOBS] = { 0 }, order[SIM_JOBS], n_order = 0;
  for (int i = 0; i < SIM_JOBS; i++) {
    party[i] = i < 20 ? 'A' : i < 23 ? 'B' : 'C';
    seq[i] = i;
  }
  int running[SIM_JOBS], n_running = 0, over_cap = 0;
  unsigned held[SIM_JOBS];
  int idx[SIM_JOBS];
  for (int step = 0; step < 4 * SIM_JOBS && n_order < SIM_JOBS; step++) {
    size_t n = 0;
    for (int i = 0; i < SIM_JOBS; i++) {
      if (taken[i]) continue;
      unsigned h = 0;
      for (int r = 0; r < n_running; r++) h += party[running[r]] == party[i];
      idx[n] = i;
      held[n++] = h;
    }
    long p = n_running < 4 ? ux_share_pick(held, n, 3) : -1;
    if (p >= 0) {
      int j = idx[p];
      taken[j] = 1;
      order[n_order++] = j;
      running[n_running++] = j;
      unsigned mine = 0;
      for (int r = 0; r < n_running; r++) mine += party[running[r]] == party[j];
      over_cap |= mine > 3;
    } else if (n_running > 0) {
      for (int r = 1; r < n_running; r++) running[r - 1] = running[r];
      n_running--;
    }
  }
  ok(n_order == SIM_JOBS, "every job ran: no party starves");
  ok(!over_cap, "no party ever held more than its cap");
  int first_b = -1, first_c = -1, fifo = 1, last_a = -1, last_b = -1;
  for (int k = 0; k < n_order; k++) {
    int j = order[k];
    if (party[j] == 'B' && first_b < 0) first_b = k;
    if (party[j] == 'C' && first_c < 0) first_c = k;
    if (party[j] == 'A') { fifo &= seq[j] > last_a; last_a = seq[j]; }
    if (party[j] == 'B') { fifo &= seq[j] > last_b; last_b = seq[j]; }
  }
  ok(fifo, "within a party, first in, first out");
  ok(first_b >= 0 && first_b < 4, "B's first job ran among the first four, ahead of A's burst");
  ok(first_c >= 0 && first_c < 6, "so did C's, queued last, within the first six");
}

int main(void) {
  test_rule();
  test_counts();
  test_many_parties();
  test_threads();
  test_pick();
  test_pick_queue();
  return tap_done();
}
