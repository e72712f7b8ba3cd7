/*
** The runs' memory budget (membudget.h): the default share of a
** /proc/meminfo text, and claims that grow, shrink, move, wait for room
** and are given back without ever passing the budget, also from threads
** at once.
*/
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "server/sandbox/membudget.h"
#include "tests/tap.h"

#define GiB (1ull << 30)

static void test_sizes(void) {
  ok(ux_run_memory_bytes(1) == GiB && ux_run_memory_bytes(8) == 8 * GiB &&
     ux_run_memory_bytes(0) == GiB && ux_run_memory_bytes(99) == 8 * GiB,
     "a run's limit is vcpu (1..8) x 1 GiB");
  ok(ux_membudget_default_from("MemTotal:       24684000 kB\nMemFree: 1 kB\n") ==
     24684000ull / 100 * 75 * 1024, "75%% of MemTotal");
  ok(ux_membudget_default_from("MemFree: 3 kB\nMemTotal: 1000 kB\n") == GiB,
     "never below one run (1 GiB)");
  ok(ux_membudget_default_from("MemFree: 3 kB\n") == 0 && ux_membudget_default_from("") == 0 &&
     ux_membudget_default_from("XMemTotal: 5 kB\n") == 0 && ux_membudget_default_from(NULL) == 0,
     "no MemTotal line: 0 (the caller uses the minimum)");
}

static void test_claims(void) {
  unsigned long long claimed, budget;
  char err[200] = "";
  ux_membudget_set(3 * GiB);
  ux_memclaim a = { 0 }, b = { 0 }, c = { 0 };
  ok(ux_mem_claim(&a, 2 * GiB, err, sizeof err) == 0 && a.bytes == 2 * GiB, "2 of 3 GiB");
  ok(ux_mem_claim(&b, 2 * GiB, err, sizeof err) == -1 && b.bytes == 0 &&
     strstr(err, "not enough memory for a run of 2048 MiB: 2048 of the 3072 MiB"),
     "2 more do not fit, and nothing is claimed: %s", err);
  ok(ux_mem_claim(&b, GiB, err, sizeof err) == 0, "1 more fits exactly");
  ux_membudget_usage(&claimed, &budget);
  ok(claimed == 3 * GiB && budget == 3 * GiB, "3 of 3 GiB claimed");
  ok(ux_mem_claim(&a, GiB, err, sizeof err) == 0 && a.bytes == GiB, "a claim shrinks freely");
  ok(ux_mem_claim(&a, 2 * GiB, err, sizeof err) == 0, "and grows into what it gave back");
  ok(ux_mem_claim(&a, 3 * GiB, err, sizeof err) == -1 && a.bytes == 2 * GiB,
     "a growth that does not fit leaves the claim as it was");
  ux_mem_move(&c, &a);
  ux_membudget_usage(&claimed, &budget);
  ok(c.bytes == 2 * GiB && a.bytes == 0 && claimed == 3 * GiB, "a move changes the owner, not the sum");
  ux_mem_release(&c);
  ux_mem_release(&c);
  ux_mem_release(&b);
  ux_mem_release(NULL);
  ux_membudget_usage(&claimed, &budget);
  ok(claimed == 0 && c.bytes == 0, "releases give everything back, twice is harmless");
}

static void *waiter(void *arg) {
  ux_memclaim *m = arg;
  char err[200];
  return (void *)(long)ux_mem_claim_wait(m, 2 * GiB, 20000, err, sizeof err);
}

static void test_wait(void) {
  char err[200] = "";
  ux_membudget_set(2 * GiB);
  ux_memclaim held = { 0 }, want = { 0 };
  ok(ux_mem_claim(&held, GiB, err, sizeof err) == 0, "1 of 2 GiB held");
  ok(ux_mem_fits(GiB, err, sizeof err) == 0 && ux_mem_fits(2 * GiB, err, sizeof err) == -1 &&
     strstr(err, "1024 of the 2048 MiB"), "fits: 1 GiB yes, 2 GiB no (%s), nothing claimed by asking", err);
  ux_memclaim run = { 0, 1 };
  ok(ux_mem_claim(&run, GiB, err, sizeof err) == 0 && ux_mem_fits(GiB, err, sizeof err) == 0 &&
     ux_mem_fits(2 * GiB, err, sizeof err) == -1, "a passing claim (the runner's, for one run) "
     "is not counted against a submission: the budget is full, 1 GiB still fits");
  ux_mem_release(&run);
  ok(ux_mem_claim_wait(&want, 2 * GiB, 50, err, sizeof err) == -1 && want.bytes == 0,
     "a wait that nothing ends is refused at its timeout: %s", err);
  pthread_t t;
  pthread_create(&t, NULL, waiter, &want);
  ux_mem_release(&held);                       /* wakes the waiter, whenever it waits */
  void *rc;
  pthread_join(t, &rc);
  ok((long)rc == 0 && want.bytes == 2 * GiB, "a release lets a waiting claim in");
  ux_mem_release(&want);
}

static void *claimer(void *arg) {
  int *won = arg;
  for (int i = 0; i < 2000; i++) {
    ux_memclaim m = { 0 };
    if (ux_mem_claim(&m, GiB, NULL, 0) == 0) {
      unsigned long long claimed, budget;
      ux_membudget_usage(&claimed, &budget);
      if (claimed > budget) *won = -1000000;
      (*won)++;
      ux_mem_release(&m);
    }
  }
  return NULL;
}

static void test_threads(void) {
  ux_membudget_set(2 * GiB);
  pthread_t t[8];
  int won[8] = { 0 };
  for (int i = 0; i < 8; i++) pthread_create(&t[i], NULL, claimer, &won[i]);
  int total = 0, over = 0;
  for (int i = 0; i < 8; i++) {
    pthread_join(t[i], NULL);
    if (won[i] < 0) over = 1;
    total += won[i];
  }
  unsigned long long claimed, budget;
  ux_membudget_usage(&claimed, &budget);
  ok(!over && total > 0 && claimed == 0, "8 threads claiming at once never pass the budget (%d claims)", total);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  test_sizes();
  test_claims();
  test_wait();
  test_threads();
  return tap_done();
}
