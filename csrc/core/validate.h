/*
** The request rules both ends share: environment variables, relative file
** names and sets of input files. unsandboxd refuses what breaks them with
** a 400, the binding exposes them to the facade (which raises, since a bad
** name is the caller's misuse), and the runner checks again before it
** builds a sandbox; all of them call these functions, so the limits are
** written down once. Also the client's own rules of text: what counts as
** blank (for trimming and for "absent") and a service's base URL. Lua-free
** and allocation-free: each check returns NULL for "fine" or a static
** reason, so callers word their own messages.
*/
#ifndef UNSB_VALIDATE_H
#define UNSB_VALIDATE_H

#include <stddef.h>

#define UNSB_ENV_MAX_VARS   256
/* every "NAME=value" with its NUL, together: what execve will be given */
#define UNSB_ENV_MAX_BYTES  (256u * 1024u)
/* one "NAME=value" with its NUL: Linux's MAX_ARG_STRLEN, the longest
** string execve takes (a longer one makes the sandbox fail to start) */
#define UNSB_ENV_MAX_ONE    (128u * 1024u)
#define UNSB_FILES_MAX      1000
#define UNSB_RELPATH_MAX    4095   /* bytes of a whole name */
#define UNSB_COMPONENT_MAX  255    /* bytes of one component (NAME_MAX) */
#define UNSB_DEPTH_MAX      64     /* components of one name */

/* An environment variable name: [A-Za-z_][A-Za-z0-9_]*. NULL or why not. */
const char *unsb_env_name_check(const char *name, size_t len);

typedef struct {
  const char *name, *value;
  size_t name_len, value_len;
} unsb_env_var;

/* A whole environment: at most UNSB_ENV_MAX_VARS variables, each name
** valid, no NUL in a value, each at most UNSB_ENV_MAX_ONE and all at most
** UNSB_ENV_MAX_BYTES together (both counting "NAME=value" and its NUL). NULL, or
** why not with *bad the index of the offending variable (n for a limit of
** the whole set). */
const char *unsb_env_check(const unsb_env_var *vars, size_t n, size_t *bad);

/* A file name relative to a sandbox's work directory: 1..UNSB_RELPATH_MAX
** bytes, not absolute, no trailing '/', no empty, "." or ".." component,
** components of at most UNSB_COMPONENT_MAX bytes, at most UNSB_DEPTH_MAX
** of them, no control byte (< 0x20, 0x7f) and no NUL. NULL or why not. */
const char *unsb_relpath_check(const char *path, size_t len);

/* Whether a set of valid relative names can all be placed: no name twice,
** and no name that another one needs as a directory ("a" with "a/b").
** NULL, or why not with *i and *j the two names that clash. order is
** scratch space for n indexes; nothing is allocated. */
const char *unsb_paths_conflict(const char *const *names, const size_t *lens, size_t n,
                                size_t *order, size_t *i, size_t *j);

/* Blank: the ASCII white space " \t\n\v\f\r" (never the locale's). */
int unsb_blank_char(int c);
/* 1 when s[0..len) is empty or only blanks (s NULL: 1). */
int unsb_blank(const char *s, size_t len);
/* *s and *len cut to the text between leading and trailing blanks. */
void unsb_trim(const char **s, size_t *len);

/* A service's base URL, as both clients take it: http:// or https://,
** no blank or control character, no query or fragment. NULL or why not. */
const char *unsb_url_check(const char *url);

#endif
