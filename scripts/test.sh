#!/bin/sh
# test.sh: the second command of the README, and what CI runs (.ci/run). Installs the
# dependencies, then builds and runs every test twice: a normal build, and one with
# AddressSanitizer and UndefinedBehaviorSanitizer. Tests that need a GPU are skipped where none is;
# their reasons are printed after each run.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
# Each skipped test with the reason it printed.
skips() {
    awk '/^[0-9]+\/[0-9]+ Testing: / { name = $3 } /^SKIP/ { print "SKIP " name ": " substr($0, 7) }' \
        "$1/Testing/Temporary/LastTest.log" 2>/dev/null || true
}
(cd build && ctest --output-on-failure --timeout 1200)
skips build
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DTEMPER_SANITIZE=ON >/dev/null
cmake --build build-sanitize -j"$jobs"
# PoCL's own allocations are not ours to chase: leaks are not checked, every other error is.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-sanitize && ctest --output-on-failure --timeout 1200)
skips build-sanitize
# One session shared by four threads, under ThreadSanitizer: a build of its own for that test.
# The worker is still forked from the test (not exec'd): die_after_fork=0 lets it start PoCL's threads.
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS=-fsanitize=thread \
    -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread >/dev/null
cmake --build build-tsan -j"$jobs" --target session_test
(cd build-tsan && TSAN_OPTIONS=halt_on_error=1:die_after_fork=0 ctest -R '^session$' --output-on-failure --timeout 600)
skips build-tsan
