#!/usr/bin/env bash
# A copy of this checkout's sources in build/<name>/src, built there with
# extra compiler flags: `make sanitize` and `make coverage` build every C
# component differently from `make`, and a separate tree keeps their
# objects and binaries away from the ordinary ones (the Makefile's paths
# stay fixed, and nothing needs cleaning afterwards). Tracked and new
# (not ignored) files are copied; the copy is refreshed on every call and
# make rebuilds only what changed.
#   scripts/variant.sh NAME CFLAGS LDFLAGS
set -euo pipefail
cd "$(dirname "$0")/.."
name=$1 cflags=$2 ldflags=$3
dst=build/$name/src
mkdir -p "$dst"
# rsync-like refresh without rsync: copy files whose content differs
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  if ! cmp -s "$f" "$dst/$f" 2>/dev/null; then
    mkdir -p "$dst/$(dirname "$f")"
    cp -p "$f" "$dst/$f"
  fi
done
# the agent runs inside sandboxes as an unprivileged user with a cleared
# environment: it is built plain first (make then keeps those objects),
# and only the components the issue names get the extra flags
make -s --no-print-directory -C "$dst" bin/unsandboxd-agent >/dev/null
make -s --no-print-directory -C "$dst" -j"$(nproc)" all CFLAGS="$cflags" LDFLAGS="$ldflags"
# and the module of every other Lua, with the same flags (dialects_spec
# loads each in its own interpreter)
make -s --no-print-directory -C "$dst" all-luas CFLAGS="$cflags" LDFLAGS="$ldflags"
