/*
** unsandboxd's command line helpers and its subcommands, which print
** lasting credentials (keys add, tenants add) without a running server:
** they open the data directory's store, write, and exit.
*/
#ifndef UX_CLI_H
#define UX_CLI_H

#include "server/server.h"

/* Message, "Try 'unsandboxd --help'." and exit 2. fmt has one %s. */
void ux_die_usage(const char *fmt, const char *arg) __attribute__((noreturn));
/* An integer option in [lo, hi], or ux_die_usage. */
long ux_parse_num(const char *opt, const char *s, long lo, long hi);
/* Creates dir (0700) and stores its absolute path in cfg->data; exits 1
** when it cannot. */
void ux_set_data_dir(ux_config *cfg, const char *dir);

/* --env-file FILE: the start-up announcement (the NAME=value lines printed
** on stdout, and UNSANDBOXD_PID) written to FILE as well, so that a server
** started in the background can be read with `set -a; . FILE; set +a`
** (or `un local`). ux_env_file_path makes arg absolute (the server later
** runs in "/"); ux_env_file_write writes a fresh 0600 file next to it and
** renames it over FILE, so a reader never sees half of it; it holds keys.
** ux_env_file_remove removes FILE at shutdown if it still holds what this
** server wrote (another server may have written it since). */
int ux_env_file_path(const char *arg, char *out, size_t outlen);
int ux_env_file_write(const char *path, const char *text, char *err, size_t errlen);
void ux_env_file_remove(const char *path, const char *text);

/* Runs `keys ...` or `tenants ...` when argv[1] names one: the exit
** status; -1 when argv[1] is not a subcommand. */
int ux_cli_subcommand(int argc, char **argv);

#endif
