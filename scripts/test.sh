#!/bin/sh
# test.sh [--full]: the second command of the README, and what CI runs (.ci/run). Installs the
# dependencies and builds temper twice: a Release build, and an -O1 build with AddressSanitizer
# (leak detection on) and UndefinedBehaviorSanitizer. By default each test runs once, in the build
# where it checks most (its tier label, tests/CMakeLists.txt): temper's own C code in the
# sanitizer build (-L sanitize), kernel content and host-only scripts in the Release build
# (-L release); then the session under ThreadSanitizer and the fuzzers of tests/fuzz for 20 s
# each. --full runs every test in both builds and fuzzes for 120 s each: the run before a
# release. Tests run in parallel (ctest -j, one per core), the longest first; those that evaluate
# on PoCL share the CPU device under two resource locks (tests/CMakeLists.txt says which run
# together). Tests that need a GPU are skipped where none is; their reasons are printed after each
# run. Every stage runs even when one before it failed (a stage whose build failed is not run, and
# says so); the end prints each stage's time, the ten slowest tests and the stages that failed, and
# the exit status is 1 if any did.
set -u
cd "$(dirname "$0")/.." || exit 2
full=0
case "${1:-}" in
--full) full=1 ;;
"") ;;
*)
    echo "usage: scripts/test.sh [--full]" >&2
    exit 2
    ;;
esac
jobs=$(nproc)
if [ $full = 1 ]; then
    release_select=""
    sanitize_select=""
    fuzz_seconds=120
else
    release_select="-L release"
    sanitize_select="-L sanitize"
    fuzz_seconds=20
fi
failed=""
times=""
# Each skipped test with the reason it printed.
skips() {
    awk '/^[0-9]+\/[0-9]+ Testing: / { name = $3 } /^SKIP/ { why = $0; sub(/^SKIP:? */, "", why); print "SKIP " name ": " why }' \
        "$1/Testing/Temporary/LastTest.log" 2>/dev/null || true
}
# stage NAME COMMAND...: runs COMMAND (a function below, whose steps are joined by &&), timed; a
# failure is noted and the stages after it still run.
stage() {
    name=$1
    shift
    start=$(date +%s)
    "$@"
    status=$?
    times="$times $name:$(($(date +%s) - start)):$status"
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
# run_ctest DIR ARGS...: ctest in DIR, its output kept in DIR/ctest.out for the summary.
run_ctest() {
    dir=$1
    shift
    rm -f "$dir/ctest.rc"
    (
        cd "$dir" && ctest "$@"
        echo $? >ctest.rc
    ) 2>&1 | tee "$dir/ctest.out"
    return "$(cat "$dir/ctest.rc" 2>/dev/null || echo 1)"
}
# The ten slowest tests of every ctest run so far, with their build.
slowest() {
    for dir in build build-sanitize build-tsan build-fuzz; do
        [ -f "$dir/ctest.out" ] || continue
        awk -v dir="$dir" '/Test +#[0-9]+: / && / sec$/ {
            for (i = 1; i <= NF; i++) if ($i ~ /^#[0-9]+:$/) name = $(i + 1)
            printf "%10.1f s  %-16s %s\n", $(NF - 1), dir, name }' "$dir/ctest.out"
    done | sort -rn | head -10
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
    # shellcheck disable=SC2086 # the label selection is one or two words
    run_ctest build -j"$jobs" $release_select --output-on-failure --timeout 1200
    rc=$?
    skips build
    return $rc
}
sanitize_build() {
    cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O1" -DTEMPER_SANITIZE=ON \
        >/dev/null &&
        cmake --build build-sanitize -j"$jobs"
}
sanitize_tests() {
    after sanitize-tests sanitize-build || return 1
    # shellcheck disable=SC2086
    run_ctest build-sanitize -j"$jobs" $sanitize_select --output-on-failure --timeout 1200
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
    TSAN_OPTIONS=halt_on_error=1:die_after_fork=0 run_ctest build-tsan -R '^session$' --output-on-failure --timeout 600
    rc=$?
    skips build-tsan
    return $rc
}
# The parsers of untrusted input under libFuzzer with both sanitizers and leak detection:
# each fuzz_<target> runs for TEMPER_FUZZ_SECONDS (20 s: 80 s in all; 120 s with --full) from its
# seed corpus in tests/fuzz/<target>/; any finding fails the run, and the input
# that caused it is left in build-fuzz/tests/fuzz/artifacts/.
fuzz() {
    CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTEMPER_FUZZ=ON -DTEMPER_TESTS=OFF \
        -DTEMPER_FUZZ_SECONDS=$fuzz_seconds >/dev/null &&
        cmake --build build-fuzz -j"$jobs" --target fuzz_directives fuzz_expr fuzz_task fuzz_worker_request &&
        run_ctest build-fuzz -j"$jobs" --output-on-failure -R '^fuzz_'
}
summary() {
    echo "test.sh: $([ $full = 1 ] && echo "the full run (every test in both builds)" || echo "the default run (each tier in its build)"):"
    echo "test.sh: stage            seconds  status"
    for t in $times; do
        echo "$t" | awk -F: '{ printf "test.sh: %-16s %7d  %s\n", $1, $2, $3 == 0 ? "passed" : "failed" }'
    done
    echo "test.sh: the ten slowest tests:"
    slowest | sed 's/^/test.sh: /'
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
summary
if [ -n "$failed" ]; then
    echo "test.sh: failed stages:$failed (of deps build tests sanitize-build sanitize-tests tsan fuzz)" >&2
    exit 1
fi
echo "test.sh: every stage passed (deps build tests sanitize-build sanitize-tests tsan fuzz)"
