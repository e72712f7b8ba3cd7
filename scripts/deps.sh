#!/usr/bin/env bash
# Installs the Debian packages the build and the tests need, when missing.
# As root it runs apt-get; otherwise it prints the exact command and fails.
set -euo pipefail

packages=(
  gcc g++ make pkg-config util-linux procps openssl
  liblua5.4-dev lua5.4 lua-cjson lua-cjson-dev lua-busted lua-socket luarocks lua-luv libreadline-dev
  libcurl4-openssl-dev libssl-dev
  libmicrohttpd-dev libjansson-dev libsqlite3-dev libarchive-dev
  bubblewrap slirp4netns faketime sqlite3
  nghttp2-proxy
  python3 perl nodejs
  clang-14 libclang-rt-14-dev lcov
  lua-ldoc
)

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
