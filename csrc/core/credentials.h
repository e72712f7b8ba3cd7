/*
** Credential resolution for the execution API (spec §3.3 with the
** project's decisions in docs/internals.md): the one place that decides
** which key pair a client uses.
**
** Order: explicit public+secret key; else, when an account index is given
** explicitly, that row of <home>/.unsandbox/accounts.csv, then of
** <cwd>/accounts.csv; else UNSANDBOX_PUBLIC_KEY+UNSANDBOX_SECRET_KEY (both
** non-empty); else row UNSANDBOX_ACCOUNT (default 0) of the same two files.
**
** accounts.csv: each line is trimmed of blanks and CR; blank lines and
** lines starting with '#' are skipped; fields are split on ',' and trimmed;
** a third column (a comment) is dropped; a line without a non-empty public
** and secret key is skipped and not counted. Rows are numbered from 0.
**
** Nothing here creates a file or directory; a missing HOME or an
** unreadable file just means "not found there".
*/
#ifndef UNSB_CREDENTIALS_H
#define UNSB_CREDENTIALS_H

#include <stddef.h>

#include "core/error.h"

/* Inputs. Every string may be NULL. The env_* fields stand for the
** environment so that tests (and the Lua binding's env= option) can supply
** their own; unsb_cred_opts_from_environ() fills them from getenv(). */
typedef struct {
  const char *public_key, *secret_key;   /* explicit, tier 1 */
  size_t secret_len;                     /* bytes of secret_key */
  long long account;                     /* explicit index; < 0 = not given */
  const char *home;                      /* NULL = no home directory */
  const char *cwd;                       /* NULL = "." */
  const char *env_public_key, *env_secret_key, *env_account;
} unsb_cred_opts;

/* The resolved pair. The secret lives only here (heap, wiped on free). */
typedef struct {
  char *public_key;
  char *secret;
  size_t secret_len;
  char *source;        /* "arguments", "environment" or "<path>:<row>" */
} unsb_credentials;

/* Zeroes opts with account = -1. */
void unsb_cred_opts_init(unsb_cred_opts *o);

/* Fills home and the env_* fields from the process environment. */
void unsb_cred_opts_from_environ(unsb_cred_opts *o);

/* Returns 0 and fills out (free with unsb_credentials_free), or -1 with
** err kind credentials and a message naming every place looked at. */
int unsb_credentials_resolve(const unsb_cred_opts *o, unsb_credentials *out,
                             unsb_error *err);

/* Wipes the secret (OPENSSL_cleanse) and frees everything; idempotent. */
void unsb_credentials_free(unsb_credentials *c);

#endif
