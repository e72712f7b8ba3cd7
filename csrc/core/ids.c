/*
** Id validation (see ids.h). Explicit ASCII ranges, not isalnum(), so the
** answer never depends on the locale.
*/
#include "core/ids.h"

int unsb_valid_id(const char *s, size_t len) {
  if (!s || len == 0 || len > UNSB_ID_MAX) return 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
             (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return 0;
  }
  /* "." and ".." match the character class but would walk the URL path */
  if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.')) return 0;
  return 1;
}
