/*
** Header values (see headers.h). The date forms are libcurl's parser
** (curl_getdate: IMF-fixdate, RFC 850 and asctime), not a hand-written
** one; everything else is plain byte checks.
*/
#include "core/headers.h"

#include <string.h>
#include <strings.h>
#include <curl/curl.h>

#define VALUE_MAX 256    /* longer than any date or delay */

const char *unsb_header_value(const char *line, size_t len, const char *name, size_t *vlen) {
  size_t nl = strlen(name);
  if (len <= nl || line[nl] != ':' || strncasecmp(line, name, nl) != 0) return NULL;
  const char *v = line + nl + 1, *e = line + len;
  while (v < e && (*v == ' ' || *v == '\t')) v++;
  while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t')) e--;
  *vlen = (size_t)(e - v);
  return v;
}

static long long clamp(long long s) {
  return s < 0 ? 0 : s > UNSB_RETRY_AFTER_MAX ? UNSB_RETRY_AFTER_MAX : s;
}

long long unsb_retry_after(const char *value, size_t len, int64_t now) {
  char buf[VALUE_MAX];
  if (!value || len == 0) return -1;
  size_t digits = 0;
  while (digits < len && value[digits] >= '0' && value[digits] <= '9') digits++;
  if (digits == len) {
    /* any run of digits is a delay; past the cap (even past 2^63) it is the cap */
    long long s = 0;
    for (size_t i = 0; i < len && s <= UNSB_RETRY_AFTER_MAX; i++) s = s * 10 + (value[i] - '0');
    return clamp(s);
  }
  if (len >= sizeof buf || memchr(value, '\0', len)) return -1;
  memcpy(buf, value, len);
  buf[len] = '\0';
  time_t when = curl_getdate(buf, NULL);
  if (when == (time_t)-1) return -1;
  /* both sides are at most 2^63-1 in magnitude here; compare before subtracting */
  if ((int64_t)when <= now) return 0;
  if ((int64_t)when - now > UNSB_RETRY_AFTER_MAX) return UNSB_RETRY_AFTER_MAX;
  return (long long)((int64_t)when - now);
}
