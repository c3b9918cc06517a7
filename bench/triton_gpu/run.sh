#!/usr/bin/env bash
# Runs on the device machine, from the repository root: temper's Triton path on a real GPU
# (bench/RESULTS.md, session 23). Prepared here (the device machine is sent the main checkout, so
# what it runs travels in the ignored folder .triton-gpu, named in the call's carry):
#   G=.triton-gpu; mkdir -p $G/python $G/cand $G/lib; cp build/temper build/temper-worker $G/
#   cp python/temper_triton.py $G/python/; . bench/carry_libs.sh; carry_libs_collect $G/lib $G/temper $G/temper-worker
#   cp tasks/L1/softmax/triton_softmax.py bench/triton_gpu/wrong_no_max.py $G/cand/
#   cp bench/triton_gpu/*.py bench/triton_gpu/run.sh $G/; echo /$G/ >> "$(git rev-parse --git-path info/exclude)"
# then `bash .triton-gpu/run.sh` there; dobench2.py compares the JIT with and without its
# specialisation: `cd .triton-gpu && python3 dobench2.py cand/triton_softmax.py 1024,4 4096,16 256,8`.
set -u
cd .triton-gpu
. ../bench/carry_libs.sh
carry_libs_link lib ./temper ./temper-worker || exit 1
export TEMPER_HOME=/tmp/th TEMPER_CACHE=/tmp/tc TEMPER_TASKS=$PWD/../tasks PYTHONUNBUFFERED=1
O=${OUT:-/tmp/out}
mkdir -p "$O"
echo "== python3: $(command -v python3)"
./temper devices 2>&1 | tee "$O/devices.txt"
echo "== eval (defaults), eval BLOCK=4096 num_warps=16, eval of a wrong one"
./temper eval cand/triton_softmax.py 2>&1 | tail -25
./temper eval cand/triton_softmax.py --set BLOCK=4096 --set num_warps=16 2>&1 | tail -25
./temper eval cand/wrong_no_max.py 2>&1 | tail -12
echo "== do_bench"
python3 dobench.py cand/triton_softmax.py 1024,4 4096,16 2048,8 2>&1 | tail -10
echo "== tune"
timeout 150 ./temper tune cand/triton_softmax.py --budget 6 2>&1 | tail -30
