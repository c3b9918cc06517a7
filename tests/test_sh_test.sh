#!/bin/sh
# test_sh_test.sh SOURCE_DIR: scripts/test.sh runs every stage even when one fails, lists the
# failed ones at the end and exits 1 (0 when all pass); a stage whose build failed is not run. By
# default each build runs its own tier (-L release, -L sanitize), with --full every test; either
# way in parallel, and the end prints each stage's time and the slowest tests.
# It runs a copy of the script in a scratch tree, with cmake, ctest and install-deps.sh replaced
# by stand-ins that log each call and fail where the case says.
set -u
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $1"; }
fail() { echo "FAIL $1"; fails=$((fails + 1)); }

mkdir -p "$tmp/tree/scripts" "$tmp/bin"
cp "$src/scripts/test.sh" "$tmp/tree/scripts/"
cat >"$tmp/tree/scripts/install-deps.sh" <<'SH'
#!/bin/sh
echo "deps" >>"$LOG"
[ "${FAIL_DEPS:-}" != 1 ]
SH
# cmake: -B DIR makes DIR; --build DIR fails when DIR is $FAIL_BUILD.
cat >"$tmp/bin/cmake" <<'SH'
#!/bin/sh
echo "cmake $*" >>"$LOG"
while [ $# -gt 0 ]; do
    case $1 in
    -B) mkdir -p "$2" ;;
    --build) [ "$2" = "${FAIL_BUILD:-}" ] && exit 2 ;;
    esac
    shift
done
exit 0
SH
# ctest: fails in the folder named $FAIL_CTEST; prints one test's line as ctest does, which takes
# as many seconds as the folder's name has characters.
cat >"$tmp/bin/ctest" <<'SH'
#!/bin/sh
here=$(basename "$PWD")
echo "ctest $here" >>"$LOG"
echo "args $here $*" >>"$LOG"
echo "1/1 Test #1: t_$here ..........   Passed   ${#here}.00 sec"
[ "$here" != "${FAIL_CTEST:-}" ]
SH
chmod +x "$tmp/tree/scripts/"*.sh "$tmp/bin/cmake" "$tmp/bin/ctest"

# run NAME FAIL_DEPS FAIL_BUILD FAIL_CTEST [ARG]: runs the copy (with ARG); its status in $status,
# output in $tmp/NAME.out.
run() {
    rm -rf "$tmp/tree/build"*
    : >"$tmp/$1.log"
    LOG=$tmp/$1.log FAIL_DEPS=$2 FAIL_BUILD=$3 FAIL_CTEST=$4 PATH="$tmp/bin:$PATH" \
        sh "$tmp/tree/scripts/test.sh" ${5:-} >"$tmp/$1.out" 2>&1
    status=$?
}
# ran NAME: the four ctest runs and the deps step all happened.
ran_all() {
    for what in deps "ctest build" "ctest build-sanitize" "ctest build-tsan" "ctest build-fuzz"; do
        grep -qx "$what" "$tmp/$1.log" || return 1
    done
}

run pass 0 "" ""
[ $status -eq 0 ] && ran_all pass && grep -q "every stage passed" "$tmp/pass.out" &&
    ok "every stage passes: exit 0 and says so" || { fail "all passing (exit $status)"; cat "$tmp/pass.out"; }

grep -q "^args build -j[0-9]* -L release " "$tmp/pass.log" &&
    grep -q "^args build-sanitize -j[0-9]* -L sanitize " "$tmp/pass.log" &&
    ok "by default the Release build runs the release tier and the sanitizer build the sanitize tier, in parallel" ||
    { fail "the default run's tiers"; cat "$tmp/pass.log"; }
grep -q "test.sh: sanitize-tests *[0-9]* *passed" "$tmp/pass.out" && grep -q "the ten slowest tests" "$tmp/pass.out" &&
    grep -A1 "the ten slowest tests" "$tmp/pass.out" | grep -q "14.0 s *build-sanitize *t_build-sanitize" &&
    ok "the end prints each stage's time and the slowest tests, the slowest first" ||
    { fail "the summary"; cat "$tmp/pass.out"; }

run full 0 "" "" --full
[ $status -eq 0 ] && ran_all full && grep -q "^args build -j[0-9]* --output-on-failure" "$tmp/full.log" &&
    grep -q "^args build-sanitize -j[0-9]* --output-on-failure" "$tmp/full.log" &&
    grep -q -- "-DTEMPER_FUZZ_SECONDS=120" "$tmp/full.log" && grep -q "the full run" "$tmp/full.out" &&
    ok "--full runs every test in both builds and fuzzes longer" || { fail "--full (exit $status)"; cat "$tmp/full.log"; }

run usage 0 "" "" --fast
[ $status -eq 2 ] && grep -q "usage: scripts/test.sh \[--full\]" "$tmp/usage.out" && ! grep -q "ctest" "$tmp/usage.log" &&
    ok "an unknown option: usage, exit 2, nothing run" || { fail "an unknown option (exit $status)"; cat "$tmp/usage.out"; }

run two 0 build-tsan build
[ $status -eq 1 ] && grep -q "ctest build-sanitize" "$tmp/two.log" && grep -q "ctest build-fuzz" "$tmp/two.log" &&
    grep -q "test.sh: failed stages: tests tsan (of " "$tmp/two.out" &&
    ok "the tests and the tsan build fail: the later stages still run, both are listed, exit 1" ||
    { fail "two failed stages (exit $status)"; cat "$tmp/two.out" "$tmp/two.log"; }

run build 1 build ""
[ $status -eq 1 ] && ! grep -qx "ctest build" "$tmp/build.log" && grep -q "ctest build-sanitize" "$tmp/build.log" &&
    grep -q "stage tests not run: stage build failed" "$tmp/build.out" &&
    grep -q "test.sh: failed stages: deps build tests (of " "$tmp/build.out" &&
    ok "deps and the build fail: the tests of that build are not run (and count as failed), the rest run" ||
    { fail "a failed build (exit $status)"; cat "$tmp/build.out" "$tmp/build.log"; }

[ $fails -eq 0 ]
