/*
** The interrupt flag: the one process-global of the core. A host's SIGINT
** handler calls unsb_interrupt_request(); blocking core calls (sleep, HTTP)
** poll the flag between slices of at most 100 ms and give up with kind
** "interrupted". A signal is process-wide, so the flag is too.
*/
#ifndef UNSB_INTERRUPT_H
#define UNSB_INTERRUPT_H

/* Async-signal-safe: only stores to a volatile sig_atomic_t. */
void unsb_interrupt_request(void);

/* Test-and-clear: 1 if an interrupt was pending (it is consumed), else 0. */
int unsb_interrupt_take(void);

/* Test without clearing. */
int unsb_interrupt_pending(void);

#endif
