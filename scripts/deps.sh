#!/usr/bin/env bash
# Installs the Debian packages a make target needs, when missing:
#   scripts/deps.sh GROUP...   (build, run, test, doc, fuzz, coverage, languages)
# Each target asks for its own groups (`make doc` only LDoc), and
# dpkg-query is asked first: apt-get runs only for packages that are
# really absent, so a target whose packages are all there never waits for
# another process's dpkg lock. As root it runs apt-get; otherwise it
# prints the exact command and fails.
set -euo pipefail

# the C build of the module, the programs and the C tests; the module for
# LuaJIT, 5.1 and 5.3 too (make all-luas; lua-compat53-dev gives 5.1 and
# LuaJIT the 5.3 C API; lua-cjson has cjson for every Lua)
build=(gcc g++ make pkg-config liblua5.4-dev lua5.4 lua-cjson lua-cjson-dev libreadline-dev
       libcurl4-openssl-dev libssl-dev libmicrohttpd-dev libjansson-dev libsqlite3-dev
       libarchive-dev luajit libluajit-5.1-dev lua5.1 liblua5.1-0-dev lua5.3 liblua5.3-dev
       lua-compat53-dev)
# what unsandboxd needs to run sandboxes (make demo)
run=(bubblewrap slirp4netns util-linux procps e2fsprogs openssl)
# the specs: busted, their helpers, the peers they talk to, and the Lua lint
# (luacheck, spec/lint_unit_spec.lua); the hosts the library is proven in
# (LÖVE under xvfb-run, Neovim); tmux, the multiplexer of the sessions the
# terminal and freeze specs use
test=(lua-busted lua-socket luarocks lua-luv faketime sqlite3 nghttp2-proxy python3 perl nodejs tmux
      lua-ldoc lua-check love neovim xvfb xauth)
doc=(lua-ldoc)
# make languages (optional): the interpreters and compilers of the service's
# languages that Debian packages, so GET /languages comes as close to the
# service's list as Debian allows; make demo and make test never need them
languages=(gcc g++ nodejs default-jdk-headless ruby php-cli golang-go rustc gfortran tcl r-base-core
           ghc ocaml-interp guile-3.0 sbcl elixir rakudo gdc gnucobol)
fuzz=(clang-14 libclang-rt-14-dev)
coverage=(lcov)

packages=()
for group in "$@"; do
  case $group in
    build|run|test|doc|fuzz|coverage|languages) eval 'packages+=("${'"$group"'[@]}")' ;;
    *) echo "deps.sh: unknown group '$group'" >&2; exit 2 ;;
  esac
done
[ ${#packages[@]} -gt 0 ] || { echo "usage: scripts/deps.sh GROUP..." >&2; exit 2; }

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

line="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "missing Debian packages; run as root:" >&2
  echo "  apt-get update && $line" >&2
  exit 1
fi
echo "installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
$line -qq >&2
