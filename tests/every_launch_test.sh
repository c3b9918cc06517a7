#!/usr/bin/env bash
# every_launch_test.sh: every timed launch's output is verified. A vector_add that does no work on
# every tenth launch at the bench shape (and is right on check shapes, at its first runs and in
# its median time) must be judged incorrect in 10 of 10 evaluations, each naming the launch; a
# correct deterministic kernel timed the same way must stay correct (no false positive from the
# verification or from the timing rules, on a loaded machine).
# usage: every_launch_test.sh TEMPER_BINARY SOURCE_DIR
set -u
temper=$1
src=$2
work=$(mktemp -d /tmp/temper-every-launch-XXXXXX)
export TEMPER_HOME=$work/home TEMPER_TASKS=$src/tasks
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }
skipper=$src/tests/cases/opencl/skip_every_tenth_launch.cl
correct=$src/tests/cases/opencl/correct_vector_add_float4.cl

if ! "$temper" devices 2>/dev/null | grep -q '^opencl'; then
    echo "SKIP: no OpenCL device"
    exit 77
fi
"$temper" calibrate >/dev/null 2>&1

caught=0
for run in 1 2 3 4 5 6 7 8 9 10; do
    "$temper" eval "$skipper" --time-budget 0.05 --json >"$work/out" 2>&1
    status=$?
    if [ $status = 1 ] && grep -q '"verdict": "incorrect"' "$work/out" &&
        grep -q '"message": "wrong output at bench shape [^"]*, timed launch [0-9]' "$work/out"; then
        caught=$((caught + 1))
    else
        echo "     run $run: exit $status"
        grep '"verdict"\|"message"' "$work/out" | head -2 | sed 's/^/     /'
    fi
done
[ $caught = 10 ] && ok "skip_every_tenth_launch.cl incorrect in 10 of 10 evaluations, naming the launch" ||
    fail "skip_every_tenth_launch.cl incorrect in $caught of 10 evaluations"

for run in 1 2 3; do
    if "$temper" eval "$correct" --time-budget 0.2 --json >"$work/out" 2>"$work/err"; then
        ok "correct_vector_add_float4.cl timed and correct (run $run)"
    else
        fail "correct_vector_add_float4.cl run $run"
        grep '"verdict"\|"message"\|"median_ms"\|"min_ms"\|"fast_samples"\|"samples_under_floor"' "$work/out" |
            head -8 | sed 's/^/     /'
        tail -3 "$work/err" | sed 's/^/     /'
    fi
done

rm -rf "$work"
[ $failures = 0 ] && echo "all passed" || echo "$failures failed"
[ $failures = 0 ]
