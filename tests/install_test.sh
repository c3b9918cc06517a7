#!/usr/bin/env bash
# install_test.sh: `cmake --install` into a temporary prefix puts the binary, the shared and the
# static libtemper, every public header, the worker, the tasks and temper.pc there; the installed
# headers compile from the prefix alone; examples/eval_source.c builds against it with
# pkg-config (shared, and static), is put in the prefix's bin, and evaluates candidates read on
# standard input on PoCL through the session API, from a folder outside the source tree with
# neither TEMPER_TASKS nor TEMPER_WORKER set: the library finds the installed worker and tasks
# itself. Each printed result is checked against docs/result.md (schema_version 1 and every key
# of the result table) and, when the build has it, by tests/result_schema_test. Nothing is stored
# unless --store is given; a store that fails gives exit status 4.
# usage: install_test.sh CMAKE BUILD_DIR SOURCE_DIR
# Exit status: 0 passed, 1 a check failed, 77 no OpenCL device or no C compiler (skipped).
set -u
cmake=$1
build=$(cd "$2" && pwd)
src=$(cd "$3" && pwd)
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
command -v python3 >/dev/null || { echo "FAIL python3 is not installed"; exit 1; }

if ! "$cmake" --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1; then
    echo "FAIL cmake --install"
    tail -20 "$work/install.log"
    exit 1
fi
pc=$(find "$prefix" -name temper.pc | head -1)
[ -n "$pc" ] || { echo "FAIL no temper.pc under the prefix"; exit 1; }
PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_PATH
libdir=$(pkg-config --variable=libdir temper)
includedir=$(pkg-config --variable=includedir temper)
tasksdir=$(pkg-config --variable=tasksdir temper)
for f in "$prefix/bin/temper" "$libdir/libtemper.a" "$libdir/libtemper.so" "$tasksdir/L1/softmax/task.json"; do
    [ -e "$f" ] || fail "not installed: ${f#"$prefix"/}"
done
for h in "$src"/include/temper/*.h; do
    [ -e "$includedir/temper/$(basename "$h")" ] || fail "header not installed: temper/$(basename "$h")"
done
[ "$(readlink -f "$tasksdir")" = "$(readlink -f "$prefix")/share/temper/tasks" ] ||
    fail "tasksdir is $tasksdir, not under the prefix"
[ -x "$prefix/libexec/temper/temper-worker" ] || fail "the worker is not installed as libexec/temper/temper-worker"

# Everything below runs outside the source and build trees, with only what the prefix holds.
mkdir -p "$work/run"
cd "$work/run" || exit 1
unset TEMPER_TASKS TEMPER_WORKER

# A task that is not there: the message names the installed suite's folder (the prefix's, which
# the build was not configured with), not the configured one.
"$prefix/bin/temper" show no_such_task >"$work/show.out" 2>&1
grep -qF "no task named 'no_such_task' under $prefix/" "$work/show.out" ||
    fail "the missing task's message does not name the installed suite: $(head -2 "$work/show.out")"

# The installed binary lists the installed suite by itself.
if ! "$prefix/bin/temper" tasks >"$work/tasks.out" 2>&1 || ! grep -q softmax "$work/tasks.out"; then
    fail "the installed temper does not find the installed tasks: $(head -3 "$work/tasks.out")"
fi

# The installed headers are self-contained: each compiles alone, first in its file, and all of
# them together, with no include path but the prefix's (and its dependencies', from pkg-config).
cflags=$(pkg-config --cflags temper)
all=$work/all_headers.c
echo "/* every installed header */" >"$all"
for h in "$includedir"/temper/*.h; do
    name=temper/$(basename "$h")
    printf '#include <%s>\nint main(void) { return 0; }\n' "$name" >"$work/one.c"
    # shellcheck disable=SC2086
    cc -std=c11 -Wall -Wextra -Werror -c $cflags "$work/one.c" -o "$work/one.o" 2>"$work/cc.log" ||
        fail "$name does not compile on its own from the prefix: $(head -5 "$work/cc.log")"
    echo "#include <$name>" >>"$all"
done
echo "int main(void) { return 0; }" >>"$all"
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Werror -c $cflags "$all" -o "$work/all.o" 2>"$work/cc.log" ||
    fail "the installed headers do not compile together: $(head -5 "$work/cc.log")"

# The example, against the shared library and against the static one, installed beside temper.
example=$src/examples/eval_source.c
shared=$prefix/bin/eval_source
static=$prefix/bin/eval_source_static
# shellcheck disable=SC2046
cc -Wall -Wextra -Werror "$example" $(pkg-config --cflags --libs temper) -Wl,-rpath,"$libdir" -o "$shared" \
    2>"$work/cc.log" || fail "the example does not build against libtemper.so: $(cat "$work/cc.log")"
static_libs=$(pkg-config --libs --static temper | sed 's/-ltemper\( \|$\)/-l:libtemper.a /')
# shellcheck disable=SC2046,SC2086
cc -Wall -Wextra -Werror "$example" $(pkg-config --cflags temper) $static_libs -o "$static" \
    2>"$work/cc.log" || fail "the example does not build against libtemper.a: $(cat "$work/cc.log")"
if [ -x "$shared" ]; then
    ldd "$shared" | grep -q "$libdir/libtemper.so" || fail "the shared example does not load the installed libtemper.so"
fi
if [ -x "$static" ]; then
    ! ldd "$static" | grep -q libtemper || fail "the static example loads a shared libtemper"
fi

# Runs against the installed tasks only, in a store of its own.
export TEMPER_HOME=$work/home TEMPER_CACHE=$work/cache
# The test run's saved ceilings would spare the calibration this test looks for.
unset TEMPER_CEILINGS
"$prefix/bin/temper" devices >"$work/devices" 2>&1
if ! grep -q "opencl:0" "$work/devices"; then
    echo "SKIP: no OpenCL device"
    exit 77
fi

# check_result FILE VERDICT TASK: FILE holds one complete result in the documented form, with
# that verdict (and that task, unless TASK is empty).
schema_test=$build/tests/result_schema_test
check_result() {
    python3 - "$1" "$2" "$3" "$src/docs/result.md" "$(readlink -f "$prefix")" <<'EOF' || return 1
import json, re, sys
path, verdict, task, doc, prefix = sys.argv[1:6]
r = json.load(open(path))
# The keys of docs/result.md's first field table ("### result").
keys, inside = [], False
for line in open(doc):
    if line.startswith("### "):
        if inside:
            break
        inside = line.strip() == "### result"
    m = re.match(r"\| `([a-z_0-9]+)` \|", line)
    if inside and m:
        keys.append(m.group(1))
assert len(keys) > 20, "docs/result.md: no result table found"
missing = [k for k in keys if k not in r]
extra = [k for k in r if k not in keys]
assert not missing, "keys missing: %s" % missing
assert not extra, "keys not documented: %s" % extra
assert r["schema_version"] == 1, r["schema_version"]
assert r["verdict"] == verdict, "%s, expected %s: %s" % (r["verdict"], verdict, r["message"])
if task:
    assert r["task"] == task, r["task"]
if verdict == "correct":  # the task came from the installed suite, not from the source tree
    assert r["baseline"].startswith(prefix + "/share/temper/tasks/"), r["baseline"]
EOF
    if [ -x "$schema_test" ]; then
        "$schema_test" --expect "$2" "$1" >"$work/schema.log" 2>&1 || { cat "$work/schema.log"; return 1; }
    fi
}

candidate=$tasksdir/L1/softmax/rows.cl
for exe in "$shared" "$static"; do
    [ -x "$exe" ] || continue
    kind=$(basename "$exe")
    "$exe" opencl <"$candidate" >"$work/$kind.json" 2>"$work/$kind.err"
    status=$?
    [ "$status" -eq 0 ] || fail "$kind: exit $status, expected 0: $(cat "$work/$kind.err")"
    check_result "$work/$kind.json" correct softmax || fail "$kind: its result"
    grep -q '"store_id": null' "$work/$kind.json" || fail "$kind: a store id without --store"
done
[ -e "$TEMPER_HOME/temper.db" ] && fail "the example wrote a store without --store"
# Without a store, the device's ceilings are measured once and kept in $TEMPER_HOME/calibration
# (not a store): the first run calibrates, the second (the static example) does not.
if [ -x "$shared" ] && [ -x "$static" ]; then
    grep -q "calibrating" "$work/eval_source.err" || fail "the first run without a store did not calibrate"
    grep -q "calibrating" "$work/eval_source_static.err" &&
        fail "the second run without a store measured the device again: $(cat "$work/eval_source_static.err")"
    ls "$TEMPER_HOME"/calibration/*.json >/dev/null 2>&1 || fail "no ceilings kept in \$TEMPER_HOME/calibration"
    [ -e "$TEMPER_HOME/temper.db" ] && fail "keeping the ceilings made a store"
fi

if [ -x "$shared" ]; then
    # With --store the result is recorded in $TEMPER_HOME and carries its row id.
    "$shared" --store opencl opencl:0 <"$candidate" >"$work/stored.json" 2>"$work/stored.err"
    status=$?
    [ "$status" -eq 0 ] || fail "--store: exit $status, expected 0: $(cat "$work/stored.err")"
    check_result "$work/stored.json" correct softmax || fail "--store: its result"
    grep -Eq '"store_id": [1-9]' "$work/stored.json" || fail "--store: no store id: $(grep store_ "$work/stored.json")"
    [ -e "$TEMPER_HOME/temper.db" ] || fail "--store: no store in \$TEMPER_HOME"

    # A store that cannot be opened, and one whose write fails: exit 4 (the latter still prints
    # the result, saying why it was not stored).
    touch "$work/not_a_folder"
    TEMPER_HOME=$work/not_a_folder "$shared" --store opencl <"$candidate" >/dev/null 2>"$work/store.err"
    status=$?
    [ "$status" -eq 4 ] || fail "an unusable store: exit $status, expected 4: $(cat "$work/store.err")"
    TEMPER_STORE_FAIL_AFTER=0 "$shared" --store opencl <"$candidate" >"$work/nostore.json" 2>"$work/store.err"
    status=$?
    [ "$status" -eq 4 ] || fail "a failed store write: exit $status, expected 4: $(cat "$work/store.err")"
    grep -q '"store_error": "[^"]*FAIL_AFTER' "$work/nostore.json" || fail "a failed store write: $(grep store_ "$work/nostore.json")"

    # A candidate that does not compile is judged, not an error, and its record is complete too.
    printf '// @temper task softmax\n// @temper launch nope grid(1) block(1) args(y, x, R, C)\n__kernel void nope( {\n' |
        "$shared" opencl >"$work/bad.json" 2>"$work/bad.err"
    status=$?
    [ "$status" -eq 1 ] || fail "a broken candidate: exit $status, expected 1: $(cat "$work/bad.err")"
    check_result "$work/bad.json" compile_error softmax || fail "a broken candidate: its result"

    # Usage errors, and a device that is not there.
    "$shared" fortran </dev/null >/dev/null 2>"$work/usage.err"
    status=$?
    if [ "$status" -ne 2 ] || ! grep -q usage "$work/usage.err"; then
        fail "an unknown language: exit $status, expected 2 and the usage"
    fi
    "$shared" </dev/null >/dev/null 2>"$work/usage.err"
    status=$?
    if [ "$status" -ne 2 ] || ! grep -q usage "$work/usage.err"; then
        fail "no language: exit $status, expected 2 and the usage"
    fi
    "$shared" opencl opencl:99 <"$candidate" >/dev/null 2>"$work/nodev.err"
    status=$?
    [ "$status" -eq 3 ] || fail "a missing device: exit $status, expected 3: $(cat "$work/nodev.err")"
fi

[ "$failures" -eq 0 ] && echo "PASS: install_test" || echo "$failures failure(s)"
[ "$failures" -eq 0 ]
