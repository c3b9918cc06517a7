#!/usr/bin/env bash
# sgemm_tma_test.sh: the TMA-fed SGEMM (tasks/L1/sgemm/tma.cu). It has no OpenCL twin (TMA,
# mbarriers and setmaxnreg have no OpenCL counterpart) and cannot run here, so its CUDA kernels are
# compiled for sm_90a by NVRTC at the defaults and at knob changes that cover each path: the refills
# by thread 0 instead of a producer warpgroup (PW=0), B read a k ahead (LP=1), the smaller register
# budget, 16- and 8-deep stages with deeper rings, 128x256 tiles with 4 lanes along N, and row-by-row
# tile order; each must compile with no spills. Its parse and temper's own compile path are
# nvrtc_compile_sgemm's; its verdicts on every check shape come from an H200 (bench/gpu.sh evals).
# usage: sgemm_tma_test.sh TEMPER_BINARY SOURCE_DIR   (exit 77: no NVRTC here)
# (the mechanics: tests/sgemm_twin_lib.sh)
set -u
. "$(dirname "$0")/sgemm_twin_lib.sh"
OPENCL_SETTINGS=''
NVRTC_SETTINGS='PW=0
LP=1
REGS=224
BK=16 NS=4
BK=8 NS=6
BM=128 BN=256 WX=4
GROUP=0
GROUP=16 NS=3'
sgemm_twin_check "$1" "$2" tma sgemm_tma
