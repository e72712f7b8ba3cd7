/*
** One request as the handlers see it, and the reply they fill in. The
** HTTP layer (http.c) owns both; handlers never touch libmicrohttpd, so
** routes can be read without knowing the HTTP library.
*/
#ifndef UX_REPLY_H
#define UX_REPLY_H

#include <stddef.h>
#include <jansson.h>

#include "server/server.h"

typedef struct ux_reply {
  int status;
  json_t *json;           /* the body (owned); NULL => raw */
  char *raw;              /* a non-JSON body (malformed fault), owned */
  size_t raw_len;
  int retry_after;        /* > 0 adds Retry-After */
  char allow[64];         /* 405: the Allow header */
  int drop;               /* fault "drop": send part, then close */
} ux_reply;

typedef struct ux_req {
  ux_server *srv;
  const char *method;
  const char *path;       /* raw path, no query string */
  const char *body;       /* exactly the received bytes (NUL-terminated) */
  size_t body_len;
  const char *owner;      /* the authenticated public key (in owner_buf) */
  char owner_buf[128];
  const char *request_id;
  int defer;              /* fault "defer": answer /execute at once */
  const char *sudo_challenge;  /* X-Sudo-Challenge, or NULL */
  const char *sudo_otp;        /* X-Sudo-OTP, or NULL */
  ux_reply reply;
} ux_req;

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
