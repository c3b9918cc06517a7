#!/bin/sh
# test.sh: the second command of the README, and what CI runs (.ci/run). Installs the
# dependencies, then builds and runs every test twice: a normal build, and one with
# AddressSanitizer (leak detection on) and UndefinedBehaviorSanitizer; then the fuzzers of
# tests/fuzz, each for a bounded time. Tests that need a GPU are skipped where none is; their
# reasons are printed after each run.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
# Each skipped test with the reason it printed.
skips() {
    awk '/^[0-9]+\/[0-9]+ Testing: / { name = $3 } /^SKIP/ { why = $0; sub(/^SKIP:? */, "", why); print "SKIP " name ": " why }' \
        "$1/Testing/Temporary/LastTest.log" 2>/dev/null || true
}
(cd build && ctest --output-on-failure --timeout 1200)
skips build
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DTEMPER_SANITIZE=ON >/dev/null
cmake --build build-sanitize -j"$jobs"
# Every sanitizer error fails a test, leaks included. Only the OpenCL ICD loader's, PoCL's and the
# GPU drivers' own allocations are suppressed, by library name (tests/lsan.supp).
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0
(cd build-sanitize && ctest --output-on-failure --timeout 1200)
skips build-sanitize
# One session shared by four threads, under ThreadSanitizer: a build of its own for that test and
# the worker executable it starts (posix_spawn; die_after_fork=0 is kept for PoCL's threads).
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS=-fsanitize=thread \
    -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread >/dev/null
cmake --build build-tsan -j"$jobs" --target session_test temper-worker
(cd build-tsan && TSAN_OPTIONS=halt_on_error=1:die_after_fork=0 ctest -R '^session$' --output-on-failure --timeout 600)
skips build-tsan
# The parsers of untrusted input under libFuzzer with both sanitizers and leak detection:
# each fuzz_<target> runs for TEMPER_FUZZ_SECONDS (20 s: 80 s in all, within CI's time on 2
# cores) from its seed corpus in tests/fuzz/<target>/; any finding fails the run, and the input
# that caused it is left in build-fuzz/tests/fuzz/artifacts/.
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTEMPER_FUZZ=ON -DTEMPER_TESTS=OFF \
    -DTEMPER_FUZZ_SECONDS=20 >/dev/null
cmake --build build-fuzz -j"$jobs" --target fuzz_directives fuzz_expr fuzz_task fuzz_worker_request
(cd build-fuzz && ctest --output-on-failure -R '^fuzz_')
