/*
** The request rules both ends share (core/validate.h) and the id rule:
** the input is read as NUL-separated names. Every name is checked as an
** id, an env name and a relative path; pairs as env variables; the set
** as input files. Answers are cross-checked: a valid relative path holds
** no control byte, a valid id is a valid one-component path unless it
** is too long.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/ids.h"
#include "core/validate.h"

#define MAXN 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *names[MAXN];
  size_t lens[MAXN], order[MAXN], n = 0, i, j;
  const char *s = (const char *)data, *end = s + size;
  while (s <= end && n < MAXN) {
    const char *z = memchr(s, '\0', (size_t)(end - s));
    size_t len = z ? (size_t)(z - s) : (size_t)(end - s);
    names[n] = s;
    lens[n++] = len;
    if (!z) break;
    s = z + 1;
  }
  for (size_t k = 0; k < n; k++) {
    int id = unsb_valid_id(names[k], lens[k]);
    const char *rel = unsb_relpath_check(names[k], lens[k]);
    (void)unsb_env_name_check(names[k], lens[k]);
    if (!rel)
      for (size_t c = 0; c < lens[k]; c++)
        if ((unsigned char)names[k][c] < 0x20 || names[k][c] == 0x7f) abort();
    if (id && rel && lens[k] <= UNSB_COMPONENT_MAX) abort();
  }
  unsb_env_var vars[MAXN / 2];
  size_t nv = 0, bad;
  for (size_t k = 0; k + 1 < n; k += 2)
    vars[nv++] = (unsb_env_var){ names[k], names[k + 1], lens[k], lens[k + 1] };
  const char *why = unsb_env_check(vars, nv, &bad);
  if (why && bad > nv) abort();
  /* the set check needs valid names */
  size_t m = 0;
  for (size_t k = 0; k < n; k++)
    if (!unsb_relpath_check(names[k], lens[k])) { names[m] = names[k]; lens[m++] = lens[k]; }
  why = unsb_paths_conflict(names, lens, m, order, &i, &j);
  if (why && (i >= m || j >= m || i == j)) abort();
  return 0;
}
