#!/usr/bin/env bash
# membound_twins_test.sh: the OpenCL twins of transpose's swizzle.cu and rmsnorm_rope's fold.cu
# (swizzle.cl, fold.cl), which share their CUDA files' index math, tile swizzle, folded table and
# token loop, judged on every check shape of their tasks on PoCL at knob settings that cover each
# path: for swizzle, square and oblong tiles (32 to 128 on a side), 1 to 4 micro-tiles per
# work-item, both tile orders and the persistent loop (PB > 0, its next tile loaded during the
# stores); for fold, 4 to 16 work-items per vector, 8 to 32 heads per group, 4- and 8-wide runs,
# runs past the private ones (REG below the vectors a work-item takes) and 1, 2 or 4 tokens per
# group (the frequencies kept in local memory). The bench shapes' comparison runs too. (The CUDA
# files compile through NVRTC in nvrtc_compile_fused; they run only on a GPU.)
# usage: membound_twins_test.sh TEMPER_BINARY SOURCE_DIR   (exit 77: no OpenCL device)
set -u
temper=$1
src=$2
work=$(mktemp -d /tmp/temper-membound-twins-XXXXXX)
trap 'rm -rf "$work"' EXIT
export TEMPER_HOME=$work/home TEMPER_TASKS=$src/tasks
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }

if ! "$temper" devices 2>/dev/null | grep -q '^opencl'; then
    echo "SKIP: no OpenCL device"
    exit 77
fi

while read -r file knobs; do
    sets=()
    for kv in $knobs; do sets+=(--set "$kv"); done
    "$temper" eval "$src/$file" --device opencl --no-timing --no-store "${sets[@]}" >"$work/out" 2>&1
    status=$?
    if [ $status -eq 0 ] && grep -q '^verdict *correct' "$work/out"; then
        ok "$file $knobs: correct on every check shape"
    else
        fail "$file $knobs: exit $status"
        tail -8 "$work/out" | sed 's/^/     /'
    fi
done <<'LIST'
tasks/L1/transpose/swizzle.cl TR=64 TC=64 MT=2 GROUP=32 PB=0
tasks/L1/transpose/swizzle.cl TR=32 TC=32 MT=1 GROUP=0 PB=2
tasks/L1/transpose/swizzle.cl TR=128 TC=64 MT=4 GROUP=8 PB=4
tasks/L1/transpose/swizzle.cl TR=32 TC=128 MT=2 GROUP=16 PB=8
tasks/L1/transpose/swizzle.cl TR=64 TC=128 MT=1 GROUP=0 PB=0
tasks/L2/rmsnorm_rope/fold.cl TPV=4 HPB=32 VEC=8 REG=2 TPB=1
tasks/L2/rmsnorm_rope/fold.cl TPV=4 HPB=32 VEC=8 REG=2 TPB=2
tasks/L2/rmsnorm_rope/fold.cl TPV=8 HPB=16 VEC=8 REG=1 TPB=4
tasks/L2/rmsnorm_rope/fold.cl TPV=16 HPB=8 VEC=4 REG=4 TPB=2
tasks/L2/rmsnorm_rope/fold.cl TPV=4 HPB=8 VEC=4 REG=1 TPB=1
LIST

[ $failures -eq 0 ] || { echo "$failures failed"; exit 1; }
echo "all passed"
