/*
** Whole-tree operations of the runtime: checkpoint (archive the root to a
** data fd) and restore (extract a data fd into a fresh directory, then
** swap it in), and the fd-based remover they need.
*/
#ifndef AG_TREE_H
#define AG_TREE_H

#include <jansson.h>

#include "agent/err.h"
#include "agent/paths.h"

/* Removes name (below dirfd) and everything under it, by fd, never
** following a symlink. 0 or -1. */
int ag_rm_tree_at(int dirfd, const char *name, ag_err *e);

int ag_op_checkpoint(const ag_fs *fs, json_t *req, int datafd, json_t **result, ag_err *e);
int ag_op_restore(const ag_fs *fs, json_t *req, int datafd, json_t **result, ag_err *e);

#endif
