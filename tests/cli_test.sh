#!/usr/bin/env bash
# cli_test.sh: the temper binary as a user meets it: every command's --help, exit statuses of
# the README (0 correct, 1 not correct, 2 bad usage or input, 3 no usable device), errors on
# stderr naming what was wrong, JSON output, and the store filling up.
# usage: cli_test.sh TEMPER_BINARY SOURCE_DIR
set -u
temper=$1
src=$2
work=$(mktemp -d /tmp/temper-cli-XXXXXX)
export TEMPER_HOME=$work/home TEMPER_TASKS=$src/tasks
failures=0

# expect STATUS DESCRIPTION -- COMMAND...: runs it, keeps stdout and stderr, checks the status.
expect() {
    local want=$1 what=$2
    shift 3
    "$@" >"$work/out" 2>"$work/err"
    local got=$?
    if [ "$got" -ne "$want" ]; then
        echo "FAIL $what: exit $got, expected $want"
        sed 's/^/     stdout: /' "$work/out" | head -20
        sed 's/^/     stderr: /' "$work/err" | head -20
        failures=$((failures + 1))
        return 1
    fi
    echo "ok   $what"
}

# contains FILE TEXT DESCRIPTION
contains() {
    if ! grep -q -- "$2" "$1"; then
        echo "FAIL $3: '$2' not in $(basename "$1")"
        sed 's/^/     /' "$1" | head -20
        failures=$((failures + 1))
    fi
}

expect 0 "temper --help" -- "$temper" --help
contains "$work/out" "eval" "overview lists eval"
expect 2 "no command" -- "$temper"
expect 2 "unknown command" -- "$temper" frobnicate
contains "$work/err" "unknown command 'frobnicate'" "unknown command is named"
for cmd in devices calibrate tasks show eval; do
    expect 0 "temper $cmd --help" -- "$temper" "$cmd" --help
    contains "$work/out" "usage: temper $cmd" "$cmd --help shows usage"
done
expect 2 "eval with a bad option" -- "$temper" eval --bogus x.cl

expect 0 "devices" -- "$temper" devices
contains "$work/out" "opencl:0" "devices lists the OpenCL device"
expect 0 "devices --json" -- "$temper" devices --json
contains "$work/out" '"compute_units"' "devices --json has compute units"

expect 0 "tasks" -- "$temper" tasks
for t in vector_add softmax sgemm; do contains "$work/out" "$t" "tasks lists $t"; done
contains "$work/out" "flops 2\*M\*N\*K, bytes 4\*(M\*K + K\*N + M\*N)" "tasks gives sgemm's FLOP and byte models"
wide=$(awk 'length($0) > 110' "$work/out" | wc -l)
if [ "$wide" -ne 0 ]; then
    echo "FAIL tasks prints $wide lines over 110 columns"
    failures=$((failures + 1))
fi
expect 0 "show softmax" -- "$temper" show softmax
contains "$work/out" "y        output f32" "show prints arguments in kernel order"
contains "$work/out" "bench cpu" "show prints bench shapes per device class"
expect 2 "show of an unknown task" -- "$temper" show no_such_task
contains "$work/err" "no task named 'no_such_task'" "unknown task is named"

expect 2 "eval of a missing file" -- "$temper" eval "$work/missing.cl"
contains "$work/err" "missing.cl" "missing file is named"
expect 2 "eval with an unknown knob" -- "$temper" eval "$src/tasks/L1/softmax/naive.cl" --set NOPE=1 --no-timing
contains "$work/err" "no param 'NOPE'" "unknown knob is named"
expect 3 "eval on a device that does not exist" -- "$temper" eval "$src/tasks/L1/softmax/naive.cl" --device opencl:9
expect 2 "eval on a device kind that does not exist" -- "$temper" eval "$src/tasks/L1/softmax/naive.cl" --device tpu
expect 3 "eval of a CUDA kernel on an OpenCL device" -- "$temper" eval "$src/tasks/L1/softmax/naive.cu" --device opencl

expect 0 "calibrate --json" -- "$temper" calibrate --device opencl --json
contains "$work/out" '"copy_gbs"' "calibrate reports copy bandwidth"
contains "$work/out" '"fma_gflops"' "calibrate reports FMA throughput"

expect 0 "eval --no-timing --json of a correct kernel" -- "$temper" eval "$src/tasks/L1/softmax/naive.cl" --no-timing --json
contains "$work/out" '"verdict": "correct"' "JSON verdict"
contains "$work/out" '"secret"' "checks ran with the secret seed"
expect 0 "eval --set of a listed knob" -- "$temper" eval "$src/tests/cases/opencl/correct_softmax_block.cl" --set BLOCK=64 --no-timing --json
contains "$work/out" '"BLOCK": "64"' "the knob was applied"
expect 0 "eval with timing" -- "$temper" eval "$src/tests/cases/opencl/correct_vector_add_float4.cl" --time-budget 0.5
contains "$work/out" "roofline" "timing table shows the roofline share"
contains "$work/out" "speedup" "timing table shows the speedup"
expect 1 "eval of a wrong kernel" -- "$temper" eval "$src/tests/cases/opencl/partial_write.cl" --no-timing
contains "$work/out" "verdict    incorrect" "wrong kernel is incorrect"
expect 1 "eval of a malformed kernel" -- "$temper" eval "$src/tests/cases/opencl/malformed_directive.cl"
contains "$work/out" "malformed_directive.cl:" "the message names file and line"

# A broken task gives a message naming the file and field, and nothing already stored is lost.
mkdir -p "$work/tasks/L1/broken"
cp "$src/tasks/L1/softmax/reference.c" "$src/tasks/L1/softmax/naive.cl" "$work/tasks/L1/broken/"
sed 's/"f32"/"f33"/' "$src/tasks/L1/softmax/task.json" | sed 's/"name": "softmax"/"name": "broken"/' >"$work/tasks/L1/broken/task.json"
sed 's/@temper task softmax/@temper task broken/' "$src/tasks/L1/softmax/naive.cl" >"$work/broken.cl"
expect 2 "eval against a malformed task" -- "$temper" eval "$work/broken.cl" --tasks "$work/tasks" --no-timing
contains "$work/err" "dtype: unknown dtype 'f33'" "the bad field is named"

# --reuse-same-code: a repeat in a batch (the same source, knobs and compiled code) takes the first
# one's result and says so; without it, every file is run.
cp "$src/tasks/L1/softmax/block.cl" "$work/repeat.cl"
expect 0 "eval of a batch with a repeat, --reuse-same-code" -- "$temper" eval "$src/tasks/L1/softmax/block.cl" \
    "$work/repeat.cl" --reuse-same-code --json --no-store --time-budget 0.3
if [ "$(sed -n 1p "$work/out" | grep -c '"same_code_as":null')" = 1 ] &&
    sed -n 2p "$work/out" | grep -q '"same_code_as":"-DBLOCK=64"' &&
    sed -n 2p "$work/out" | grep -q '"same_code_path":"[^"]*tasks/L1/softmax/block.cl"' &&
    sed -n 2p "$work/out" | grep -q 'not run again' &&
    [ "$(sed -n 1p "$work/out" | grep -o '"median_ms":[0-9.e-]*' | head -1)" = \
        "$(sed -n 2p "$work/out" | grep -o '"median_ms":[0-9.e-]*' | head -1)" ]; then
    echo "ok   the repeat names the first and has its timing"
else
    echo "FAIL the repeat should take the first one's result"; sed 's/^/     /' "$work/out" | cut -c1-300
    failures=$((failures + 1))
fi
expect 0 "eval of a batch with a repeat" -- "$temper" eval "$src/tasks/L1/softmax/block.cl" "$work/repeat.cl" \
    --json --no-store --no-timing
if grep -q '"same_code_as":"' "$work/out"; then
    echo "FAIL without --reuse-same-code every file runs"; failures=$((failures + 1))
else
    echo "ok   without --reuse-same-code both ran"
fi

if command -v sqlite3 >/dev/null; then
    n=$(sqlite3 "$TEMPER_HOME/temper.db" "select count(*) from evaluations")
    if [ "$n" = 5 ]; then echo "ok   store holds the 5 evaluations"; else
        echo "FAIL store holds $n evaluations, expected 5"; failures=$((failures + 1)); fi
    mode=$(sqlite3 "$TEMPER_HOME/temper.db" "pragma journal_mode")
    if [ "$mode" = wal ]; then echo "ok   store is in WAL mode"; else
        echo "FAIL store journal mode is $mode"; failures=$((failures + 1)); fi
else
    echo "FAIL sqlite3 is not installed (scripts/install-deps.sh installs it)"; failures=$((failures + 1))
fi
sed 's/@temper task vector_add/@temper task vectoradd/' "$src/tasks/L1/vector_add/naive.cl" >"$work/typo.cl"
expect 1 "eval of a candidate naming no task" -- "$temper" eval "$work/typo.cl" --no-timing
contains "$work/out" "typo.cl:[0-9]*: no task named 'vectoradd'" "a task name no folder has is said at its line"

rm -rf "$work"
echo "$failures failures"
[ "$failures" -eq 0 ]
