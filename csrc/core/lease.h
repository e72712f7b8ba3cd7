/*
** Lease rules of the Control Plane client (spec §7.6-§7.8) as pure
** functions over one small struct per session key: what the client holds
** about that session's workspace and runtime, and whether a call may reuse
** it, must refresh the runtime token, must create, or must refuse.
**
** Time is a parameter (seconds on any clock that does not jump; the
** Manager passes the monotonic clock), so every branch is testable with a
** fake clock, and nothing here does I/O. The decision and the update are
** separate calls: the caller decides, makes its request with copies of
** what it needs, and applies the reply afterwards, so no lease is held
** across a network call.
**
** Values from replies are checked before they are kept (ids have their
** spec shapes, tokens are printable ASCII): a lease's ids go into request
** paths and its tokens into headers.
*/
#ifndef UNSB_LEASE_H
#define UNSB_LEASE_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

#define UNSB_LEASE_MARGIN_S 60           /* a token must outlive now by this */
#define UNSB_LEASE_DEFAULT_TTL_S 600     /* access_token_expires_in missing */
#define UNSB_LEASE_MAX_TTL_S (366LL * 86400)
#define UNSB_REFRESH_DEFAULT_S 60        /* SANDBOX_LIFECYCLE_REFRESH_SECONDS */
#define UNSB_REFRESH_MIN_S 5
#define UNSB_REFRESH_MAX_S 86400
#define UNSB_LEASE_TOKEN_MAX 8192
#define UNSB_LEASE_OWNER_MAX 257         /* <tenant>/<subject>, 128 each */
#define UNSB_DEFAULT_TEMPLATE "default"

typedef struct {
  char workspace_id[16];       /* "ws-" + 12 hex; "" = no workspace lease */
  char *ws_owner;              /* NULL = none */
  char *ws_token;              /* secret; wiped when dropped */
  int64_t ws_expires_at, ws_checked_at;
  int ws_created;
  char sandbox_id[16];         /* "sb-" + 12 hex; "" = no runtime lease */
  char *sb_token;              /* secret */
  int64_t sb_expires_at, sb_checked_at;
  char template_id[33];        /* "" = not reported */
} unsb_lease;

/* POST /v1/workspaces (WorkspaceLease) as the binding decoded it. */
typedef struct {
  const char *workspace_id, *access_token;
  const char *owner;           /* NULL = null or absent */
  long long expires_in;        /* < 0 = absent: UNSB_LEASE_DEFAULT_TTL_S */
  int created;                 /* 0 = false, 1 = true, -1 = absent (true) */
} unsb_workspace_reply;

/* POST /v1/sandboxes (SandboxLease) or POST .../token (ScopedToken). */
typedef struct {
  const char *sandbox_id, *access_token;
  const char *template_id;     /* NULL = absent (a token refresh keeps it) */
  long long expires_in;        /* < 0 = absent */
} unsb_runtime_reply;

typedef enum {
  UNSB_LEASE_REUSE,      /* use the lease as it is */
  UNSB_LEASE_CREATE,     /* POST /v1/workspaces, or POST /v1/sandboxes */
  UNSB_LEASE_REFRESH,    /* POST /v1/sandboxes/{sb}/token {} (404: forget, create) */
  UNSB_LEASE_CONFLICT    /* another template runs: a local 409, nothing sent */
} unsb_lease_action;

void unsb_lease_init(unsb_lease *l);
/* Wipes the tokens, frees everything, leaves an empty lease. */
void unsb_lease_clear(unsb_lease *l);
void unsb_lease_forget_runtime(unsb_lease *l);

/* §7.7: REUSE iff not refresh, an id and a token, the token expires more
** than 60 s after now, checked less than `period` seconds ago, and owner
** NULL or equal to the cached owner; else CREATE. */
unsb_lease_action unsb_lease_workspace_action(const unsb_lease *l, const char *owner, int refresh,
                                              int64_t now, int64_t period);

/* §7.8: CREATE without a runtime; CONFLICT (err says which templates) when
** template_id is given and differs from the runtime's (not reported counts
** as "default"); REFRESH when its token expires within 60 s or it was
** checked `period` or more seconds ago; else REUSE. */
unsb_lease_action unsb_lease_runtime_action(const unsb_lease *l, const char *template_id,
                                            int64_t now, int64_t period, unsb_error *err);

/* Apply a reply at time now. A malformed reply (protocol error) leaves the
** lease unchanged. A different workspace id drops the runtime lease. */
int unsb_lease_set_workspace(unsb_lease *l, const unsb_workspace_reply *r, int64_t now,
                             unsb_error *err);
int unsb_lease_set_runtime(unsb_lease *l, const unsb_runtime_reply *r, int64_t now,
                           unsb_error *err);

/* manager:status(): ready = an id and a token that has not expired. */
typedef struct {
  const char *workspace_id, *sandbox_id, *template_id;   /* NULL when none */
  int workspace_ready, runtime_ready;
} unsb_lease_status;
void unsb_lease_get_status(const unsb_lease *l, int64_t now, unsb_lease_status *st);

/* SANDBOX_LIFECYCLE_REFRESH_SECONDS: NULL or blank = 60; otherwise an
** integer (ASCII blanks around it, an optional sign), raised to the
** minimum 5; not an integer or above a day is a validation error (err->arg
** UNSB_ARG_ENV, the message naming the variable). */
int unsb_lease_refresh_period(const char *value, int64_t *out, unsb_error *err);
/* The same rule for a value that came from elsewhere: the message names
** name, err->arg is arg. */
int unsb_refresh_period_of(const char *value, const char *name, int arg, int64_t *out,
                           unsb_error *err);

#endif
