#!/usr/bin/env bash
# Runs the C unit tests and the busted spec files (both speak TAP), each
# file as a job of its own, several at once; prints one line per file as
# it ends, then the failures (each file's whole output is kept in
# build/test-logs/), and ends with the single line "N passed, N failed".
#
# Jobs: UNSB_TEST_JOBS, default twice the CPU count, since most of a
# spec's time is spent waiting for sandboxes and servers. Every spec file
# starts its own unsandboxd on an ephemeral port, so files share nothing
# but the machine. The longest files (by the times of the last run, kept
# in build/test-times; on a fresh clone, those of a run kept in
# scripts/test-times) start first, so the run ends close to the time of
# its longest file.
# Arguments are passed to every busted run (e.g. -t unit); UNSB_C_ENV /
# UNSB_BUSTED_ENV: NAME=value words set for the C tests / for busted
# (make sanitize sets the sanitizers' options and preload).
#
# UNSB_LUAS: more Luas to run the spec files under, besides 5.4 (`make
# test`: luajit; `make test-all-luas`: luajit 5.1 5.3), each with its own
# build of the module (build/<lua>/unsandbox/core.so). A file's results
# must then be the same under each: the same tests, passing and failing
# alike; a file whose results differ counts as a failure and is named.
# A spec file whose subject does not run in busted's interpreter (the
# server's wire, or programs the spec starts: unlua, un, luarocks, LÖVE,
# the guide's blocks) says so in a line "-- One Lua: <why>" and runs
# under 5.4 alone: under another Lua it would test the same thing again.
#
# UNSB_TEST_TIMEOUT (seconds, default 1200): a file still running then is
# stopped with its process group (servers it started included) and fails,
# so one hung file cannot hold the whole run.
set -uo pipefail
cd "$(dirname "$0")/.."

# every file's whole output stays in build/test-logs/ after the run
out=build/test-logs
rm -rf "$out" && mkdir -p "$out"
jobs=${UNSB_TEST_JOBS:-$(( $(nproc) * 2 ))}
times=build/test-times
# a fresh clone (CI) orders by the times of a run kept in the tree
known=$times; [ -f "$known" ] || known=scripts/test-times
t_start=$(date +%s.%N)

units=()
for t in build/tests/*; do
  [ -x "$t" ] && [ -f "$t" ] && units+=("$t")
done
for s in spec/*_spec.lua; do units+=("$s"); done
read -r -a extra_luas <<<"${UNSB_LUAS:-}"
one_lua() { grep -qE '^-- One Lua: ' "$1"; }
for l in "${extra_luas[@]}"; do
  [ -f "build/$l/unsandbox/core.so" ] || { echo "run-tests: no build/$l/unsandbox/core.so (make LUA=$l)" >&2; exit 2; }
  for s in spec/*_spec.lua; do one_lua "$s" || units+=("$l:$s"); done
done

# the interpreter of a Lua's name (luajit, 5.1, 5.3)
interp() { if [ "$1" = luajit ]; then echo luajit; else echo "lua$1"; fi; }

# the units, longest first by the last run's times (unknown ones first);
# the C tests and 5.4's specs, then each other Lua's in turn, so that one
# spec file seldom runs under two Luas at once (its servers' sandboxes
# and the processes they count would meet: see file_busy)
order() {
  for u in "${units[@]}"; do
    local t pass=0
    [[ $u == *:spec/* ]] && pass=1
    t=$(awk -v u="$u" '$2 == u { print $1 }' "$known" 2>/dev/null)
    echo "$pass ${t:-99999} $u"
  done | sort -k1,1n -k2,2rn | cut -d' ' -f3-
}

# the spec file of a unit ("luajit:spec/x_spec.lua" -> "spec/x_spec.lua")
file_of() { echo "${1#*:}"; }

# one unit: its TAP in $out/<name>.tap, its seconds in $out/<name>.time
run_unit() {
  local u=$1 name t0 rc
  name=$(echo "$u" | tr '/:' '__')
  t0=$(date +%s.%N)
  local limit=(timeout --kill-after=15 "${UNSB_TEST_TIMEOUT:-1200}")
  if [[ $u == spec/* ]]; then
    "${limit[@]}" env ${UNSB_BUSTED_ENV:-} busted -o TAP "${busted_args[@]}" "$u" >"$out/$name.tap" 2>&1
  elif [[ $u == *:spec/* ]]; then
    local l=${u%%:*}
    "${limit[@]}" env ${UNSB_BUSTED_ENV:-} busted --lua="$(interp "$l")" --cpath="build/$l/?.so" -o TAP \
      "${busted_args[@]}" "${u#*:}" >"$out/$name.tap" 2>&1
  else
    "${limit[@]}" env ${UNSB_C_ENV:-} "$u" >"$out/$name.tap" 2>&1
  fi
  rc=$?
  [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] &&
    echo "run-tests: stopped after ${UNSB_TEST_TIMEOUT:-1200} s (UNSB_TEST_TIMEOUT)" >>"$out/$name.tap"
  echo "$rc" >"$out/$name.rc"
  awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f\n", b - a }' >"$out/$name.time"
}

report_unit() {
  local u=$1 name p f s
  name=$(echo "$u" | tr '/:' '__')
  p=$(grep -acE '^ok [0-9]+' "$out/$name.tap")
  f=$(grep -acE '^not ok [0-9]+' "$out/$name.tap")
  s=$(cat "$out/$name.time")
  if [ "$f" -gt 0 ] || [ "$(cat "$out/$name.rc")" -ne 0 ]; then
    printf 'FAIL %-44s %4d passed, %d failed  %6.1f s\n' "$u" "$p" "$f" "$s"
  else
    printf '  ok %-44s %4d passed           %6.1f s\n' "$u" "$p" "$s"
  fi
}

# waits for one job to end and reports every unit that has ended
reap() {
  local gone=0 n
  wait -n || [ $? -ne 127 ] || gone=1      # 127: no job left to wait for
  for i in "${!running[@]}"; do
    n=$(echo "${running[$i]}" | tr '/:' '__')
    if [ "$gone" -eq 1 ] && [ ! -f "$out/$n.time" ]; then  # its job died unreported
      touch "$out/$n.tap"; echo 99 >"$out/$n.rc"; echo 0 >"$out/$n.time"
    fi
    if [ -f "$out/$n.time" ]; then report_unit "${running[$i]}"; unset 'running[i]'; fi
  done
}

busted_args=("$@")
running=()
# whether the unit's spec file runs now (under another Lua)
file_busy() {
  local f r
  f=$(file_of "$1")
  for r in "${running[@]}"; do [ "$(file_of "$r")" = "$f" ] && return 0; done
  return 1
}

# starts the units in order as slots free up; a unit whose file runs
# under another Lua is passed over for the next one, so that one long
# file holds a slot, never the queue
mapfile -t queue < <(order)
while [ "${#queue[@]}" -gt 0 ]; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do reap; done
  started=0
  for i in "${!queue[@]}"; do
    u=${queue[$i]}
    file_busy "$u" && continue
    run_unit "$u" &
    running+=("$u")
    unset 'queue[i]'
    queue=("${queue[@]}")
    started=1
    break
  done
  [ "$started" -eq 1 ] || reap
done
while [ "${#running[@]}" -gt 0 ]; do reap; done

status=0 passed=0 failed=0
: >"$times.new"
for u in "${units[@]}"; do
  name=$(echo "$u" | tr '/:' '__')
  f="$out/$name.tap"
  passed=$((passed + $(grep -acE '^ok [0-9]+' "$f")))
  nf=$(grep -acE '^not ok [0-9]+' "$f")
  failed=$((failed + nf))
  echo "$(cat "$out/$name.time") $u" >>"$times.new"
  if [ "$nf" -gt 0 ]; then
    echo "== failures in $u"
    grep -a -E -A40 '^not ok' "$f" | head -n 400
  elif [ "$(cat "$out/$name.rc")" -ne 0 ]; then
    # a runner that crashed before reporting counts as a failure too
    echo "== $u exited non-zero without a failing test:"
    tail -n 30 "$f"
    failed=$((failed + 1))
  fi
done
mv "$times.new" "$times"

# the same results under every Lua: each test's name and outcome (sorted:
# a spec that makes its tests from pairs() makes them in each Lua's order)
outcomes() { grep -aE '^(not )?ok [0-9]+' "$1" | sed -E 's/^(not ok|ok) [0-9]+ - /\1 /' | sort; }
if [ "${#extra_luas[@]}" -gt 0 ]; then
  differ=0
  for s in spec/*_spec.lua; do
    one_lua "$s" && continue
    ref="$out/$(echo "$s" | tr '/' '_').tap"
    for l in "${extra_luas[@]}"; do
      other="$out/$(echo "$l:$s" | tr '/:' '__').tap"
      if ! diff -q <(outcomes "$ref") <(outcomes "$other") >/dev/null; then
        echo "== $s: the results under $l differ from 5.4's:"
        diff <(outcomes "$ref") <(outcomes "$other") | head -n 20
        differ=$((differ + 1))
      fi
    done
  done
  failed=$((failed + differ))
  [ "$differ" -eq 0 ] && echo "== the same results under 5.4 and ${extra_luas[*]}"
fi

# specs waiting for a server feature say so (busted's pending: "ok N - # SKIP")
skipped=$(cat "$out"/*.tap | grep -acE '^ok [0-9]+ - # SKIP' || true)
if [ "$skipped" -gt 0 ]; then
  echo "== $skipped pending (counted as passed), by reason:"
  grep -ahE '^ok [0-9]+ - # SKIP' "$out"/*.tap | sed -E 's/^ok [0-9]+ - # SKIP [^ ]+ //' | sort | uniq -c
fi
awk -v a="$t_start" -v b="$(date +%s.%N)" -v j="$jobs" -v n="${#units[@]}" \
  'BEGIN { printf "== %d files in %.0f s, %d at a time\n", n, b - a, j }'
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
