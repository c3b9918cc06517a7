#!/usr/bin/env bash
# sgemm_stream_cpu_test.sh: runs the CUDA kernel of tasks/L1/sgemm/stream.cu itself on the CPU
# (tests/sgemm_stream_cpu.cpp: the threads of a block as fibers of one thread, tests/cuda_cpu_block.h, blocks one after
# another, in order and in reverse) at every check shape of the task and at shapes whose stream-K
# tail splits over 1 to 13 blocks, at knob settings that cover each path: the default tiles with
# the prefetch of the next piece (PF=1); BK 8, FAST=0 and no prefetch (PF=0, the default); 128x128
# tiles with one full round folded into the stream-K tail (SKW=1); 64x64 tiles, scalar loads,
# stream-K off.
# usage: sgemm_stream_cpu_test.sh SOURCE_DIR   (exit 77: no C++20 compiler with <ucontext.h>)
set -u
src=$1
cxx=${CXX:-c++}
work=$(mktemp -d /tmp/temper-sgemm-stream-cpu-XXXXXX)
trap 'rm -rf "$work"' EXIT
printf '#include <ucontext.h>\nint main() { ucontext_t c; return getcontext(&c); }\n' >"$work/probe.cpp"
"$cxx" -std=c++20 "$work/probe.cpp" -o "$work/probe" 2>/dev/null || { echo "SKIP: $cxx has no C++20 and <ucontext.h>"; exit 77; }

failures=0
while read -r knobs; do
    defs=()
    for kv in $knobs; do defs+=("-D$kv"); done
    if ! "$cxx" -std=c++20 -O1 -w "-DKERNEL_FILE=\"$src/tasks/L1/sgemm/stream.cu\"" "${defs[@]}" \
        "$src/tests/sgemm_stream_cpu.cpp" -o "$work/run" 2>"$work/build.log"; then
        echo "FAIL stream.cu $knobs: does not build on the CPU"
        head -20 "$work/build.log"
        failures=$((failures + 1))
        continue
    fi
    if "$work/run" >"$work/out"; then
        echo "ok   stream.cu $knobs: $(grep -c '^ok' "$work/out") runs right on the CPU"
    else
        echo "FAIL stream.cu $knobs"
        grep -v '^ok' "$work/out" | head -10
        failures=$((failures + 1))
    fi
done <<'SETTINGS'
BM=256 BN=128 BK=16 TM=8 TN=16 WX=8 VEC=1 FAST=1 SK=1 SKW=0 PF=1
BM=256 BN=128 BK=8 TM=8 TN=16 WX=4 VEC=1 FAST=0 SK=1 SKW=0 PF=0
BM=128 BN=128 BK=8 TM=8 TN=8 WX=8 VEC=1 FAST=1 SK=1 SKW=1 PF=1
BM=64 BN=64 BK=16 TM=4 TN=4 WX=4 VEC=0 FAST=1 SK=0 SKW=0 PF=0
SETTINGS
[ $failures -eq 0 ] && echo "all passed" || echo "$failures failed"
[ $failures -eq 0 ]
