#!/usr/bin/env bash
# every_launch_test.sh: every timed launch's output is verified. A vector_add that does no work on
# every tenth launch at the bench shape (and is right on check shapes, at its first runs and in
# its median time) must be judged incorrect in 10 of 10 evaluations, each naming the launch; a
# correct deterministic kernel timed the same way must stay correct (no false positive from the
# verification or from the timing rules, on a loaded machine), and incorrect against ceilings that
# make its times faster than the device's measured peak.
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

gbps_of() { sed -n 's/^ *"gbps": \([0-9.eE+-]*\),*$/\1/p' "$1" | head -1; }
speeds=
for run in 1 2 3; do
    if "$temper" eval "$correct" --time-budget 0.2 --json >"$work/out" 2>"$work/err"; then
        ok "correct_vector_add_float4.cl timed and correct (run $run)"
        speeds="$speeds $(gbps_of "$work/out")"
    else
        fail "correct_vector_add_float4.cl run $run"
        grep '"verdict"\|"message"\|"median_ms"\|"min_ms"\|"fast_samples"\|"samples_under_floor"' "$work/out" |
            head -8 | sed 's/^/     /'
        tail -3 "$work/err" | sed 's/^/     /'
    fi
done

# A time faster than the device's measured peak is impossible: correct_vector_add_float4.cl against
# ceilings that say this CPU is slower than it is. Its speed is the median of its runs so far
# (gbps: its bytes over its median time; the runs above, then each try), and ceilings are written
# (from a real ceilings file, in a fresh TEMPER_HOME) under which it runs at about 1.6x the
# measured bandwidth, the compute ceiling out of the way: past the peak's 1.25x margin, within the
# factor of two the test once allowed. Its evaluation must be incorrect, naming the peak, whenever
# its run lands between 1.35x and 1.9x (the run's roofline_share). Load moves a run's speed by a
# fifth or more from one run to the next (seen beside two busy loops: 1.93x, 1.12x, 1.93x when each
# try was based on the one before), so up to 6 tries, each based on the median of every run.
# Then ceilings a thousand times too low: incorrect as well.
real=${TEMPER_CEILINGS:-}
if [ -z "$real" ] || [ ! -f "$real" ]; then
    real=$work/real.json
    "$temper" calibrate --save "$real" >/dev/null 2>&1
fi
share_of() { sed -n 's/^ *"roofline_share": \([0-9.eE+-]*\),*$/\1/p' "$1" | head -1; }
# slow_ceilings GBPS FILE: the real ceilings with copy and read bandwidth GBPS, FMA out of the way.
slow_ceilings() {
    sed -E -e "s/\"(copy_gbs|read_gbs)\": *[0-9.eE+-]+/\"\1\": $1/g" -e 's/"fma_gflops": *[0-9.eE+-]+/"fma_gflops": 1e9/' \
        -e 's/"other_cpu_share": *[0-9.eE+-]+/"other_cpu_share": 0/' "$real" >"$2"
}
# median_of VALUES...: the median of the numbers given.
median_of() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR) print (v[int((NR + 1) / 2)] + v[int(NR / 2) + 1]) / 2 }'; }
judged=0
for try in 1 2 3 4 5 6; do
    # shellcheck disable=SC2086
    gbps=$(median_of $speeds)
    [ -n "$gbps" ] || break
    slow_ceilings "$(awk -v g="$gbps" 'BEGIN { print g / 1.6 }')" "$work/slow.json"
    TEMPER_HOME=$work/slow-$try TEMPER_CEILINGS=$work/slow.json "$temper" eval "$correct" --time-budget 0.2 --json \
        >"$work/slow.out" 2>"$work/slow.err"
    status=$?
    share=$(share_of "$work/slow.out")
    speeds="$speeds $(gbps_of "$work/slow.out")"
    if ! awk -v r="$share" 'BEGIN { exit !(r >= 1.35 && r <= 1.9) }'; then
        echo "     try $try: the kernel ran at ${share:-?}x the written ceilings, outside 1.35-1.9: again"
        continue
    fi
    judged=1
    if [ $status = 1 ] && grep -q '"verdict": "incorrect"' "$work/slow.out" && grep -q '"impossible": true' "$work/slow.out" &&
        grep -q '"message": "the median [^"]* faster than this device.s measured peak allows' "$work/slow.out"; then
        ok "a time at ${share}x the measured ceilings is impossible (incorrect, naming the peak)"
    else
        fail "a time at ${share}x the measured ceilings: exit $status"
        grep '"verdict"\|"message"\|"impossible\|"samples_under_floor"\|"roofline' "$work/slow.out" | head -8 |
            sed 's/^/     /'
    fi
    break
done
[ $judged = 1 ] || fail "no run landed between 1.35x and 1.9x of the written ceilings"
slow_ceilings "$(awk -v g="$(gbps_of "$work/out")" 'BEGIN { print g / 1000 }')" "$work/slower.json"
TEMPER_HOME=$work/slower TEMPER_CEILINGS=$work/slower.json "$temper" eval "$correct" --time-budget 0.2 --json \
    >"$work/slow.out" 2>"$work/slow.err"
status=$?
if [ $status = 1 ] && grep -q '"impossible": true' "$work/slow.out" && grep -q '"samples_under_floor": [1-9]' "$work/slow.out"; then
    ok "a time a thousand times past the measured ceilings is impossible"
else
    fail "a time a thousand times past the measured ceilings: exit $status"
    grep '"verdict"\|"message"' "$work/slow.out" | head -2 | sed 's/^/     /'
fi

rm -rf "$work"
[ $failures = 0 ] && echo "all passed" || echo "$failures failed"
[ $failures = 0 ]
