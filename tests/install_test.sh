#!/usr/bin/env bash
# install_test.sh: `cmake --install` into a temporary prefix puts the binary, the shared and the
# static libtemper, the public headers, the tasks and temper.pc there; examples/eval_source.c
# builds against it with pkg-config (shared, and static) and evaluates a softmax candidate read
# on standard input on PoCL, through the installed library and the installed tasks.
# usage: install_test.sh CMAKE BUILD_DIR SOURCE_DIR
# Exit status: 0 passed, 1 a check failed, 77 no OpenCL device or no C compiler (skipped).
set -u
cmake=$1
build=$2
src=$3
work=$(mktemp -d /tmp/temper-install-XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
failures=0

fail() {
    echo "FAIL $*"
    failures=$((failures + 1))
}

command -v cc >/dev/null || { echo "SKIP: no C compiler (cc)"; exit 77; }
command -v pkg-config >/dev/null || { echo "FAIL pkg-config is not installed"; exit 1; }

if ! "$cmake" --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1; then
    echo "FAIL cmake --install"
    tail -20 "$work/install.log"
    exit 1
fi
pc=$(find "$prefix" -name temper.pc | head -1)
[ -n "$pc" ] || { echo "FAIL no temper.pc under the prefix"; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc")
libdir=$(pkg-config --variable=libdir temper)
includedir=$(pkg-config --variable=includedir temper)
tasksdir=$(pkg-config --variable=tasksdir temper)
for f in "$prefix/bin/temper" "$libdir/libtemper.a" "$libdir/libtemper.so" "$includedir/temper/eval.h" \
    "$includedir/temper/device.h" "$tasksdir/L1/softmax/task.json"; do
    [ -e "$f" ] || fail "not installed: ${f#"$prefix"/}"
done
[ "$(readlink -f "$tasksdir")" = "$(readlink -f "$prefix")/share/temper/tasks" ] ||
    fail "tasksdir is $tasksdir, not under the prefix"
if [ -e "$build/temper-worker" ] && [ -z "$(find "$prefix" -path '*/libexec/temper/temper-worker')" ]; then
    fail "the worker is not installed under libexec/temper"
fi

# The example, against the shared library and against the static one.
example=$src/examples/eval_source.c
# shellcheck disable=SC2046
cc -Wall -Wextra -Werror "$example" $(pkg-config --cflags --libs temper) -Wl,-rpath,"$libdir" -o "$work/shared" \
    2>"$work/cc.log" || { fail "the example does not build against libtemper.so: $(cat "$work/cc.log")"; }
static_libs=$(pkg-config --libs --static temper | sed 's/-ltemper\( \|$\)/-l:libtemper.a /')
# shellcheck disable=SC2046,SC2086
cc -Wall -Wextra -Werror "$example" $(pkg-config --cflags temper) $static_libs -o "$work/static" \
    2>"$work/cc.log" || { fail "the example does not build against libtemper.a: $(cat "$work/cc.log")"; }
if [ -x "$work/shared" ]; then
    ldd "$work/shared" | grep -q "$libdir/libtemper.so" || fail "the shared example does not load the installed libtemper.so"
fi
if [ -x "$work/static" ]; then
    ! ldd "$work/static" | grep -q libtemper || fail "the static example loads a shared libtemper"
fi

# Runs against the installed tasks only, in a store of its own.
export TEMPER_HOME=$work/home TEMPER_CACHE=$work/cache TEMPER_TASKS=$tasksdir
"$prefix/bin/temper" devices >"$work/devices" 2>&1
if ! grep -q "opencl:0" "$work/devices"; then
    echo "SKIP: no OpenCL device"
    exit 77
fi
for kind in shared static; do
    [ -x "$work/$kind" ] || continue
    "$work/$kind" opencl <"$src/tasks/L1/softmax/rows.cl" >"$work/$kind.json" 2>"$work/$kind.err"
    status=$?
    [ "$status" -eq 0 ] || fail "$kind example: exit $status, expected 0: $(cat "$work/$kind.err")"
    python3 - "$work/$kind.json" <<'EOF' || fail "$kind example: its JSON"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["verdict"] == "correct", "%s: %s" % (r["verdict"], r["message"])
assert r["task"] == "softmax", r["task"]
EOF
done
# A candidate that does not compile is judged, not an error.
printf '// @temper task softmax\n// @temper launch nope grid(1) block(1) args(y, x, R, C)\n__kernel void nope( {\n' |
    "$work/shared" opencl >"$work/bad.json" 2>"$work/bad.err"
status=$?
[ "$status" -eq 1 ] || fail "a broken candidate: exit $status, expected 1: $(cat "$work/bad.err")"
grep -q '"verdict": "compile_error"' "$work/bad.json" || fail "a broken candidate: $(head -c 400 "$work/bad.json")"
"$work/shared" fortran </dev/null >/dev/null 2>"$work/usage.err"
[ $? -eq 2 ] && grep -q usage "$work/usage.err" || fail "an unknown language is a usage error"

[ "$failures" -eq 0 ] && echo "PASS: install_test" || echo "$failures failure(s)"
[ "$failures" -eq 0 ]
