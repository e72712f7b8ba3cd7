#!/usr/bin/env bash
# Proves the rockspec: `luarocks make` from a copy of the sources into a
# temporary tree, then stock lua5.4 requires the module from that tree.
set -euo pipefail
cd "$(dirname "$0")/.."
rockspec=$(ls unsandbox-*.rockspec | head -n 1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# a copy, so the build's object files never land in the checkout
cp -r "$rockspec" csrc lua "$work/"
rm -f "$work/lua/unsandbox/core.so"
(
  cd "$work"
  luarocks --lua-version=5.4 --tree "$work/tree" make --deps-mode=none "$rockspec" \
    CURL_INCDIR=/usr/include/x86_64-linux-gnu >"$work/build.log" 2>&1 \
    || { cat "$work/build.log" >&2; exit 1; }
)
export ROCK_TREE="$work/tree"
eval "$(luarocks --lua-version=5.4 --tree "$work/tree" path)"
cd /  # nothing from the checkout is on the default paths here
lua5.4 -e '
  local u = require "unsandbox"
  assert(package.searchpath("unsandbox.core", package.cpath):find(os.getenv("ROCK_TREE"), 1, true))
  assert(u.detect_language("x.py") == "python")
  assert(#u.sign("k", "1", "GET", "/", "") == 64)
  print("rock ok: unsandbox " .. u.VERSION)' 
