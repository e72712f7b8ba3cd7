/*
** Workspace path normalisation (see wspath.h).
*/
#include "core/wspath.h"

#include <string.h>

int unsb_workspace_path(const char *p, size_t len, size_t *offset, unsb_error *err) {
  const size_t root = sizeof UNSB_WORKSPACE_ROOT - 1;
  int shown;
  *offset = 0;
  if (!p || len == 0) return unsb_fail(err, UNSB_EVALIDATION, "path must not be empty");
  if (memchr(p, '\0', len)) return unsb_fail(err, UNSB_EVALIDATION, "path contains a NUL byte");
  shown = len > 200 ? 200 : (int)len;   /* p need not be NUL-terminated */
  if (p[0] == '~' && (len == 1 || p[1] == '/'))
    return unsb_fail(err, UNSB_EVALIDATION,
                     "path '%.*s': '~' is not the workspace; use a path relative to /workspace",
                     shown, p);
  if (p[0] != '/') return 0;
  if (len >= root && memcmp(p, UNSB_WORKSPACE_ROOT, root) == 0) {
    if (len == root) { *offset = root; return 0; }
    if (p[root] == '/') { *offset = root + 1; return 0; }
  }
  return unsb_fail(err, UNSB_EVALIDATION, "path '%.*s' is outside /workspace", shown, p);
}
