/*
** One request as the handlers see it, and the reply they fill in. The
** HTTP layer (http/) owns both; handlers never touch libmicrohttpd, so
** routes can be read without knowing the HTTP library. Everything a
** request carries (method, path, headers, peer) is copied out of
** libmicrohttpd before a handler runs, so a handler on its own thread
** never reads memory the library may free.
*/
#ifndef UX_REPLY_H
#define UX_REPLY_H

#include <stddef.h>
#include <sys/types.h>
#include <jansson.h>

#include "server/server.h"

/* One request or response header. */
typedef struct ux_kv {
  char *name, *value;
} ux_kv;

/* A body pulled from a source as the client takes it (ux_reply_source). */
typedef ssize_t (*ux_source_read)(void *ctx, unsigned long long pos, char *buf, size_t max);
typedef struct ux_source {
  ux_source_read read;
  void (*freer)(void *ctx);
  void *ctx;
  unsigned long long length;
} ux_source;

typedef struct ux_reply {
  int status;
  json_t *json;           /* the body (owned); NULL => raw or empty */
  char *raw;              /* a non-JSON body, owned */
  size_t raw_len;
  int empty;              /* no body at all (204, 304) */
  ux_source *source;      /* a body pulled from a source (owned) */
  char *content_type;     /* owned; NULL = application/json */
  ux_kv *headers;         /* extra response headers, owned */
  size_t nheaders;
  int retry_after;        /* > 0 adds Retry-After */
  char allow[64];         /* 405: the Allow header */
  int drop;               /* fault "drop": send part, then close */
  int close;              /* send Connection: close and close after the
                          ** reply (an SSE stream that ends the exchange) */
} ux_reply;

struct ux_xchg;

typedef struct ux_req {
  ux_server *srv;         /* set by the execution API's router */
  const char *method;
  const char *path;       /* raw path, no query string */
  const char *body;       /* exactly the received bytes (NUL-terminated);
                          ** "" for a streaming-body route (read it with
                          ** ux_req_read_body, stream.h) */
  size_t body_len;
  long long content_length;  /* declared Content-Length, -1 = none */
  int body_overflow;      /* the body exceeded the route's limit: it was
                          ** not read (declared) or thrown away (chunked) */
  int body_discarded;     /* the body was read and thrown away unseen (its
                          ** headers did not authenticate, http.h's
                          ** authorize): r->body is "", not what was sent */
  int stopping;           /* the server is draining for shutdown */
  const char *peer;       /* client address, "127.0.0.1" or "::1" */
  const ux_kv *req_headers;  /* as received; read with ux_req_header */
  size_t req_nheaders;
  const ux_kv *req_query;    /* query arguments, percent-decoded (a '+'
                             ** arrives as a space); ux_req_query */
  size_t req_nquery;
  int query_nul;          /* a query argument held %00: its decoded C
                          ** string is cut there, so handlers that take
                          ** paths from the query refuse the request */
  int authenticated;      /* the router found the credential good: the
                          ** connection, once idle, is among the last
                          ** the connection budget closes */
  const char *owner;      /* the authenticated public key (in owner_buf) */
  char owner_buf[128];
  const char *request_id;
  int defer;              /* fault "defer": answer /execute at once */
  const char *sudo_challenge;  /* X-Sudo-Challenge, or NULL */
  const char *sudo_otp;        /* X-Sudo-OTP, or NULL */
  ux_reply reply;
  struct ux_xchg *x;      /* the transport's state; not for handlers */
} ux_req;

/* The value of request header `name` (case-insensitive), or NULL. When a
** header was sent several times, libmicrohttpd's first one. */
const char *ux_req_header(const ux_req *r, const char *name);

/* The value of query argument `name` (exact), or NULL. When it was sent
** several times, the first one. A name without '=' has the value "". */
const char *ux_req_query(const ux_req *r, const char *name);

/* Adds a response header. Refuses (-1) a name that is not an HTTP token
** or a value with CR, LF or NUL, and the headers the transport owns
** (Content-Type, Content-Length, Transfer-Encoding, Connection,
** X-Request-Id): use the setters below for those. */
int ux_reply_header(ux_req *r, const char *name, const char *value);

/* Content type of the reply (default application/json); -1 if it holds
** CR/LF. */
int ux_reply_content_type(ux_req *r, const char *type);

/* A raw body (copied) with its content type (NULL keeps the current one). */
int ux_reply_raw(ux_req *r, int status, const char *type, const void *buf, size_t len);

/* The same with a malloc'd body the reply takes (no copy): text a
** handler wrote itself (jsonw.h), sent as it is. Freed also on failure. */
int ux_reply_take(ux_req *r, int status, const char *type, char *buf, size_t len);

/* A reply whose body is pulled from a source, piece by piece, on
** libmicrohttpd's event thread as the client takes it: no handler thread
** and no copy of the body are held while a slow client reads, only one
** buffer of UX_HTTP_SOURCE_BLOCK bytes. read(ctx, pos, buf, max) fills up
** to max bytes at pos (sequential: pos is what was returned so far) and
** returns how many (> 0), or -1 to cut the reply; it must not block (a
** regular file, not a pipe or a socket). freer(ctx) runs exactly once,
** when the reply is done or dropped, also when this fails. length is the
** whole body (Content-Length). 0, or -1. */
int ux_reply_source(ux_req *r, int status, const char *type, unsigned long long length,
                    ux_source_read read, void (*freer)(void *ctx), void *ctx);

/* A reply without a body, e.g. 204. */
int ux_reply_empty(ux_req *r, int status);

/* Frees everything the reply owns and zeroes it. */
void ux_reply_clear(ux_reply *rep);

/* Sets the reply to `json` (stolen). Returns 0 for handler tail calls. */
int ux_reply_json(ux_req *r, int status, json_t *json);

/* Sets {"error":code,"message":printf(fmt,...)}; returns -1 so validation
** helpers can `return ux_reply_error(...)`. */
int ux_reply_error(ux_req *r, int status, const char *code, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));

/* 200 {"<id_key>": id, "status": "deleted"}, the answer to every DELETE. */
int ux_reply_deleted(ux_req *r, const char *id_key, const char *id);

/* Parses the body as a JSON object. An empty body is {} when empty_ok.
** On failure sets a 400 reply and returns NULL. */
json_t *ux_body_object(ux_req *r, int empty_ok);

/* Field readers for validation: each returns 0 (value or default in *out)
** or -1 after setting a 400 bad_request reply naming the field. */
int ux_get_str(ux_req *r, json_t *obj, const char *key, int required,
               const char *dflt, const char **out);
int ux_get_int(ux_req *r, json_t *obj, const char *key, long lo, long hi,
               long dflt, long *out);
int ux_get_bool(ux_req *r, json_t *obj, const char *key, int dflt, int *out);

/* A JSON string from arbitrary bytes: invalid UTF-8 becomes U+FFFD, so
** program output never makes the reply invalid JSON. */
json_t *ux_json_bytes(const char *s, size_t len);

/* Serialises compactly (scalars were added before nested values, and
** jansson keeps insertion order). Returns malloc'd text. */
char *ux_json_dump(const json_t *j, size_t *len);

#endif
