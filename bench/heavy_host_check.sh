#!/usr/bin/env bash
# heavy_host_check.sh: builds bench/heavy_host_check.cpp against each of issue 31's wgmma candidates at
# several knob settings and runs it (no GPU needed: it checks their index maths and GELU numerics on the
# host), then compiles each candidate with nvcc for sm_90a at the same settings and prints ptxas's register
# and spill counts. Run from anywhere; needs g++ and, for the second part, nvcc (skipped without it).
set -u
cd "$(dirname "$0")/.." || exit 1
tmp=$(mktemp -d /tmp/heavy-host-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
run() { # run FILE CHECKS KNOBS...
    local file=$1 checks=$2
    shift 2
    # shellcheck disable=SC2086
    if g++ -O2 -std=c++17 -DCANDIDATE_PATH="\"../$file\"" $checks "$@" bench/heavy_host_check.cpp -o "$tmp/check" &&
        "$tmp/check" >"$tmp/out" 2>&1; then
        echo "ok   $file $* ($(grep -v ': ok$' "$tmp/out" | tr '\n' ' '))"
    else
        echo "FAIL $file $*"
        cat "$tmp/out"
        fail=1
    fi
    if command -v nvcc >/dev/null; then
        nvcc -arch=sm_90a -cubin -o "$tmp/k.cubin" -Xptxas -v "$@" -x cu "$file" 2>&1 |
            awk '/Compiling entry/ {k=$(NF-2)} /spill/ {s=$1" B stack, "$5" B spill stores"}
                 /Used/ {print "     " k ": " $5 " registers, " s}'
    fi
}
base="-DBM=128 -DBN=256 -DCONS=2 -DWS=1 -DSTAGES=4"
for knobs in "$base -DGROUP=16" "-DBM=128 -DBN=256 -DCONS=2 -DWS=0 -DSTAGES=4 -DGROUP=16" \
    "-DBM=256 -DBN=128 -DCONS=2 -DWS=1 -DSTAGES=4 -DGROUP=8" "-DBM=64 -DBN=128 -DCONS=1 -DWS=1 -DSTAGES=6 -DGROUP=4"; do
    # shellcheck disable=SC2086
    run tasks/L2/gemm_bias_gelu/wgmma.cu "-DCHECK_EPILOGUE -DCHECK_GELU" $knobs -DGELU_TANH=1
    # shellcheck disable=SC2086
    run tasks/L3/mlp_block/wgmma.cu "-DCHECK_EPILOGUE -DCHECK_GELU" $knobs -DGELU_TANH=0
    # shellcheck disable=SC2086
    run tasks/L2/int8_gemm/wgmma.cu "-DCHECK_EPILOGUE -DCHECK_INT8" $knobs
    # shellcheck disable=SC2086
    run tasks/L3/moe_grouped_gemm/wgmma.cu "-DCHECK_EPILOGUE -DCHECK_MOE" $knobs
done
exit $fail
