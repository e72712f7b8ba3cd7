/*
** Streaming both ways, for handlers: reading a request body piece by
** piece (routes the router's admit hook marked as streaming-body), and
** answering with a stream written from the handler's thread (Server-Sent
** Events, large downloads). Both block with a bounded buffer
** (UX_HTTP_RING) for backpressure and never hold a body whole.
*/
#ifndef UX_HTTP_STREAM_H
#define UX_HTTP_STREAM_H

#include <stddef.h>
#include <sys/types.h>

#include "server/http/reply.h"

typedef struct ux_xchg ux_stream;

/* Reads up to len bytes of r's body: > 0 bytes read, 0 at its end, -1
** when the client went away, sent less than its Content-Length, the body
** exceeded the route's limit (r->body_overflow) or the server is
** stopping. On a buffered route it reads r->body. The first call lets the
** body flow: until then a streaming-body route has read nothing, so a
** handler may reply early (401, 404) and the body is never received. */
ssize_t ux_req_read_body(ux_req *r, void *buf, size_t len);

/* Answers r with a stream: status, content type and the headers set so far
** (ux_reply_header) go out once the request body is fully received; the
** reply must not be changed afterwards. length is the total byte count
** (Content-Length) or -1 (chunked). NULL if a reply is already out or on
** misuse. The stream is closed by ux_stream_close, or when the handler
** returns. */
ux_stream *ux_reply_stream(ux_req *r, int status, const char *content_type, long long length);

/* Appends len bytes, blocking while the buffer is full. 0, or -1 once the
** client has gone (noticed within UX_HTTP_SWEEP_MS also while idle),
** the server is stopping, the stream is closed, or the write would pass
** the declared length. */
int ux_stream_write(ux_stream *s, const void *buf, size_t len);

/* Waits up to ms for the client to go; 1 if it has gone (or the server is
** stopping), 0 after ms. For writers that are idle, e.g. waiting on a
** long command whose output stream nobody reads any more. */
int ux_stream_wait(ux_stream *s, long ms);

/* Ends the stream: what was written is sent, then the end. A sized stream
** closed short is cut (the client sees a truncated body). Idempotent. */
void ux_stream_close(ux_stream *s);

/* Ends the stream with an error: the connection is closed without a
** proper end, so the client knows the body is incomplete. */
void ux_stream_abort(ux_stream *s);

#endif
