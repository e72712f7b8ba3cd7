/*
** Interrupt flag (see interrupt.h). Test-and-clear is not atomic, but the
** only thing a race can lose is a second Ctrl-C arriving in between, which
** asks for the same thing as the first.
*/
#include "core/interrupt.h"

#include <signal.h>

static volatile sig_atomic_t interrupt_flag = 0;

void unsb_interrupt_request(void) { interrupt_flag = 1; }

int unsb_interrupt_take(void) {
  if (!interrupt_flag) return 0;
  interrupt_flag = 0;
  return 1;
}

int unsb_interrupt_pending(void) { return interrupt_flag != 0; }
