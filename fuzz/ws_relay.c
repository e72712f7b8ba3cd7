/*
** The terminal relay (server/http/ws_relay.c) on any client bytes: they
** arrive as the bytes read with the handshake, the client has already
** hung up, and a PTY stands for the shell. Whatever the input (frames,
** control messages, garbage), the relay must end with a known reason,
** free what it took, and leave the terminal's size either untouched or
** within 1..1000 each way (the only resize it may apply).
*/
#include <pty.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "server/http/ws_relay.h"

static int code(void *ctx) {
  (void)ctx;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int sv[2], master, slave;
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) != 0) return 0;
  if (openpty(&master, &slave, NULL, NULL, NULL) != 0) {
    close(sv[0]);
    close(sv[1]);
    return 0;
  }
  int done = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  close(sv[0]);                                  /* the client is gone already */
  ux_ws_relay_cfg c;
  memset(&c, 0, sizeof c);
  c.sock = sv[1];
  c.extra = data;
  c.extra_len = size;
  c.stop_fd = -1;
  c.pty = master;
  c.done_fd = done;
  c.exit_code = code;
  c.idle_ms = 10000;
  int why = ux_ws_relay(&c);
  if (why < UX_RELAY_EXITED || why > UX_RELAY_ERROR) abort();
  struct winsize ws;
  if (ioctl(slave, TIOCGWINSZ, &ws) == 0 && !(ws.ws_row == 0 && ws.ws_col == 0) &&
      (ws.ws_row < 1 || ws.ws_row > 1000 || ws.ws_col < 1 || ws.ws_col > 1000))
    abort();
  close(sv[1]);
  close(master);
  close(slave);
  close(done);
  return 0;
}
