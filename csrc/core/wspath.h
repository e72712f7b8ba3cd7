/*
** File paths of workspace calls (spec §7.5): callers may write paths as a
** program inside the runtime sees them ("/workspace/src/main.py"), and the
** file tools take them relative to /workspace. "/workspace" becomes "",
** "/workspace/<rest>" becomes "<rest>", a relative path stays as it is;
** any other absolute path, "~", "~/...", the empty path and a NUL byte are
** local errors. The server checks the rest (no "..", not .sandbox); this
** only refuses what is certainly outside the workspace before any I/O.
*/
#ifndef UNSB_WSPATH_H
#define UNSB_WSPATH_H

#include <stddef.h>

#include "core/error.h"

#define UNSB_WORKSPACE_ROOT "/workspace"

/* The normalised path is always a suffix of p: 0 with *offset (its start
** in p), or -1 with a validation err. No allocation. */
int unsb_workspace_path(const char *p, size_t len, size_t *offset, unsb_error *err);

#endif
