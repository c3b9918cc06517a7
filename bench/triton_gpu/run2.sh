#!/usr/bin/env bash
# The divisibility builds (commit f8be2f9) on the GPU, owed: the softmax at its defaults, at
# BLOCK=4096 num_warps=16 (Triton's do_bench: 0.733 ms specialised) and at BLOCK=256 num_warps=8,
# and the wrong one. Prepared as run.sh says.
set -u
cd .triton-gpu
. ../bench/carry_libs.sh
carry_libs_link lib ./temper ./temper-worker || exit 1
export TEMPER_HOME=/tmp/th2 TEMPER_CACHE=/tmp/tc2 TEMPER_TASKS=$PWD/../tasks PYTHONUNBUFFERED=1
./temper eval cand/triton_softmax.py 2>&1 | grep -E "verdict|message|R=65536|FAIL"
./temper eval cand/triton_softmax.py --set BLOCK=4096 --set num_warps=16 2>&1 | grep -E "verdict|message|R=65536|FAIL"
./temper eval cand/triton_softmax.py --set BLOCK=256 --set num_warps=8 2>&1 | grep -E "verdict|message|R=65536|FAIL"
./temper eval cand/wrong_no_max.py 2>&1 | grep -E "verdict|message"
