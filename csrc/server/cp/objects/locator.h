/*
** Object locators of the Control Plane (spec §5.3, §5.1, §11): which
** bucket and key a request names. Pure functions and nothing else, so
** every rule has a C test and the routes only call them: a locator is a
** scope (`upload` or `agent`), its ids (trimmed, lower-cased, DNS-style),
** an object path (relative, POSIX-normalised, a fixed first segment), and
** the owner `<tenant>/<subject>` the caller's identity decided. Each
** checker returns 0, or -1 with the spec's 400 text in err.
*/
#ifndef UX_CP_OBJLOC_H
#define UX_CP_OBJLOC_H

#include <stddef.h>

#define UX_OBJ_ID_MAX 63
#define UX_OBJ_PATH_MAX 512
#define UX_OBJ_SEGMENT_MAX 128
#define UX_OBJ_OWNER_MAX (2 * UX_OBJ_SEGMENT_MAX + 1)
/* users/<owner>/agents/<id>/runs/<id>/<path> fits with room to spare */
#define UX_OBJ_KEY_MAX 1024
#define UX_OBJ_CTYPE_MAX 255

#define UX_OBJ_BUCKET_UPLOADS "user-uploads"
#define UX_OBJ_BUCKET_AGENTS "agent-data"
#define UX_OBJ_BUCKET_CHECKPOINTS "sandbox-workspaces"

typedef enum { UX_OBJ_UPLOAD = 1, UX_OBJ_AGENT = 2 } ux_obj_scope;

typedef struct ux_objloc {
  ux_obj_scope scope;
  char upload_id[UX_OBJ_ID_MAX + 1];      /* upload scope */
  char agent_id[UX_OBJ_ID_MAX + 1];       /* agent scope */
  char run_id[UX_OBJ_ID_MAX + 1];
  char path[UX_OBJ_PATH_MAX + 1];         /* normalised; "" = the whole
                                          ** prefix (list only) */
  char owner[UX_OBJ_OWNER_MAX + 1];
} ux_objloc;

/* "upload" or "agent" (exact). */
int ux_objloc_scope(const char *s, ux_obj_scope *out, char *err, size_t errlen);
const char *ux_objloc_scope_name(ux_obj_scope scope);
const char *ux_objloc_bucket(ux_obj_scope scope);

/* An upload_id / agent_id / run_id / checkpoint_id: s[0..len) trimmed of
** ASCII white space, lower-cased (ASCII, and U+212A KELVIN SIGN to `k` as
** Unicode case mapping does), then ^[a-z0-9][a-z0-9-]{0,62}$; s NULL
** (absent) fails too. Error: "<field> must be a lowercase DNS-style
** identifier". */
int ux_objloc_id(const char *field, const char *s, size_t len, char out[UX_OBJ_ID_MAX + 1],
                 char *err, size_t errlen);

/* An object path s[0..len) (s NULL: absent). Non-empty, no NUL, valid
** UTF-8, at most 512 bytes, relative, no `..` segment; normalised (empty
** and `.` segments dropped); its first segment one of the scope's (upload:
** source, derived, meta; agent: inputs, outputs, artifacts, logs, meta).
** With for_list an absent, empty or `.` path is the whole prefix (out
** ""); otherwise the path must name an object. */
int ux_objloc_path(ux_obj_scope scope, const char *s, size_t len, int for_list,
                   char out[UX_OBJ_PATH_MAX + 1], char *err, size_t errlen);

/* `<tenant>/<subject>`, each segment ^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$. */
int ux_objloc_owner(const char *s, size_t len, char *err, size_t errlen);

/* The key of a complete locator: users/<owner>/uploads/<upload_id>[/<path>]
** or users/<owner>/agents/<agent_id>/runs/<run_id>[/<path>]. 0, or -1 when
** it does not fit keylen. */
int ux_objloc_key(const ux_objloc *l, char *key, size_t keylen);

/* A workspace path of import/export, s[0..len), checked like an object
** path (without the first-segment rule) and normalised into out. exact:
** it must be `under` itself (the archive form of export); otherwise a
** file strictly below `under`. Errors name `field`. */
int ux_objloc_wspath(const char *field, const char *s, size_t len, const char *under,
                     int exact, char out[UX_OBJ_PATH_MAX + 1], char *err, size_t errlen);

/* A simple lower-case MIME type: type/subtype of RFC 6838 restricted
** names (a-z 0-9 ! # $ & - ^ _ . +, first a letter or digit), no
** parameters, at most 255 bytes. */
int ux_objloc_content_type(const char *s, size_t len, char *err, size_t errlen);

/* 64 hex digits of any case, lower-cased into out. */
int ux_objloc_sha256(const char *s, size_t len, char out[65], char *err, size_t errlen);

#endif
