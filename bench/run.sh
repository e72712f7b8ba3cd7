#!/usr/bin/env bash
# make bench: starts private unsandboxd servers and prints latency and
# throughput figures of the Lua client against it, with baselines from the
# same run, then the server's memory while it moves a 64 MiB object.
set -euo pipefail
cd "$(dirname "$0")/.."
export LUA_PATH="lua/?.lua;lua/?/init.lua;bench/?.lua;spec/?.lua;;"
export LUA_CPATH="lua/?.so;;"
lua5.4 bench/latency.lua "$@"
lua5.4 bench/objects.lua
