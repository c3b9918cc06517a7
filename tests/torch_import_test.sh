#!/usr/bin/env bash
# torch_import_test.sh: tasks whose reference is a PyTorch program (docs/task.md, "A PyTorch
# reference"). Imports temper's own dozen KernelBench-format problems (examples/kernelbench:
# activations, row and column reductions, norms, a softmax, a scan, a linear layer with a ReLU
# epilogue, a batched matrix product, a 1-D convolution, two outputs from one module), a
# FlashInfer-Bench definition of its own (a bfloat16 RMS norm), and three the importer must refuse,
# saying why; then evaluates each task's naive OpenCL baseline (correct) and a wrong
# kernel (tests/torch_problems/*.wrong.cl) on PoCL, the reference computed by PyTorch in float64 in the
# sandboxed interpreter; then a reference that raises is the task's error (exit 2, naming the file,
# the line and the exception), as is one that crashes, and the reference's outputs are cached.
# Needs PyTorch in the repository's .venv (scripts/install-pydeps.sh); skips (77) without it.
# usage: torch_import_test.sh TEMPER_BINARY SOURCE_DIR
set -u
temper=$1
src=$2
py=${TEMPER_PYTHON:-$src/.venv/bin/python3}
if ! "$py" -c 'import torch' 2>/dev/null; then
    echo "SKIP: no PyTorch for $py (scripts/install-pydeps.sh installs it into .venv)"
    exit 77
fi
work=$(mktemp -d /tmp/temper-torch-XXXXXX)
trap 'rm -rf "$work"' EXIT
export TEMPER_PYTHON=$py TEMPER_HOME=$work/home TEMPER_CACHE=$work/cache TEMPER_TASKS=$work/tasks
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }
problems="leaky_gelu row_logsumexp rms_norm linear_relu conv1d_valid col_mean_shift row_softmax layer_norm batched_matmul
    scaled_swish row_min_max row_cumsum"

files=""
for p in $problems; do files="$files $src/examples/kernelbench/$p.py"; done
"$temper" tasks import kernelbench $files "$src/tests/torch_problems/int_index.py" "$src/tests/torch_problems/no_inputs.py" \
    --out "$work/tasks" >"$work/import.out" 2>&1
status=$?
cat "$work/import.out"
[ $status -eq 2 ] && ok "import exits 2 when a problem is not imported" || fail "import exit status $status, not 2"
for p in $problems; do
    grep -q "^$src/examples/kernelbench/$p.py: imported as $work/tasks/L1/$p\$" "$work/import.out" &&
        [ -f "$work/tasks/L1/$p/task.json" ] && [ -f "$work/tasks/L1/$p/reference.py" ] &&
        [ -f "$work/tasks/L1/$p/naive.cl" ] && ok "$p imported" || fail "$p not imported"
done
grep -q "int_index.py: not imported: idx is an integer tensor" "$work/import.out" &&
    ok "integer inputs refused, saying why" || fail "int_index.py not refused as it should be"
grep -q "no_inputs.py: not imported: it has no get_inputs" "$work/import.out" &&
    ok "a file without get_inputs refused" || fail "no_inputs.py not refused as it should be"
"$py" - "$work/tasks/L1/linear_relu/task.json" <<'PY' && ok "linear_relu's parameters are inputs, its sizes scalars" || fail "linear_relu's arguments"
import json, sys
t = json.load(open(sys.argv[1]))
names = [(a["name"], a["role"]) for a in t["args"]]
assert names == [("out", "output"), ("x", "input"), ("fc_weight", "input"), ("fc_bias", "input"),
                 ("batch", "scalar"), ("in_features", "scalar"), ("out_features", "scalar")], names
assert t["args"][2]["shape"] == ["out_features", "in_features"], t["args"][2]
assert t["torch"]["params"] == {"fc_weight": "fc.weight", "fc_bias": "fc.bias"}, t["torch"]
assert t["shapes"]["bench"]["gpu"] == [{"batch": 512, "in_features": 1024, "out_features": 768}]
assert sum(1 for s in t["shapes"]["check"] if max(v for k, v in s.items() if k != "init") > 65536) == 3
PY
"$py" - "$work/tasks/L1/conv1d_valid/task.json" "$work/tasks/L1/col_mean_shift/task.json" <<'PY' && ok "conv1d_valid's output length is affine in the sizes; col_mean_shift keeps reduce_dim" || fail "conv1d_valid's or col_mean_shift's shapes"
import json, sys
conv, col = (json.load(open(f)) for f in sys.argv[1:])
assert conv["args"][0]["shape"] == ["batch", "out_channels", "length - kernel_size + 1"], conv["args"][0]
assert [a["name"] for a in col["args"] if a["role"] == "scalar"] == ["rows", "cols"], col["args"]
assert col["torch"]["sizes"] == {"rows": "rows", "cols": "cols"}, col["torch"]
PY

# A FlashInfer-Bench definition of temper's own, and one the importer must refuse.
"$temper" tasks import flashinfer "$src/examples/flashinfer/rows_rmsnorm_h96.json" "$src/tests/torch_problems/fp8_scale.json" \
    --out "$work/tasks" >"$work/fi.out" 2>&1
status=$?
cat "$work/fi.out"
grep -q "rows_rmsnorm_h96.json: imported as $work/tasks/L1/rows_rmsnorm_h96\$" "$work/fi.out" && [ $status -eq 2 ] &&
    grep -q "^def run(x, scale):" "$work/tasks/L1/rows_rmsnorm_h96/reference.py" &&
    ok "a FlashInfer-Bench definition imported, its run() wrapped in a KernelBench-format program" ||
    fail "rows_rmsnorm_h96.json not imported as it should be (exit $status)"
grep -q "fp8_scale.json: not imported: x has dtype float8_e4m3fn" "$work/fi.out" &&
    ok "an fp8 definition refused, saying why" || fail "fp8_scale.json not refused as it should be"

verdict() { # verdict FILE WANT
    "$temper" eval "$1" --device opencl --no-timing --json --no-store >"$work/r.json" 2>"$work/r.err"
    local status=$?
    local got
    got=$("$py" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["verdict"])' "$work/r.json" 2>/dev/null)
    if [ "$got" = "$2" ] && { [ "$2" = correct ] || grep -q "expected .*(the PyTorch reference; " "$work/r.json"; }; then
        ok "$(basename "$1"): $got"
    else
        fail "$(basename "$1"): verdict '$got' (exit $status), not $2"
        head -c 2000 "$work/r.json" "$work/r.err"
    fi
}
for p in $problems; do
    verdict "$src/examples/kernelbench/$p.naive.cl" correct
    verdict "$src/tests/torch_problems/$p.wrong.cl" incorrect
done
verdict "$src/examples/flashinfer/rows_rmsnorm_h96.naive.cl" correct
verdict "$src/tests/torch_problems/rows_rmsnorm_h96.wrong.cl" incorrect
n=$(find "$work/cache/ref/torch" -name 'row_logsumexp-*.bin' 2>/dev/null | wc -l)
[ "$n" -ge 6 ] && ok "the reference's outputs are cached ($n for row_logsumexp)" || fail "$n cached outputs for row_logsumexp"

# A reference that raises: the task's error, naming the file, the line and the exception.
ref=$work/tasks/L1/rms_norm/reference.py
line=$(grep -n 'scale = torch.rsqrt' "$ref" | cut -d: -f1)
sed -i "${line}s/^\( *\)\(.*\)\$/\1raise ValueError('no norm today')/" "$ref"
"$temper" eval "$src/examples/kernelbench/rms_norm.naive.cl" --device opencl --no-timing --no-store >"$work/raise.out" 2>&1
status=$?
if [ $status -eq 2 ] && grep -q "task error: .*reference.py:$line: ValueError: no norm today" "$work/raise.out"; then
    ok "a reference that raises is the task's error (exit 2, reference.py:$line, ValueError)"
else
    fail "a raising reference: exit $status"
    cat "$work/raise.out"
fi

# A reference that crashes: the task's error too, naming the signal.
sed -i "${line}s/raise ValueError('no norm today')/import os; os.kill(os.getpid(), 11)/" "$ref"
"$temper" eval "$src/examples/kernelbench/rms_norm.naive.cl" --device opencl --no-timing --no-store >"$work/crash.out" 2>&1
status=$?
if [ $status -eq 2 ] && grep -q "task error: .*the Python reference crashed (signal 11" "$work/crash.out"; then
    ok "a reference that crashes is the task's error (exit 2, signal 11)"
else
    fail "a crashing reference: exit $status"
    cat "$work/crash.out"
fi

echo "$failures failure(s)"
[ $failures -eq 0 ]
