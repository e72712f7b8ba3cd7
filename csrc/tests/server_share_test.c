/*
** Unit tests of the fair-share rule and the per-party counters
** (server/share.h): the default share of pools of every size, a party
** refused at its cap while others still take, giving back, forgetting
** parties that hold nothing, and eight threads taking and giving at
** once. The pools that use them are proven by spec/fair_shares*_spec.lua.
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

int main(void) {
  test_rule();
  test_counts();
  test_many_parties();
  test_threads();
  return tap_done();
}
