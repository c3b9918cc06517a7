#!/usr/bin/env bash
# tensormap_test.sh: a launch's tensormap(NAME, SWIZZLE, BOX...) argument is checked where temper
# reads the candidate, before any device: NAME must be one of the task's arrays (not a scalar, not
# unknown), the box needs one size per dimension of it, the form must be whole, the kernel's
# parameter there must be `const __grid_constant__` of a struct type (and nothing else may go to
# such a parameter), and an OpenCL kernel cannot take one. Each mistake is `invalid` (exit 1) with file:line and the entry. A
# well-formed one gets past the checks to the device choice (exit 3 here: no CUDA device). (The encoding and the TMA copies run
# only on a GPU: hgemm's tma.cu and the CUDA verdict cases cover them there.)
# usage: tensormap_test.sh TEMPER_BINARY SOURCE_DIR   (exit 77: no OpenCL device)
set -u
temper=$1
src=$2
work=$(mktemp -d /tmp/temper-tensormap-XXXXXX)
trap 'rm -rf "$work"' EXIT
export TEMPER_HOME=$work/home TEMPER_TASKS=$src/tasks
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }

if ! "$temper" devices 2>/dev/null | grep -q '^opencl'; then
    echo "SKIP: no OpenCL device (the checks run before the device, but the command names one)"
    exit 77
fi

# FILE ARGS EXPECTED_STATUS EXPECTED_TEXT: a vector_add candidate (c = a + b, N) whose launch passes ARGS
check() {
    local file=$1 args=$2 want_status=$3 want=$4
    cat >"$work/$file" <<CAND
// @temper task vector_add
// @temper launch k grid(ceil_div(N, 256)) block(256) args($args)
struct __align__(64) map_t { unsigned long long v[16]; };
extern "C" __global__ void k(float *c, const __grid_constant__ map_t m, const float *b, int N) {}
CAND
    "$temper" eval "$work/$file" --no-store --device opencl >"$work/out" 2>&1
    local status=$?
    if [ "$status" -eq "$want_status" ] && grep -qF -- "$want" "$work/out"; then
        ok "$file: $want"
    else
        fail "$file: exit $status (wanted $want_status and '$want')"
        sed 's/^/     /' "$work/out"
    fi
}

check scalar.cu 'c, tensormap(N, 0, 64), b, N' 1 "scalar.cu:2: args(...): 'tensormap(N, 0, 64)': a tensor map is over one of task vector_add's arrays, and 'N' is not one"
check unknown.cu 'c, tensormap(w, 0, 64), b, N' 1 "'w' is not one"
check rank.cu 'c, tensormap(a, 0, 64, 2), b, N' 1 "rank.cu:2: args(...): 'tensormap(a, 0, 64, 2)': a has 1 dimension, so the box needs 1 size (innermost first), not 2"
check short.cu 'c, tensormap(a, 0), b, N' 1 "short.cu:2: launch: args(...): 'tensormap(a, 0)': tensormap(...) takes a task argument's name, a swizzle span and 1 to 5 box sizes"
check good.cu 'c, tensormap(a, 0, 64), b, N' 3 "it needs a CUDA device"
check pointer.cu 'tensormap(c, 0, 64), a, b, N' 1 "pointer.cu:2: args(...): 'tensormap(c, 0, 64)' goes to kernel k's parameter 1, which is not declared \`const __grid_constant__\` of a struct type"
check buffer.cu 'c, a, b, N' 1 "buffer.cu:2: args(...): 'a' goes to kernel k's parameter 2, which is declared \`__grid_constant__\` of a struct type: only a tensormap(...) goes there"

cat >"$work/k.cl" <<'CAND'
// @temper task vector_add
// @temper launch k grid(N) block(64) args(c, tensormap(a, 0, 64), b, N)
__kernel void k(__global float *c, __global const float *a, __global const float *b, int N) {}
CAND
"$temper" eval "$work/k.cl" --no-store --device opencl >"$work/out" 2>&1
status=$?
if [ $status -eq 1 ] && grep -qF "k.cl:2: launch: args(...): 'tensormap(a, 0, 64)': tensor maps are CUDA's" "$work/out"; then
    ok "k.cl: an OpenCL kernel takes no tensor map"
else
    fail "k.cl: exit $status"
    sed 's/^/     /' "$work/out"
fi

[ $failures -eq 0 ] || exit 1
echo "all passed"
