#!/usr/bin/env bash
# make bench: private unsandboxd servers (one with a pool of sandboxes
# prepared ahead, one without), every figure next to a baseline measured
# in the same run (bench/bench.lua), issue 11's concurrency figures
# (bench/concurrency.lua), the server's memory while it moves a 64 MiB
# object (bench/objects.lua) and under slow clients (bench/memory.lua:
# unauthenticated bodies, slow readers), a session terminal's attach next
# to the same session's execute (bench/terminal.lua), then the probes'
# latency while one party saturates its fair shares, next to idle
# (bench/fairness.lua), and living sessions: a command, a creation, the
# memory of an idle one (bench/living.lua), and the Control Plane's long
# lists next to their encoding and the server before (bench/lists.lua),
# and the throughput curve from 1 to 16 clients with CPU per job, the run
# queue next to none (bench/throughput.lua).
# Needs root, as unsandboxd does.
set -euo pipefail
cd "$(dirname "$0")/.."
export LUA_PATH="lua/?.lua;lua/?/init.lua;bench/?.lua;spec/?.lua;;"
export LUA_CPATH="lua/?.so;;"
# The server as it was before issue 15's work (sandboxes started ahead,
# cheaper runs): the baseline of the throughput figure, measured in the
# same rounds. Built once from the git history into build/bench/baseline;
# without the history (an unpacked tarball) the figure goes without it.
BASELINE_REV=76a3471
if [ -z "${BENCH_BASELINE_SERVER:-}" ] && git cat-file -e "$BASELINE_REV^{commit}" 2>/dev/null; then
  dir=build/bench/baseline
  if [ ! -x "$dir/bin/unsandboxd" ] || [ ! -x "$dir/bin/unsandboxd-agent" ]; then
    echo "make bench: building the baseline server ($BASELINE_REV) into $dir"
    rm -rf "$dir" && mkdir -p "$dir"
    git archive "$BASELINE_REV" | tar -x -C "$dir"
    make -s -C "$dir" -j"$(nproc)" bin/unsandboxd bin/unsandboxd-agent >"$dir.log" 2>&1 ||
      { echo "make bench: the baseline server did not build (see $dir.log)"; rm -rf "$dir"; }
  fi
  [ -x "$dir/bin/unsandboxd" ] && export BENCH_BASELINE_SERVER="$PWD/$dir/bin/unsandboxd"
fi
# The server as it was before sessions lived (each session command a
# one-shot sandbox over the volume): the baseline of bench/living.lua.
LIVING_BASELINE_REV=9e7f949
if [ -z "${BENCH_PRE_LIVING_SERVER:-}" ] && git cat-file -e "$LIVING_BASELINE_REV^{commit}" 2>/dev/null; then
  dir=build/bench/pre-living
  if [ ! -x "$dir/bin/unsandboxd" ] || [ ! -x "$dir/bin/unsandboxd-agent" ]; then
    echo "make bench: building the pre-living server ($LIVING_BASELINE_REV) into $dir"
    rm -rf "$dir" && mkdir -p "$dir"
    git archive "$LIVING_BASELINE_REV" | tar -x -C "$dir"
    make -s -C "$dir" -j"$(nproc)" bin/unsandboxd bin/unsandboxd-agent >"$dir.log" 2>&1 ||
      { echo "make bench: the pre-living server did not build (see $dir.log)"; rm -rf "$dir"; }
  fi
  [ -x "$dir/bin/unsandboxd" ] && export BENCH_PRE_LIVING_SERVER="$PWD/$dir/bin/unsandboxd"
fi
# The server before its lists were written row by row (a jansson tree of
# every list, the heap's peak kept): the baseline of bench/lists.lua.
LISTS_BASELINE_REV=57aad91
if [ -z "${BENCH_PRE_LISTS_SERVER:-}" ] && git cat-file -e "$LISTS_BASELINE_REV^{commit}" 2>/dev/null; then
  dir=build/bench/pre-lists
  if [ ! -x "$dir/bin/unsandboxd" ] || [ ! -x "$dir/bin/unsandboxd-agent" ]; then
    echo "make bench: building the pre-lists server ($LISTS_BASELINE_REV) into $dir"
    rm -rf "$dir" && mkdir -p "$dir"
    git archive "$LISTS_BASELINE_REV" | tar -x -C "$dir"
    make -s -C "$dir" -j"$(nproc)" bin/unsandboxd bin/unsandboxd-agent >"$dir.log" 2>&1 ||
      { echo "make bench: the pre-lists server did not build (see $dir.log)"; rm -rf "$dir"; }
  fi
  [ -x "$dir/bin/unsandboxd" ] && export BENCH_PRE_LISTS_SERVER="$PWD/$dir/bin/unsandboxd"
fi
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
lua5.4 bench/throughput.lua
