#!/usr/bin/env bash
# Proves the rockspec: `luarocks make` from a copy of the sources into a
# temporary tree (the system's lua-cjson satisfies its dependency, so no
# --deps-mode is needed), then stock lua5.4 requires the module from that
# tree, and the tree's unlua and un run from / with nothing of the checkout
# on their paths (un --local uses this checkout's unsandboxd via UNSANDBOXD).
# Then the same rockspec for LuaJIT (LuaRocks' 5.1 with LuaJIT's headers as
# its LUA_INCDIR): stock luajit requires the module from that tree.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
rockspec=$(ls unsandbox-*.rockspec | head -n 1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# a copy, so the build's object files never land in the checkout
mkdir -p "$work/src/bin" "$work/src/scripts"
cp -r "$rockspec" Makefile csrc lua "$work/src/"
cp scripts/embed_lua.lua "$work/src/scripts/"
cp bin/un "$work/src/bin/"
rm -f "$work/src/lua/unsandbox/core.so"
(
  cd "$work/src"
  luarocks --lua-version=5.4 --tree "$work/tree" make "$rockspec" \
    CURL_INCDIR=/usr/include/x86_64-linux-gnu CJSON_LIBDIR=/usr/lib/x86_64-linux-gnu \
    >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
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
unset LUA_PATH LUA_CPATH LUA_PATH_5_4 LUA_CPATH_5_4
"$work/tree/bin/unlua" -e 'assert(package.searchpath("unsandbox", package.path):find(os.getenv("ROCK_TREE"), 1, true)) print("rock unlua ok")'
"$work/tree/bin/un" --version
out=$(env -u UNSANDBOX_URL -u UNSANDBOX_PUBLIC_KEY -u UNSANDBOX_SECRET_KEY HOME="$work" \
  UNSANDBOXD="$root/bin/unsandboxd" "$work/tree/bin/un" --local -s bash 'echo rock un ok')
[ "$out" = "rock un ok" ] || { echo "rock un --local printed: $out" >&2; exit 1; }
echo "$out"

# LuaJIT: the rockspec builds for whichever Lua LuaRocks targets
(
  cd "$work/src"
  make -s clean >/dev/null 2>&1 || true
  luarocks --lua-version=5.1 --tree "$work/jit" make "$rockspec" \
    LUA_INCDIR=/usr/include/luajit-2.1 CURL_INCDIR=/usr/include/x86_64-linux-gnu \
    CJSON_LIBDIR=/usr/lib/x86_64-linux-gnu >"$work/jit.log" 2>&1 || { cat "$work/jit.log" >&2; exit 1; }
)
[ ! -e "$work/jit/bin/unlua" ] || { echo "a LuaJIT rock installed unlua (a 5.4 host)" >&2; exit 1; }
export ROCK_TREE="$work/jit"
eval "$(luarocks --lua-version=5.1 --tree "$work/jit" path)"
luajit -e '
  local u = require "unsandbox"
  assert(package.searchpath("unsandbox.core", package.cpath):find(os.getenv("ROCK_TREE"), 1, true))
  assert(u.detect_language("x.py") == "python")
  print("rock luajit ok: unsandbox " .. u.VERSION .. " under " .. jit.version)'
