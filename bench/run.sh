#!/usr/bin/env bash
# make bench: starts a private unsandboxd and prints latency and throughput
# figures of the Lua client against it, with baselines from the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
export LUA_PATH="lua/?.lua;lua/?/init.lua;bench/?.lua;spec/?.lua;;"
export LUA_CPATH="lua/?.so;;"
exec lua5.4 bench/latency.lua "$@"
