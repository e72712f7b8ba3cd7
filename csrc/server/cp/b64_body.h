/*
** A reply body made of a head, the base64 of a file's first n bytes and
** a tail, pulled piece by piece by the transport (ux_reply_source): the
** file is read and encoded as the client takes the body, so no buffer of
** the whole body is ever made (read-binary's reply and an object's inline
** content: megabytes whose fresh pages would cost more than their
** encoding). The file is read with pread
** and never mapped: its other holder (a sandbox's agent) may resize it at
** any time, and then the body is cut (the read fails), never longer.
*/
#ifndef UX_CP_B64_BODY_H
#define UX_CP_B64_BODY_H

#include <stddef.h>
#include <sys/types.h>

typedef struct ux_b64_body ux_b64_body;

/* Takes fd, head and tail (malloc'd); never NULL (out of memory aborts). */
ux_b64_body *ux_b64_body_new(int fd, unsigned long long n, char *head, size_t head_len,
                             char *tail, size_t tail_len);
/* The body's whole length: head + base64 of n bytes + tail. */
unsigned long long ux_b64_body_length(const ux_b64_body *b);
/* ux_source_read: up to max bytes of the body at pos into buf: > 0, or -1
** at the end or when the file no longer holds its n bytes. */
ssize_t ux_b64_body_read(void *b, unsigned long long pos, char *buf, size_t max);
/* Closes the fd and frees everything. */
void ux_b64_body_free(void *b);

#endif
