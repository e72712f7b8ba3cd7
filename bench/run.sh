#!/usr/bin/env bash
# make bench: private unsandboxd servers (one with a pool of sandboxes
# prepared ahead, one without), every figure next to a baseline measured
# in the same run (bench/bench.lua), issue 11's concurrency figures
# (bench/concurrency.lua), the server's memory while it moves a 64 MiB
# object (bench/objects.lua), then a session terminal's attach next to
# the same session's execute (bench/terminal.lua). Needs root, as
# unsandboxd does.
set -euo pipefail
cd "$(dirname "$0")/.."
export LUA_PATH="lua/?.lua;lua/?/init.lua;bench/?.lua;spec/?.lua;;"
export LUA_CPATH="lua/?.so;;"
lua5.4 bench/bench.lua "$@"
lua5.4 bench/concurrency.lua
lua5.4 bench/objects.lua
lua5.4 bench/terminal.lua
