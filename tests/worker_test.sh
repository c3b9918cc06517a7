#!/usr/bin/env bash
# worker_test.sh: the worker process as the command line meets it on PoCL: a candidate whose
# source holds a byte that is not UTF-8 (a Latin-1 comment) reaches the worker intact and is
# judged correct alone, in a batch of several and in a short tune; `temper devices --json`
# says what confines the worker; a missing worker executable is a clear error; an installed tree
# moved elsewhere finds its worker; scratch folders do not pile up.
# usage: worker_test.sh TEMPER_BINARY SOURCE_DIR
set -u
temper=$1
src=$2
work=$(mktemp -d /tmp/temper-worker-test-XXXXXX)
export TEMPER_HOME=$work/home TEMPER_TASKS=$src/tasks
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }

# The vector_add baseline with a comment holding e-acute in Latin-1 (0xE9), not UTF-8.
latin=$work/latin1_add.cl
{
    printf '// caf\xe9: a Latin-1 byte in a comment\n'
    cat "$src/tasks/L1/vector_add/naive.cl"
} >"$latin"
if LC_ALL=C grep -q $'\xe9' "$latin" && ! iconv -f UTF-8 -t UTF-8 "$latin" >/dev/null 2>&1; then
    ok "the candidate holds a byte that is not UTF-8"
else
    fail "the test candidate is valid UTF-8: the test would prove nothing"
fi

# 1. Alone.
"$temper" eval --no-timing --json "$latin" >"$work/alone.json" 2>"$work/alone.err"
status=$?
[ $status -eq 0 ] && grep -q '"verdict": *"correct"' "$work/alone.json" && ok "alone: correct, exit 0" ||
    { fail "alone: exit $status"; tail -5 "$work/alone.err"; }

# 2. In a batch of several, the others plain UTF-8.
cp "$src/tasks/L1/vector_add/naive.cl" "$work/plain_add.cl"
cp "$latin" "$work/latin1_again.cl"
"$temper" eval --no-timing --json "$work/plain_add.cl" "$latin" "$work/latin1_again.cl" >"$work/batch.json" \
    2>"$work/batch.err"
status=$?
n=$(grep -o '"verdict": *"correct"' "$work/batch.json" | wc -l)
[ $status -eq 0 ] && [ "$n" = 3 ] && ok "batch of 3: all correct" ||
    { fail "batch: exit $status, $n correct of 3"; tail -5 "$work/batch.err"; }

# 3. In a short tune of a candidate with knobs.
tuned=$work/latin1_softmax.cl
{
    printf '// r\xe9sum\xe9 of the softmax rows kernel, in Latin-1\n'
    cat "$src/tasks/L1/softmax/rows.cl"
} >"$tuned"
"$temper" tune "$tuned" --strategy random --budget 2 --batch 2 --retime 1 --no-compiler-knobs --screen-budget 0.05 \
    --full-budget 0.05 --json >"$work/tune.json" 2>"$work/tune.err"
status=$?
bad=$(grep -o '"verdict": *"invalid"' "$work/tune.json" | wc -l)
[ $status -eq 0 ] && grep -q '"verdict": *"correct"' "$work/tune.json" && [ "$bad" = 0 ] &&
    ok "tune: correct, nothing invalid" || { fail "tune: exit $status, $bad invalid"; tail -5 "$work/tune.err"; }

# 4. The device description says what confines the worker.
"$temper" devices --json >"$work/devices.json" 2>&1
grep -q '"sandbox"' "$work/devices.json" && grep -q '"seccomp": true' "$work/devices.json" &&
    grep -q '"no_new_privs": true' "$work/devices.json" && ok "devices --json has the sandbox" ||
    { fail "no sandbox in devices --json"; head -40 "$work/devices.json"; }

# 5. A worker executable that is not there is named.
TEMPER_WORKER=$work/no-such-worker "$temper" eval --no-timing "$latin" >"$work/missing.out" 2>"$work/missing.err"
status=$?
[ $status -ne 0 ] && grep -q "no-such-worker" "$work/missing.err" && ok "a missing worker is named (exit $status)" ||
    { fail "missing worker: exit $status"; cat "$work/missing.err"; }

# 6. An installed tree (PREFIX/bin/temper, PREFIX/libexec/temper/temper-worker) moved elsewhere
#    finds its worker.
mkdir -p "$work/prefix/bin" "$work/prefix/libexec/temper"
cp "$temper" "$work/prefix/bin/temper"
cp "$(dirname "$temper")/temper-worker" "$work/prefix/libexec/temper/temper-worker"
env -u TEMPER_WORKER "$work/prefix/bin/temper" devices >"$work/moved.out" 2>&1
status=$?
[ $status -eq 0 ] && grep -q "opencl:0" "$work/moved.out" && ok "a moved install finds its worker in libexec" ||
    { fail "moved install: exit $status"; cat "$work/moved.out"; }

# 7. Scratch folders: a worker's is removed when it ends; one left by a parent that was killed
#    (its process gone) is removed by the next worker's start; a running process's is kept.
mkdir -p "$work/tmp"
dead=$(sh -c 'echo $$')
mkdir -p "$work/tmp/temper-worker-$dead-stale" "$work/tmp/temper-worker-$$-live"
touch "$work/tmp/temper-worker-$dead-stale/left"
TMPDIR=$work/tmp "$temper" devices >/dev/null 2>&1
left=$(ls "$work/tmp")
[ "$left" = "temper-worker-$$-live" ] && ok "stale scratch removed, live kept, own removed" ||
    fail "scratch folders left: $left"

rm -rf "$work"
[ $failures -eq 0 ] && echo "all worker tests passed" || echo "$failures worker test(s) failed"
[ $failures -eq 0 ]
