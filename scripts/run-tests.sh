#!/usr/bin/env bash
# Runs the C unit tests and the busted specs (both speak TAP), shows the
# failures, and ends with the single line "N passed, N failed".
# UNSB_C_ENV / UNSB_BUSTED_ENV: NAME=value words set for the C tests /
# for busted (make sanitize sets the sanitizers' options and preload).
set -uo pipefail
cd "$(dirname "$0")/.."

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0

for t in build/tests/*; do
  [ -x "$t" ] || continue
  env ${UNSB_C_ENV:-} "$t" >"$out/$(basename "$t").tap" 2>&1 || status=1
done

env ${UNSB_BUSTED_ENV:-} busted -o TAP "$@" >"$out/busted.tap" 2>&1 || status=1

passed=$(cat "$out"/*.tap | grep -cE '^ok [0-9]+')
failed=$(cat "$out"/*.tap | grep -cE '^not ok [0-9]+')

for f in "$out"/*.tap; do
  if grep -qE '^not ok' "$f"; then
    echo "== failures in $(basename "$f" .tap)"
    grep -E -A12 '^not ok' "$f" | head -n 200
  fi
done
# a runner that crashed before reporting counts as a failure too
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
  echo "== a test runner exited non-zero without a failing test:"
  tail -n 30 "$out"/*.tap
  failed=$((failed + 1))
fi

# specs waiting for a server feature say so (busted's pending: "ok N - # SKIP")
skipped=$(cat "$out"/*.tap | grep -cE '^ok [0-9]+ - # SKIP' || true)
if [ "$skipped" -gt 0 ]; then
  echo "== $skipped pending (counted as passed), by reason:"
  grep -hE '^ok [0-9]+ - # SKIP' "$out"/*.tap | sed -E 's/^ok [0-9]+ - # SKIP [^ ]+ //' | sort | uniq -c
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
