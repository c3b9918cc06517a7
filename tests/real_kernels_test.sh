#!/bin/sh
# real_kernels_test.sh TEMPER SOURCE_DIR BACKEND: evaluates the real-kernel set (tests/real/TASK/,
# kernels ported from public code bases, each with the verdict it should get in an `@expect`
# line) on the first device of BACKEND (cuda: the .cu files; opencl: the .cl files) and compares
# every verdict with its expectation. Exit 77 (skipped) when no such device is here; the CUDA
# files are compile-checked without a device by nvrtc_compile_test. TIMING=1 times each kernel
# too (eval's default timing) and prints its median and speedup over the task's baseline, for
# bench/RESULTS.md; otherwise --no-timing.
set -u
temper=$1 src=$2 backend=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TEMPER_HOME=$tmp/home TEMPER_CACHE=$tmp/cache
case $backend in
cuda) ext=cu ;;
opencl) ext=cl ;;
*) echo "usage: real_kernels_test.sh TEMPER SOURCE_DIR cuda|opencl" >&2; exit 2 ;;
esac
if ! "$temper" devices --json 2>/dev/null | grep -q "\"id\": \"$backend:"; then
    echo "SKIP no $backend device here (the CUDA files are compile-checked by nvrtc_compile)"
    exit 77
fi
timing=--no-timing
[ "${TIMING:-0}" = 1 ] && timing=
failed=0 n=0
for f in "$src"/tests/real/*/*."$ext"; do
    [ -f "$f" ] || continue
    n=$((n + 1))
    want=$(sed -n 's|^// @expect \([a-z_]*\).*|\1|p' "$f" | head -1)
    # shellcheck disable=SC2086
    "$temper" eval "$f" --json $timing --tasks "$src/tasks" --device "$backend:0" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    got=$(grep -o '"verdict": "[a-z_]*"' "$tmp/out" | head -1 | cut -d'"' -f4)
    msg=$(grep -o '"message": "[^"]*"' "$tmp/out" | head -1 | cut -d'"' -f4 | cut -c1-160)
    name=${f#"$src"/tests/real/}
    if [ $rc -gt 1 ] || [ -z "$got" ]; then
        echo "FAIL $name: eval exited $rc: $(head -c 300 "$tmp/err")"
        failed=$((failed + 1))
    elif [ "$got" != "$want" ]; then
        echo "FAIL $name: $got, expected $want: $msg"
        failed=$((failed + 1))
    else
        line="ok   $name: $got"
        if [ -z "$timing" ]; then
            med=$(grep -o '"median_ms": [0-9.e+-]*' "$tmp/out" | head -1 | cut -d' ' -f2)
            speed=$(grep -o '"speedup": [0-9.e+-]*' "$tmp/out" | head -1 | cut -d' ' -f2)
            [ -n "$med" ] && line="$line, median $med ms, ${speed}x the baseline"
        fi
        echo "$line"
    fi
done
echo "$((n - failed)) of $n real kernels got their expected verdicts on $backend"
[ $n -gt 0 ] && [ $failed -eq 0 ]
