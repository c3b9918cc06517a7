#!/bin/sh
# test.sh: the second command of the README, and what CI runs (.ci/run). Installs the
# dependencies, then builds and runs every test twice: a normal build, and one with
# AddressSanitizer (leak detection on) and UndefinedBehaviorSanitizer; then the fuzzers of
# tests/fuzz, each for a bounded time. Tests that need a GPU are skipped where none is; their
# reasons are printed after each run. Every stage runs even when one before it failed (a stage
# whose build failed is not run, and says so); the end lists the stages that failed, and the exit
# status is 1 if any did.
set -u
cd "$(dirname "$0")/.." || exit 2
jobs=$(nproc)
failed=""
# Each skipped test with the reason it printed.
skips() {
    awk '/^[0-9]+\/[0-9]+ Testing: / { name = $3 } /^SKIP/ { why = $0; sub(/^SKIP:? */, "", why); print "SKIP " name ": " why }' \
        "$1/Testing/Temporary/LastTest.log" 2>/dev/null || true
}
# stage NAME COMMAND...: runs COMMAND (a function below, whose steps are joined by &&); a failure
# is noted and the stages after it still run.
stage() {
    name=$1
    shift
    "$@"
    status=$?
    if [ $status -ne 0 ]; then
        echo "test.sh: stage $name failed (exit status $status)" >&2
        failed="$failed $name"
    fi
}
# after NAME STAGE: 0 unless stage STAGE failed (then NAME is not run, and counts as failed).
after() {
    case " $failed " in
    *" $2 "*)
        echo "test.sh: stage $1 not run: stage $2 failed" >&2
        return 1
        ;;
    esac
}

deps() {
    ./scripts/install-deps.sh
}
build() {
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null &&
        cmake --build build -j"$jobs"
}
tests() {
    after tests build || return 1
    (cd build && ctest --output-on-failure --timeout 1200)
    rc=$?
    skips build
    return $rc
}
sanitize_build() {
    cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DTEMPER_SANITIZE=ON >/dev/null &&
        cmake --build build-sanitize -j"$jobs"
}
sanitize_tests() {
    after sanitize-tests sanitize-build || return 1
    (cd build-sanitize && ctest --output-on-failure --timeout 1200)
    rc=$?
    skips build-sanitize
    return $rc
}
# One session shared by four threads, under ThreadSanitizer: a build of its own for that test and
# the worker executable it starts (posix_spawn; die_after_fork=0 is kept for PoCL's threads).
tsan() {
    cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS=-fsanitize=thread \
        -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread >/dev/null &&
        cmake --build build-tsan -j"$jobs" --target session_test temper-worker || return 1
    (cd build-tsan && TSAN_OPTIONS=halt_on_error=1:die_after_fork=0 ctest -R '^session$' --output-on-failure --timeout 600)
    rc=$?
    skips build-tsan
    return $rc
}
# The parsers of untrusted input under libFuzzer with both sanitizers and leak detection:
# each fuzz_<target> runs for TEMPER_FUZZ_SECONDS (20 s: 80 s in all, within CI's time on 2
# cores) from its seed corpus in tests/fuzz/<target>/; any finding fails the run, and the input
# that caused it is left in build-fuzz/tests/fuzz/artifacts/.
fuzz() {
    CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTEMPER_FUZZ=ON -DTEMPER_TESTS=OFF \
        -DTEMPER_FUZZ_SECONDS=20 >/dev/null &&
        cmake --build build-fuzz -j"$jobs" --target fuzz_directives fuzz_expr fuzz_task fuzz_worker_request &&
        (cd build-fuzz && ctest --output-on-failure -R '^fuzz_')
}

stage deps deps
stage build build
stage tests tests
stage sanitize-build sanitize_build
# Every sanitizer error fails a test, leaks included. Only the OpenCL ICD loader's, PoCL's and the
# GPU drivers' own allocations are suppressed, by library name (tests/lsan.supp). From here on, as
# the fuzzers run with both sanitizers too.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
stage sanitize-tests sanitize_tests
stage tsan tsan
stage fuzz fuzz
if [ -n "$failed" ]; then
    echo "test.sh: failed stages:$failed (of deps build tests sanitize-build sanitize-tests tsan fuzz)" >&2
    exit 1
fi
echo "test.sh: every stage passed (deps build tests sanitize-build sanitize-tests tsan fuzz)"
