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

/* Runs `keys ...` or `tenants ...` when argv[1] names one: the exit
** status; -1 when argv[1] is not a subcommand. */
int ux_cli_subcommand(int argc, char **argv);

#endif
