#!/usr/bin/env bash
# make coverage: C line coverage (gcov through lcov) of the unit tests and
# the integration specs together, with every C component but the agent
# (which runs inside sandboxes as another user, where it could not write
# its counters) built with --coverage in build/coverage/src. Prints the
# tests' "N passed, N failed" line, then lines covered per directory; the
# lcov data is build/coverage/coverage.info.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/variant.sh coverage "-O0 -g --coverage" "--coverage" || exit 1
src=build/coverage/src
find "$src/build" -name '*.gcda' -delete
# the specs that build C programs against the instrumented library link
# gcov's runtime too (install_spec reads UNSB_COVERAGE)
log=build/coverage/tests.log
( cd "$src" && UNSB_BUSTED_ENV="UNSB_COVERAGE=1" scripts/run-tests.sh "$@" ) >"$log" 2>&1
status=$?
# what failed, then the count (the per-file lines are in the log)
sed -n '/^== /,$p' "$log" | sed '$d'
tail -n 1 "$log"
info=build/coverage/coverage.info
lcov --quiet --capture --directory "$src/build" --base-directory "$src" --output-file "$info" \
  --rc lcov_branch_coverage=0 2>/dev/null || { echo "lcov failed"; exit 1; }
printf '%-20s %8s %8s %7s\n' directory lines hit cover
for d in core lua host server server/http server/store server/sandbox server/exec server/cp; do
  part=build/coverage/part.info
  lcov --quiet --extract "$info" "*/csrc/$d/*" --output-file "$part" 2>/dev/null || continue
  # "lines......: 52.0% (1234 of 2373 lines)"
  line=$(lcov --summary "$part" 2>&1 | grep -E '^\s*lines')
  hit=$(echo "$line" | sed -E 's/.*\(([0-9]+) of ([0-9]+) lines\).*/\1/')
  all=$(echo "$line" | sed -E 's/.*\(([0-9]+) of ([0-9]+) lines\).*/\2/')
  printf '%-20s %8s %8s %6s%%\n' "csrc/$d" "$all" "$hit" "$(echo "$line" | grep -oE '[0-9.]+%' | tr -d %)"
done
exit "$status"
