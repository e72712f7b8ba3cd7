#!/usr/bin/env bash
# make bench: private unsandboxd servers (one with a pool of sandboxes
# prepared ahead, one without), every figure next to a baseline measured
# in the same run (bench/bench.lua), the concurrency figures
# (bench/concurrency.lua), the server's memory while it moves a 64 MiB
# object (bench/objects.lua) and under slow clients (bench/memory.lua:
# unauthenticated bodies, slow readers), a session terminal's attach next
# to the same session's execute (bench/terminal.lua), then the probes'
# latency while one party saturates its fair shares, next to idle
# (bench/fairness.lua), and living sessions: a command, a creation, the
# memory of an idle one (bench/living.lua), and the Control Plane's long
# lists next to their encoding and the server before (bench/lists.lua),
# a run's 1 MiB of output: its latency next to a local spawn and the
# server's own CPU for it (bench/output.lua), and the throughput curve from 1 to 16 clients with CPU per job, the run
# queue next to none (bench/throughput.lua).
# Needs root, as unsandboxd does.
set -euo pipefail
cd "$(dirname "$0")/.."
export LUA_PATH="lua/?.lua;lua/?/init.lua;bench/?.lua;spec/?.lua;;"
export LUA_CPATH="lua/?.so;;"
# A server as it was at REV, built once from the git history into
# build/bench/NAME and exported as VAR for the figures it is the baseline
# of; without the history (an unpacked tarball) they go without it.
baseline_server() {
  local name=$1 rev=$2 var=$3 dir=build/bench/$1
  [ -z "${!var:-}" ] && git cat-file -e "$rev^{commit}" 2>/dev/null || return 0
  if [ ! -x "$dir/bin/unsandboxd" ] || [ ! -x "$dir/bin/unsandboxd-agent" ]; then
    echo "make bench: building the $name server ($rev) into $dir"
    rm -rf "$dir" && mkdir -p "$dir"
    git archive "$rev" | tar -x -C "$dir"
    make -s -C "$dir" -j"$(nproc)" bin/unsandboxd bin/unsandboxd-agent >"$dir.log" 2>&1 ||
      { echo "make bench: the $name server did not build (see $dir.log)"; rm -rf "$dir"; }
  fi
  [ -x "$dir/bin/unsandboxd" ] && export "$var=$PWD/$dir/bin/unsandboxd"
  return 0
}
# before sandboxes were started ahead: the throughput figure's baseline
baseline_server baseline 76a3471 BENCH_BASELINE_SERVER
# before sessions lived (each command a one-shot sandbox over the volume)
baseline_server pre-living 9e7f949 BENCH_PRE_LIVING_SERVER
# before lists were written row by row (a jansson tree, the heap's peak kept)
baseline_server pre-lists 57aad91 BENCH_PRE_LISTS_SERVER
lua5.4 bench/bench.lua "$@"
lua5.4 bench/concurrency.lua
lua5.4 bench/objects.lua
lua5.4 bench/memory.lua
lua5.4 bench/terminal.lua
lua5.4 bench/fairness.lua
lua5.4 bench/agent.lua
lua5.4 bench/client.lua
lua5.4 bench/luas.lua
lua5.4 bench/living.lua
lua5.4 bench/lists.lua
lua5.4 bench/output.lua
lua5.4 bench/throughput.lua
