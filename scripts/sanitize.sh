#!/usr/bin/env bash
# make sanitize: the C unit tests and the whole busted suite with the core,
# the binding, unlua and unsandboxd built with AddressSanitizer and
# UndefinedBehaviorSanitizer (gcc), in build/sanitize/src. Any report
# fails the run: UBSan aborts on its first finding, ASan on every error,
# and the C tests also run the leak checker. Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
flags="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all"
scripts/variant.sh sanitize "$flags" "-fsanitize=address,undefined" || { echo "0 passed, 1 failed"; exit 1; }
asan=$(gcc -print-file-name=libasan.so)
common="allocator_may_return_null=1:halt_on_error=1:abort_on_error=0:detect_odr_violation=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
cd build/sanitize/src
# the C tests are whole instrumented programs: the leak checker too
export UNSB_C_ENV="ASAN_OPTIONS=$common:detect_leaks=1"
# busted is stock lua5.4 loading the instrumented core.so: the runtime is
# preloaded (for every process the specs start; the sandboxes' own
# environment is cleared by the runner), and leaks are not judged, since
# the Lua interpreters are not built with the checker
export UNSB_BUSTED_ENV="LD_PRELOAD=$asan ASAN_OPTIONS=$common:detect_leaks=0:verify_asan_link_order=0 UNSB_SANITIZE=1"
scripts/run-tests.sh "$@"
