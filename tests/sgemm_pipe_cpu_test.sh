#!/usr/bin/env bash
# sgemm_pipe_cpu_test.sh: runs the CUDA kernel of tasks/L1/sgemm/pipe.cu itself on the CPU
# (tests/sgemm_pipe_cpu.cpp: the threads of a block as fibers of one thread, tests/cuda_cpu_block.h, cp.async as a plain
# copy) at every check shape of the task, at its default knobs and at a setting with cp.async, four
# stages, BK 8, chunks of 4 k and the other FFMA order. The inline PTX of cp.async is rewritten
# into calls of the harness's copy first (commit and wait become no-ops).
# usage: sgemm_pipe_cpu_test.sh SOURCE_DIR   (exit 77: no C++20 compiler with <ucontext.h>, or no python3)
set -u
src=$1
cxx=${CXX:-c++}
work=$(mktemp -d /tmp/temper-sgemm-pipe-cpu-XXXXXX)
trap 'rm -rf "$work"' EXIT
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
printf '#include <ucontext.h>\nint main() { ucontext_t c; return getcontext(&c); }\n' >"$work/probe.cpp"
"$cxx" -std=c++20 "$work/probe.cpp" -o "$work/probe" 2>/dev/null || { echo "SKIP: $cxx has no C++20 and <ucontext.h>"; exit 77; }

python3 - "$src/tasks/L1/sgemm/pipe.cu" "$work/pipe_cpu.cu" <<'PY' || exit 1
import re, sys
s = open(sys.argv[1]).read()
s, n1 = re.subn(r'asm volatile\("cp\.async\.c[ag]\.shared\.global \[%0\], \[%1\], (\d+), %2;\\n" ::"r"\(dst\), "l"\(src\), "r"\(bytes\) : "memory"\);',
                r'sim_copy(dst, src, \1, bytes);', s)
s, n2 = re.subn(r'asm volatile\("cp\.async\.c[ag]\.shared\.global \[%0\], \[%1\], (\d+);\\n" ::"r"\(dst\), "l"\(src\) : "memory"\);',
                r'sim_copy(dst, src, \1, \1);', s)
s = s.replace('asm volatile("cp.async.commit_group;\\n" ::: "memory");', '')
s = s.replace('asm volatile("cp.async.wait_group %0;\\n" ::"n"(PENDING) : "memory");', '')
if n1 != 2 or n2 != 2 or re.search(r"\basm\b", s):
    sys.exit("FAIL pipe.cu's cp.async helpers are not the ones this test rewrites (%d, %d rewritten)" % (n1, n2))
open(sys.argv[2], "w").write(s)
PY

failures=0
while read -r knobs; do
    defs=()
    for kv in $knobs; do defs+=("-D$kv"); done
    if ! "$cxx" -std=c++20 -O1 -w "-DKERNEL_FILE=\"$work/pipe_cpu.cu\"" "${defs[@]}" \
        "$src/tests/sgemm_pipe_cpu.cpp" -o "$work/run" 2>"$work/build.log"; then
        echo "FAIL pipe.cu $knobs: does not build on the CPU"
        head -20 "$work/build.log"
        failures=$((failures + 1))
        continue
    fi
    if "$work/run" >"$work/out"; then
        echo "ok   pipe.cu $knobs: $(grep -c '^ok' "$work/out") shapes right on the CPU"
    else
        echo "FAIL pipe.cu $knobs"
        grep -v '^ok' "$work/out" | head -10
        failures=$((failures + 1))
    fi
done <<'SETTINGS'
BM=256 BN=128 BK=16 TM=8 TN=16 WX=8 NS=3 FAST=1 KU=0 CP=0 ZZ=0
BM=256 BN=128 BK=8 TM=8 TN=16 WX=4 NS=4 FAST=1 KU=4 CP=1 ZZ=1
SETTINGS
[ $failures -eq 0 ] && echo "all passed" || echo "$failures failed"
[ $failures -eq 0 ]
