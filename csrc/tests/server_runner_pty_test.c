/*
** The runner with a pseudo-terminal as a run's stdin and stdout, the
** shape the WebSocket terminal of spec §5.4 will use for a session's
** shell (no second PTY path: the runner's in_fd/out_fd, `setsid -w -c`
** inside the sandbox to make the terminal bash's controlling one). It
** pins what the terminal relies on: an interactive bash answers on the
** master, `stty size` follows TIOCSWINSZ on the master between commands,
** the shell's exit status is the run's, and when a run ends (the shell
** exits leaving a background child, or it is cancelled as a detach
** would) no process inside still holds the terminal: the master reads
** EOF/EIO. Needs root and bubblewrap, like server_runner_test.
*/
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "server/sandbox/runner.h"
#include "tests/tap.h"

static const char *const SHELL_ARGV[] = {
  "bash", "-c", "exec setsid -w -c bash --norc --noprofile -i 2>&1", NULL};

typedef struct {
  int master;
  ux_run *run;
  char out[16384];
  size_t len;
  int eof;
} term;

static long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

static int set_size(int fd, unsigned short rows, unsigned short cols) {
  struct winsize ws = {rows, cols, 0, 0};
  return ioctl(fd, TIOCSWINSZ, &ws);
}

/* A PTY of 30x100 and an interactive bash on it; -1 when either fails. */
static int term_start(term *t) {
  memset(t, 0, sizeof *t);
  t->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (t->master < 0 || grantpt(t->master) != 0 || unlockpt(t->master) != 0) return -1;
  const char *name = ptsname(t->master);
  int slave = name ? open(name, O_RDWR | O_NOCTTY | O_CLOEXEC) : -1;
  if (slave < 0 || set_size(t->master, 30, 100) != 0) {
    if (slave >= 0) close(slave);
    return -1;
  }
  ux_run_spec s;
  memset(&s, 0, sizeof s);
  s.argv = SHELL_ARGV;
  s.ttl_s = 60;
  s.vcpu = 1;
  s.in_fd = slave;
  s.out_fd = slave;
  char err[256] = "";
  t->run = ux_run_start(&s, err, sizeof err);
  close(slave);      /* the sandbox holds its own copies */
  if (!t->run) printf("# start failed: %s\n", err);
  return t->run ? 0 : -1;
}

/* Reads the master until `want` appears (NULL: until EOF/EIO) or ms pass;
** 1 when it came. */
static int term_wait(term *t, const char *want, long ms) {
  long end = now_ms() + ms;
  for (int i = 0; i < 10000 && now_ms() < end; i++) {
    t->out[t->len] = '\0';
    if (want && strstr(t->out, want)) return 1;
    if (t->eof) return want == NULL;
    struct pollfd p = {t->master, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    if (t->len + 1 >= sizeof t->out) t->len = 0;       /* keep the tail only */
    ssize_t k = read(t->master, t->out + t->len, sizeof t->out - 1 - t->len);
    if (k > 0) t->len += (size_t)k;
    else if (k == 0 || errno == EIO) t->eof = 1;
  }
  t->out[t->len] = '\0';
  return want ? strstr(t->out, want) != NULL : t->eof;
}

static int term_send(term *t, const char *s) {
  size_t n = strlen(s);
  return write(t->master, s, n) == (ssize_t)n ? 0 : -1;
}

static void test_interactive(void) {
  term t;
  if (term_start(&t) != 0) {
    ok(0, "an interactive bash starts on a PTY");
    return;
  }
  ok(term_send(&t, "stty size; echo hi-$((6*7))\n") == 0 && term_wait(&t, "hi-42", 20000),
     "bash answers on the master");
  ok(strstr(t.out, "30 100") != NULL, "stty size shows the master's 30x100");
  ok(strstr(t.out, "no job control") == NULL, "the PTY is bash's controlling terminal (job control)");
  t.len = 0;
  ok(set_size(t.master, 40, 120) == 0 && term_send(&t, "stty size; echo done-$((1+1))\n") == 0 &&
         term_wait(&t, "done-2", 20000) && strstr(t.out, "40 120") != NULL,
     "a resize between commands is seen by stty size");
  ok(term_send(&t, "(sleep 300 &); exit 3\n") == 0 && term_wait(&t, NULL, 20000),
     "exit leaving a background child: the terminal reads EOF (nothing holds it)");
  ux_run_result r;
  ux_run_wait(t.run, &r);
  ok(r.exit_code == 3 && !r.cancelled && !r.timed_out && !r.error[0], "the shell's exit status is the run's (%d)",
     r.exit_code);
  ux_run_result_free(&r);
  close(t.master);
}

static void test_cancel(void) {
  term t;
  if (term_start(&t) != 0) {
    ok(0, "a second bash starts on a PTY");
    return;
  }
  ok(term_send(&t, "sleep 300 & echo started-$((2*2))\n") == 0 && term_wait(&t, "started-4", 20000),
     "a shell with a background child");
  long t0 = now_ms();
  ux_run_cancel(t.run);
  ux_run_result r;
  ux_run_wait(t.run, &r);
  ok(r.cancelled, "cancelled (as a detach or a closed socket will)");
  ok(term_wait(&t, NULL, 10000), "then the terminal reads EOF: no process holds it");
  /* the bound only tells "killed" from "waited for the sleep" */
  ok(now_ms() - t0 < 30000, "within %ld ms", now_ms() - t0);
  ux_run_result_free(&r);
  close(t.master);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (geteuid() != 0 || access("/usr/bin/bwrap", X_OK) != 0 || access("/usr/bin/setsid", X_OK) != 0) {
    printf("1..0 # SKIP needs root, /usr/bin/bwrap and /usr/bin/setsid\n");
    return 0;
  }
  char tmpdir[] = "/var/tmp/unsb-ptytest-XXXXXX";
  if (!mkdtemp(tmpdir)) {
    printf("Bail out! mkdtemp\n");
    return 1;
  }
  ux_runner_set_tmpdir(tmpdir);
  ux_isolation iso;
  ux_runner_init(1, &iso);
  test_interactive();
  test_cancel();
  ok(rmdir(tmpdir) == 0, "every run directory was removed (%s)", tmpdir);
  ux_runner_shutdown();
  return tap_done();
}
