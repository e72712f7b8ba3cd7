/*
** Language detection from a file name and from a shebang line: any bytes,
** any length; an answer is always a known language name.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/langmap.h"

static int known(const char *lang) {
  size_t n;
  const unsb_langmap_entry *e = unsb_langmap_entries(&n);
  for (size_t i = 0; i < n; i++)
    if (!strcmp(e[i].language, lang)) return 1;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  const char *a = unsb_detect_language(s, size);
  if (a && !known(a)) abort();
  const char *b = unsb_detect_shebang(s, size);
  if (b && !*b) abort();
  return 0;
}
