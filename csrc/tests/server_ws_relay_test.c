/*
** The terminal relay (http/ws_relay.c) driven without a server or a
** sandbox: a socketpair is the upgraded socket (this test is the client:
** it masks its frames and parses the server's), a PTY pair is the
** terminal (this test holds the slave, as the shell would), and two
** eventfds stand for the program's end and the server's stop. So every
** way a terminal ends, every refusal of hostile input and the
** back-pressure bound are checked in milliseconds, and under ASan.
*/
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <pty.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "core/ws/ws.h"
#include "server/http/ws_relay.h"
#include "tests/tap.h"

typedef struct fixture {
  int client, sock, master, slave, done_fd, stop_fd;
  int code;                   /* what exit_code answers */
  ux_ws_relay_cfg cfg;
  pthread_t thread;
  int result;
  unsigned char in[1 << 20];  /* what the client received, not yet parsed */
  size_t in_len;
} fixture;

static long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

static int exit_code(void *ctx) { return ((fixture *)ctx)->code; }

static void *relay_main(void *arg) {
  fixture *f = arg;
  f->result = ux_ws_relay(&f->cfg);
  return NULL;
}

/* A relay on fresh descriptors; extra bytes as if read with the headers. */
static fixture *start(long idle_ms, const void *extra, size_t extra_len) {
  fixture *f = calloc(1, sizeof *f);
  int sv[2];
  if (!f || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 ||
      openpty(&f->master, &f->slave, NULL, NULL, NULL) != 0) {
    printf("Bail out! fixture\n");
    exit(1);
  }
  struct termios tio;
  tcgetattr(f->slave, &tio);
  cfmakeraw(&tio);                             /* the test reads exactly what was typed */
  tcsetattr(f->slave, TCSANOW, &tio);
  f->client = sv[0];
  f->sock = sv[1];
  fcntl(f->sock, F_SETFL, O_NONBLOCK);
  f->done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  f->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  f->cfg = (ux_ws_relay_cfg){ .sock = f->sock, .extra = extra, .extra_len = extra_len,
                              .stop_fd = f->stop_fd, .pty = f->master, .done_fd = f->done_fd,
                              .exit_code = exit_code, .ctx = f, .idle_ms = idle_ms,
                              .write_ms = 300 };
  if (pthread_create(&f->thread, NULL, relay_main, f) != 0) exit(1);
  return f;
}

/* Joins the relay (bounded: 15 s) and frees everything; its result. */
static int finish(fixture *f) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 15;
  int joined = pthread_timedjoin_np(f->thread, NULL, &until) == 0;
  if (!joined) {
    printf("Bail out! the relay did not end within 15 s\n");
    exit(1);
  }
  int rc = f->result;
  close(f->client); close(f->sock); close(f->master);
  if (f->slave >= 0) close(f->slave);
  close(f->done_fd); close(f->stop_fd);
  free(f);
  return rc;
}

static void signal_fd(int fd) {
  uint64_t one = 1;
  if (write(fd, &one, sizeof one) != sizeof one) printf("# eventfd write failed\n");
}

/* A masked client frame. */
static size_t frame(unsigned char *out, int b0, const void *data, size_t n) {
  static const unsigned char key[4] = {0x11, 0x22, 0x33, 0x44};
  size_t h = 0;
  out[h++] = (unsigned char)b0;
  if (n < 126) out[h++] = (unsigned char)(0x80 | n);
  else { out[h++] = 0x80 | 126; out[h++] = (unsigned char)(n >> 8); out[h++] = (unsigned char)n; }
  memcpy(out + h, key, 4);
  h += 4;
  for (size_t i = 0; i < n; i++) out[h + i] = ((const unsigned char *)data)[i] ^ key[i % 4];
  return h + n;
}

static void send_frame(fixture *f, int b0, const void *data, size_t n) {
  unsigned char buf[70000];
  size_t len = frame(buf, b0, data, n);
  if (write(f->client, buf, len) != (ssize_t)len) printf("# client write failed\n");
}

/* The next server frame (waits ≤ ms): opcode, or -1 (none), -2 (the
** socket ended). Payload copied to out (NUL-terminated, cut at cap). */
static int next_frame(fixture *f, char *out, size_t cap, size_t *len, long ms) {
  long end = now_ms() + ms;
  for (int i = 0; i < 100000; i++) {
    if (f->in_len >= 2) {
      size_t n = f->in[1] & 0x7f, h = 2;
      if (n == 126 && f->in_len >= 4) { n = (size_t)f->in[2] << 8 | f->in[3]; h = 4; }
      else if (n == 127 && f->in_len >= 10) {
        n = 0;
        for (int k = 0; k < 8; k++) n = n << 8 | f->in[2 + k];
        h = 10;
      }
      if ((n < 126 || h > 2) && f->in_len >= h + n) {
        int op = f->in[0] & 0x0f;
        size_t c = n < cap - 1 ? n : cap - 1;
        memcpy(out, f->in + h, c);
        out[c] = '\0';
        if (len) *len = n;
        memmove(f->in, f->in + h + n, f->in_len - h - n);
        f->in_len -= h + n;
        return op;
      }
    }
    long left = end - now_ms();
    if (left <= 0) return -1;
    struct pollfd p = {f->client, POLLIN, 0};
    if (poll(&p, 1, (int)left) <= 0) return -1;
    ssize_t k = read(f->client, f->in + f->in_len, sizeof f->in - f->in_len);
    if (k <= 0) return -2;
    f->in_len += (size_t)k;
  }
  return -1;
}

/* Terminal output until `want` shows (or ms); 1 when it came. */
static int output_has(fixture *f, const char *want, long ms) {
  char acc[8192] = "", p[4096];
  size_t used = 0, n;
  long end = now_ms() + ms;
  while (now_ms() < end) {
    int op = next_frame(f, p, sizeof p, &n, end - now_ms());
    if (op < 0) return 0;
    if (op != UNSB_WS_BINARY) continue;
    if (used + strlen(p) >= sizeof acc) used = 0;
    memcpy(acc + used, p, strlen(p) + 1);
    used += strlen(p);
    if (strstr(acc, want)) return 1;
  }
  return 0;
}

/* The close code of the next close frame (skipping others), 0 for none. */
static unsigned close_code(fixture *f, long ms) {
  char p[256];
  size_t n;
  long end = now_ms() + ms;
  while (now_ms() < end) {
    int op = next_frame(f, p, sizeof p, &n, end - now_ms());
    if (op < 0) return 0;
    if (op == UNSB_WS_CLOSE) return n >= 2 ? (unsigned)((unsigned char)p[0] << 8 | (unsigned char)p[1]) : 1005;
  }
  return 0;
}

/* Reads the slave until it has `want` (≤ ms). */
static int slave_got(fixture *f, const char *want, long ms) {
  char buf[4096];
  size_t used = 0;
  long end = now_ms() + ms;
  while (now_ms() < end && used < sizeof buf - 1) {
    struct pollfd p = {f->slave, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    ssize_t k = read(f->slave, buf + used, sizeof buf - 1 - used);
    if (k <= 0) break;
    used += (size_t)k;
    buf[used] = '\0';
    if (strstr(buf, want)) return 1;
  }
  return 0;
}

static void client_close(fixture *f) {
  unsigned char pl[2] = {0x03, 0xe8};          /* 1000 */
  send_frame(f, 0x88, pl, 2);
}

static void test_both_ways(void) {
  unsigned char early[64];
  size_t n = frame(early, 0x82, "early\n", 6);
  fixture *f = start(10000, early, n);
  ok(slave_got(f, "early\n", 5000), "bytes read with the handshake reach the terminal first");
  ok(write(f->slave, "hello-out", 9) == 9 && output_has(f, "hello-out", 5000),
     "terminal output arrives as a binary frame");
  send_frame(f, 0x82, "typed", 5);
  ok(slave_got(f, "typed", 5000), "a binary frame is typed into the terminal");
  send_frame(f, 0x81, "{\"type\":\"resize\",\"cols\":100,\"rows\":30}", 38);
  send_frame(f, 0x89, "ping!", 5);
  char p[256];
  size_t len;
  int op = next_frame(f, p, sizeof p, &len, 5000);
  ok(op == UNSB_WS_PONG && !strcmp(p, "ping!"), "a ping gets a pong with its payload (%d)", op);
  send_frame(f, 0x89, "", 0);
  op = next_frame(f, p, sizeof p, &len, 5000);
  ok(op == UNSB_WS_PONG && len == 0, "an empty ping gets an empty pong (%d)", op);
  struct winsize ws;
  ok(ioctl(f->slave, TIOCGWINSZ, &ws) == 0 && ws.ws_row == 30 && ws.ws_col == 100,
     "a resize reaches the terminal (%ux%u)", ws.ws_col, ws.ws_row);
  ok(write(f->slave, "last words", 10) == 10, "the program writes before it ends");
  close(f->slave);
  f->slave = -1;
  f->code = 7;
  signal_fd(f->done_fd);
  ok(output_has(f, "last words", 5000), "output written before the end is all relayed");
  op = next_frame(f, p, sizeof p, &len, 5000);
  is_str(op == UNSB_WS_TEXT ? p : "(none)", "{\"type\":\"exit\",\"exit_code\":7}", "then the exit message");
  ok(close_code(f, 5000) == 1000, "then a close 1000");
  client_close(f);
  ok(finish(f) == UX_RELAY_EXITED, "the relay reports the program's end");
}

static void test_ends(void) {
  fixture *f = start(10000, NULL, 0);
  f->code = -1;
  signal_fd(f->done_fd);
  ok(close_code(f, 5000) == 1001, "a program ended from outside: close 1001, no exit message");
  client_close(f);
  ok(finish(f) == UX_RELAY_KILLED, "reported as killed");

  f = start(10000, NULL, 0);
  client_close(f);
  ok(close_code(f, 5000) == 1000, "a client's close is answered with a close 1000");
  ok(finish(f) == UX_RELAY_CLIENT_CLOSED, "reported as the client's close");

  f = start(10000, NULL, 0);
  signal_fd(f->stop_fd);
  ok(close_code(f, 5000) == 1001, "the server's stop: close 1001");
  client_close(f);
  ok(finish(f) == UX_RELAY_STOPPING, "reported as the stop");

  f = start(200, NULL, 0);
  long t0 = now_ms();
  unsigned c = close_code(f, 5000);
  long took = now_ms() - t0;
  ok(c == 1001 && took >= 150 && took < 4000, "idle for 200 ms: close 1001 (%ld ms)", took);
  ok(finish(f) == UX_RELAY_IDLE, "reported as idle");

  f = start(10000, NULL, 0);
  shutdown(f->client, SHUT_RDWR);
  ok(finish(f) == UX_RELAY_CLIENT_GONE, "a client that hangs up ends the relay");
}

/* One hostile input: the close code it gets. */
static unsigned hostile(const void *bytes, size_t n) {
  fixture *f = start(10000, NULL, 0);
  if (write(f->client, bytes, n) != (ssize_t)n) printf("# write failed\n");
  unsigned c = close_code(f, 5000);
  shutdown(f->client, SHUT_RDWR);
  int why = finish(f);
  return why == UX_RELAY_PROTOCOL || why == UX_RELAY_CLIENT_GONE ? c : 0;
}

static unsigned hostile_text(const char *text) {
  unsigned char buf[512];
  return hostile(buf, frame(buf, 0x81, text, strlen(text)));
}

static void test_hostile(void) {
  static const unsigned char unmasked[] = {0x82, 0x02, 'l', 's'};
  static const unsigned char huge[] = {0x82, 0xff, 0x40, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4};
  static const unsigned char garbage[] = "\x13\x37 not a frame at all";
  ok(hostile(unmasked, sizeof unmasked) == 1002, "an unmasked frame: 1002");
  ok(hostile(huge, sizeof huge) == 1009, "a 64-bit length of 2^62: 1009");
  ok(hostile(garbage, sizeof garbage - 1) == 1002, "garbage: 1002");
  unsigned char bad_utf8[16];
  ok(hostile(bad_utf8, frame(bad_utf8, 0x81, "\xff\xfe", 2)) == 1007, "text that is not UTF-8: 1007");
  static const char *const refused[] = {
    "{not json", "[]", "\"resize\"", "{}", "{\"type\":\"resize\"}",
    "{\"type\":\"resize\",\"cols\":0,\"rows\":24}", "{\"type\":\"resize\",\"cols\":80,\"rows\":1001}",
    "{\"type\":\"resize\",\"cols\":-1,\"rows\":24}", "{\"type\":\"resize\",\"cols\":\"80\",\"rows\":24}",
    "{\"type\":\"resize\",\"cols\":80.5,\"rows\":24}", "{\"type\":\"resize\",\"cols\":1e9,\"rows\":24}",
    "{\"type\":\"resize\",\"cols\":80,\"rows\":24,\"extra\":1}",
    "{\"type\":\"resize\",\"cols\":80,\"cols\":90,\"rows\":24}",
    "{\"type\":\"resize\",\"cols\":18446744073709551697,\"rows\":24}",
    "{\"type\":\"exit\",\"exit_code\":0}", "{\"type\":null}",
  };
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
    ok(hostile_text(refused[i]) == 1008, "control message %s: 1008", refused[i]);
  fixture *f = start(10000, NULL, 0);
  unsigned char hdr[14] = {0x82, 0x80 | 127, 0, 0, 0, 0, 0, 1, 0, 1, 9, 9, 9, 9};   /* 65537 */
  if (write(f->client, hdr, sizeof hdr) != sizeof hdr) printf("# write failed\n");
  ok(close_code(f, 5000) == 1009, "a message over 64 KiB: 1009 before its bytes are read");
  shutdown(f->client, SHUT_RDWR);
  finish(f);
}

/* A client that reads nothing while the program writes as fast as it can. */
static void test_backpressure(void) {
  fixture *f = start(60000, NULL, 0);
  int sz = 4096;
  setsockopt(f->client, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
  fcntl(f->slave, F_SETFL, O_NONBLOCK);
  char chunk[4096];
  memset(chunk, 'y', sizeof chunk);
  size_t accepted = 0;
  long idle_since = now_ms();
  for (int i = 0; i < 100000 && now_ms() - idle_since < 1000; i++) {
    ssize_t k = write(f->slave, chunk, sizeof chunk);
    if (k > 0) { accepted += (size_t)k; idle_since = now_ms(); }
    else t_sleep_ms(1);
  }
  /* the relay's queue, the socket's buffers and the PTY's buffer: a few
  ** hundred KiB, and then the program blocks */
  ok(accepted > UX_WS_RELAY_FRAME && accepted < 4u * 1024 * 1024,
     "the program is held back once the queue is full (%zu bytes taken)", accepted);
  ok(finish(f) == UX_RELAY_STALLED, "a client that reads nothing for write_ms is dropped");
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  test_both_ways();
  test_ends();
  test_hostile();
  test_backpressure();
  return tap_done();
}
