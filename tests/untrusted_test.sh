#!/usr/bin/env bash
# untrusted_test.sh: a candidate that fails after writing where no guard zone sees it (past the
# allocation that holds its scratch buffer, into the worker's heap on PoCL) must not change the
# verdict of the candidates evaluated after it: on a backend whose kernels run in the worker's
# address space, a worker that ran a failed candidate is replaced before the next one. Checked in a
# batch in both orders and in a tune whose configurations alternate between the two. Without the
# replacement, on PoCL, a correct configuration after a stray one got compile_error (the tune) and
# the batch's stray writer hung its worker.
# usage: untrusted_test.sh TEMPER_BINARY SOURCE_DIR
set -u
temper=$1
src=$2
work=$(mktemp -d /tmp/temper-untrusted-XXXXXX)
export TEMPER_HOME=$work/home TEMPER_TASKS=$src/tasks
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }
stray=$src/tests/untrusted/scratch_stray_writes.cl
correct=$src/tests/cases/opencl/correct_vector_add_float4.cl

if ! "$temper" devices 2>/dev/null | grep -q '^opencl'; then
    echo "SKIP: no OpenCL device"
    exit 77
fi

# verdicts FILE...: the verdict column of `temper eval FILE... --no-timing`, one word per file.
verdicts() {
    "$temper" eval "$@" --no-timing >"$work/out" 2>&1
    awk 'NF >= 2 && $1 ~ /\.cl$/ { printf "%s ", $2 }' "$work/out"
}

got=$(verdicts "$stray" "$correct")
# The stray writer's own verdict may be any failure (what its writes hit decides); the correct
# candidates after it must be correct.
case "$got" in
"correct "*) fail "stray writer judged correct: '$got'" ;;
*" correct ") ok "stray writer then a correct candidate: $got" ;;
*) fail "stray writer then a correct candidate: '$got'"; tail -4 "$work/out" ;;
esac
got=$(verdicts "$correct" "$stray" "$correct")
case "$got" in
"correct correct correct ") fail "stray writer judged correct: '$got'" ;;
"correct "*" correct ") ok "correct, stray writer, correct: $got" ;;
*) fail "correct, stray writer, correct: '$got'"; tail -4 "$work/out" ;;
esac

# A tune of the stray writer: its STRAY = 0 configurations are correct, and must be judged so
# whatever ran before them in the same worker.
"$temper" tune "$stray" --strategy random --seed 2 --no-compiler-knobs --retime 1 --screen-budget 0.05 --json \
    >"$work/tune.json" 2>"$work/tune.err"
rows=$(sqlite3 "$TEMPER_HOME/temper.db" "select knobs, verdict from evaluations where knobs like '%STRAY%' order by id" \
    2>/dev/null)
clean=$(printf '%s\n' "$rows" | grep -c '"STRAY": *"0".*|correct$')
zero=$(printf '%s\n' "$rows" | grep -c '"STRAY": *"0"')
dirty=$(printf '%s\n' "$rows" | grep -v '"STRAY": *"0"' | grep -c '|correct$')
if [ "$zero" -ge 2 ] && [ "$clean" = "$zero" ] && [ "$dirty" = 0 ]; then
    ok "tune: $zero configurations with STRAY = 0 correct, every other one not"
else
    fail "tune: $clean of $zero STRAY = 0 configurations correct, $dirty stray ones correct"
    printf '%s\n' "$rows" | sed 's/^/     /'
    tail -5 "$work/tune.err"
fi

rm -rf "$work"
[ $failures = 0 ] && echo "all passed" || echo "$failures failed"
[ $failures = 0 ]
