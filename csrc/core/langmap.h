/*
** File name and shebang -> language, per spec §5.6. The table is the C/Py
** column (48 extensions, 39 languages) plus the Lua SDK's `scala`;
** extensions compare case-insensitively (so `R` is `r`).
*/
#ifndef UNSB_LANGMAP_H
#define UNSB_LANGMAP_H

#include <stddef.h>

typedef struct {
  const char *ext;       /* lower case, no dot */
  const char *language;
} unsb_langmap_entry;

/* The whole map, for core.extensions(); *count receives its length. */
const unsb_langmap_entry *unsb_langmap_entries(size_t *count);

/* Language for an extension (no dot, any case), or NULL. */
const char *unsb_language_for_ext(const char *ext, size_t len);

/* Language of a file name: the text after the last '.' of the base name.
** NULL for no extension, an empty one, a dot-file such as ".bashrc", or an
** unknown extension. */
const char *unsb_detect_language(const char *filename, size_t len);

/* Language of a first line such as "#!/usr/bin/env python3" or
** "#!/bin/sh -e"; NULL when it is not a shebang or names no known
** interpreter. Only the text before the first newline is looked at. */
const char *unsb_detect_shebang(const char *line, size_t len);

#endif
