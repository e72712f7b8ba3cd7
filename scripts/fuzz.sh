#!/usr/bin/env bash
# make fuzz: builds the libFuzzer harnesses of fuzz/ with clang (fuzzer,
# address and undefined sanitizers) into build/fuzz/ and runs each for
# FUZZ_TIME seconds (default 20) on a scratch corpus seeded from
# fuzz/corpus/<name>/ (read only: the repository's seeds never change).
# FUZZ=name runs one harness. A crash, leak or sanitizer report fails the
# harness and leaves its input in build/fuzz/<name>/. Prints one line per
# harness (executions, new corpus entries) and ends with
# "N passed, N failed" (harnesses).
set -uo pipefail
cd "$(dirname "$0")/.."
CC=${FUZZ_CC:-clang-14}
T=${FUZZ_TIME:-20}
OUT=build/fuzz
CF="-g -O1 -std=c11 -D_GNU_SOURCE -Icsrc -I/usr/include/lua5.4 -fno-omit-frame-pointer \
 -fsanitize=address,undefined -fno-sanitize-recover=all"
LIBS="-lcurl -lcrypto -ljansson -lsqlite3 -larchive -lmicrohttpd -lpthread -lm"

build() {
  mkdir -p "$OUT/obj" "$OUT/bin"
  local srcs
  # every folder's sources, however deep the layout by concern goes
  srcs=$(find csrc/core csrc/server csrc/agent -name '*.c' | sort |
    grep -v -e '^csrc/server/main\.c$' -e '^csrc/agent/main\.c$')
  # objects of the whole C code (not main), in parallel; -fsanitize=fuzzer-no-link
  # instruments them for coverage feedback without libFuzzer's main
  printf '%s\n' $srcs | xargs -P "$(nproc)" -I{} sh -c \
    "o=$OUT/obj/\$(echo {} | tr / _).o; $CC $CF -fsanitize=fuzzer-no-link -c {} -o \$o" || return 1
  rm -f "$OUT"/lib*.a
  ar rcs "$OUT/libcore.a" "$OUT"/obj/csrc_core_*.o &&
    ar rcs "$OUT/libserver.a" "$OUT"/obj/csrc_server_*.o &&
    ar rcs "$OUT/libagent.a" "$OUT"/obj/csrc_agent_*.o || return 1
  for h in fuzz/*.c; do
    local n
    n=$(basename "$h" .c)
    $CC $CF -fsanitize=fuzzer "$h" -o "$OUT/bin/$n" "$OUT/libserver.a" "$OUT/libagent.a" \
      "$OUT/libcore.a" $LIBS || return 1
  done
}

stamp=$OUT/.built
if [ ! -f "$stamp" ] || [ -n "$(find csrc fuzz -newer "$stamp" -name '*.[ch]' | head -n 1)" ]; then
  echo "building the harnesses with $CC" >&2
  if ! build; then echo "0 passed, 1 failed"; exit 1; fi
  touch "$stamp"
fi

passed=0 failed=0
for h in fuzz/*.c; do
  n=$(basename "$h" .c)
  [ -n "${FUZZ:-}" ] && [ "$FUZZ" != "$n" ] && continue
  mkdir -p "$OUT/$n/corpus"
  log=$OUT/$n.log
  # leaks count (detect_leaks); a single input taking over 10 s is a hang
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$OUT/bin/$n" -max_total_time="$T" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$OUT/$n/" "$OUT/$n/corpus" "fuzz/corpus/$n" >"$log" 2>&1
  rc=$?
  runs=$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$log" | grep -oE '[0-9]+$' | tail -n 1)
  units=$(ls "$OUT/$n/corpus" | wc -l)
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
    echo "fuzz $n: ${runs:-?} executions in ${T} s, corpus $units, no crash"
  else
    failed=$((failed + 1))
    echo "fuzz $n: FAILED (exit $rc) after ${runs:-?} executions; see $log"
    grep -E 'ERROR|runtime error|SUMMARY|Test unit written' "$log" | head -n 8
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
