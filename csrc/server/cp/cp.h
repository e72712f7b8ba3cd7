/*
** The sandbox platform Control Plane inside unsandboxd: a second listener
** with its own router (cp/router.c), credentials and the spec's auth
** order (cp/auth/auth.c), its tables in the server's SQLite store
** (cp/store.c), and handlers grouped by resource. Everything the handlers
** share is here: the Control Plane's state, the identity a request acts
** as, the call a handler receives, and the reply helpers with the spec's
** error shape {"error": text}.
**
** Adding a route: one line in the table of cp/router.c (method, pattern
** with {params}, credential kind, body kind, handler). The handler gets a
** ux_cp_call with the identity already established, ownership already
** checked (for +ownership routes) and the JSON body already parsed (for
** JSON routes); it fills c->r->reply with ux_cp_ok / ux_cp_fail, or opens
** a stream (http/stream.h).
*/
#ifndef UX_CP_H
#define UX_CP_H

#include <stdatomic.h>
#include <stddef.h>
#include <jansson.h>

#include "server/http/reply.h"
#include "server/server.h"

typedef struct ux_runtimes ux_runtimes;
typedef struct ux_counters ux_counters;
typedef struct ux_objstore ux_objstore;

#define UX_CP_KEY_LEN 32
#define UX_CP_JSON "application/json; charset=utf-8"
#define UX_CP_TOKEN_TTL 900         /* scoped tokens, seconds */
#define UX_CP_MAX_BODY (6u << 20)   /* buffered JSON bodies */
#define UX_CP_MAX_STREAM (64ull << 20)  /* streamed bodies (objects) */

typedef struct ux_cp {
  ux_server *srv;                   /* store, data directory, flags */
  unsigned char signing_key[UX_CP_KEY_LEN];   /* tokens and tickets */
  unsigned char ws_key[UX_CP_KEY_LEN];        /* workspace ids */
  char break_glass[80];             /* this start's break-glass token: bg_ + 64 hex */
  ux_runtimes *rts;
  ux_counters *metrics;
  ux_objstore *objects;             /* object storage (cp/objects/store.h) */
  struct ux_shares *agent_calls;    /* requests at runtimes' agents, per tenant
                                       (share.h): a stopped agent holds
                                       handler threads of its tenant only */
  atomic_int shutting_down;         /* readyz/healthz 503, creates 503 */
  const char *registries;           /* --image-registries (NULL: none) */
  int token_ttl_s;                  /* scoped tokens (900) */
  int idle_ttl_s, hard_ttl_s;       /* runtimes (1800, 43200) */
} ux_cp;

/* The Control Plane of srv: its tables, keys, runtimes registry and a
** fresh break-glass token. NULL with err. */
ux_cp *ux_cp_new(ux_server *srv, char *err, size_t errlen);
/* Its listener (cfg.cp_listen): url gets the address. NULL with err. */
struct ux_http *ux_cp_listen(ux_cp *cp, unsigned long long nofile, char *url, size_t urllen,
                             char *err, size_t errlen);
/* Shutdown mode: readyz/healthz 503, creates refused (sticky). */
void ux_cp_shutting_down(ux_cp *cp);
/* Kills every runtime and frees cp (after its listener stopped). */
void ux_cp_free(ux_cp *cp);
/* This start's break-glass token (printed with --dev-keys). */
const char *ux_cp_break_glass(const ux_cp *cp);

/* ------------------------------------------------------------------
** Who a request acts as (spec §3)
** ---------------------------------------------------------------- */

typedef enum {
  UX_ID_BREAK_GLASS = 1,            /* the server's token: admin, no tenant */
  UX_ID_ADMIN,                      /* an admin API key */
  UX_ID_TENANT,                     /* a tenant API key */
  UX_ID_SCOPED                      /* a workspace or sandbox token */
} ux_id_kind;

typedef struct ux_identity {
  ux_id_kind kind;
  char tenant[64];      /* the tenant acted for: a tenant key's own, an admin's
                        ** X-Sandbox-Tenant, a token's owner tenant; "" = none */
  char key_id[20];      /* API keys: their id */
  char subject[40];     /* X-Acting-Subject (32 hex) or "" */
  int act_as_subjects;  /* the key's permission */
  char scope[16];       /* scoped: "workspace" or "sandbox" */
  char sub[32];         /* scoped: the ws-/sb- id */
  char owner[300];      /* scoped: the token's owner claim, "" none */
} ux_identity;

/* An admin identity (break-glass or admin key) acting for no tenant: the
** global view, exempt from ownership. */
int ux_id_global(const ux_identity *id);
/* Break-glass or an admin key, whatever tenant it acts for. */
int ux_id_admin(const ux_identity *id);
/* "break-glass", "admin", "tenant", "scoped" (Identity.kind, audit). */
const char *ux_id_kind_name(const ux_identity *id);

/* ------------------------------------------------------------------
** The call a handler receives
** ---------------------------------------------------------------- */

typedef struct ux_cp_call {
  ux_cp *cp;
  ux_req *r;
  ux_identity id;
  const char *param[3];   /* the {params} of the route's pattern, in order */
  json_t *body;           /* JSON routes: the parsed object (borrowed) */
  const char *route;      /* the pattern, for metrics and audit */
} ux_cp_call;

typedef int (*ux_cp_handler)(ux_cp_call *c);

/* ------------------------------------------------------------------
** Replies
** ---------------------------------------------------------------- */

/* status + json (stolen); returns 0. */
int ux_cp_ok(ux_cp_call *c, int status, json_t *json);
/* The same with the text of a writer (jsonw.h) the reply takes as it is:
** a list written row by row as the store reads it. */
struct ux_jw;
int ux_cp_ok_text(ux_cp_call *c, int status, struct ux_jw *w);
/* ux_cp_time as a value of a writer. */
void ux_cp_jw_time(struct ux_jw *w, long long t);
/* status + {"error": printf(fmt, ...)}; returns -1. */
int ux_cp_fail(ux_cp_call *c, int status, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* The same on a bare request (router, before a call exists). */
int ux_cp_fail_req(ux_req *r, int status, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* 503 "control plane store unavailable: <what>" when the store broke. */
int ux_cp_store_failed(ux_cp_call *c, const char *what);
/* The platform's 429 for a write the ledger refused (store/ledger.h):
** UX_LEDGER_QUOTA "storage limit reached for tenant <t>", UX_LEDGER_BUDGET
** "storage capacity is exhausted; this is transient, retry later" (as its
** runtime capacity says); anything else the store's 503. */
int ux_cp_storage_refused(ux_cp_call *c, int refusal, const char *tenant);
/* The text of that 429 (QUOTA or BUDGET). */
void ux_cp_storage_text(int refusal, const char *tenant, char *out, size_t len);

/* Query flags of the spec: true for "1", "true", "yes". */
int ux_cp_flag(const ux_req *r, const char *name);

/* Body field readers for handlers: 0 with the value (or the default when
** absent), or -1 after a 400 naming the field. */
int ux_cp_str(ux_cp_call *c, const char *key, int required, const char *dflt,
              size_t maxlen, const char **out);
int ux_cp_int(ux_cp_call *c, const char *key, long long lo, long long hi,
              long long dflt, long long *out);
int ux_cp_bool(ux_cp_call *c, const char *key, int dflt, int *out);

/* Epoch seconds as the spec's view timestamps: a decimal string, or null
** for 0. */
json_t *ux_cp_time(long long t);

#endif
