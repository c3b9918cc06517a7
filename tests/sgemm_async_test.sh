#!/usr/bin/env bash
# sgemm_async_test.sh: the cp.async SGEMM (tasks/L1/sgemm/async.cu) and its OpenCL twin (async.cl).
# CUDA kernels cannot run here, so the twin, which has the same tiles, ring of stages, transposed A
# tile, warp tiles, zero-filled edges and block order, is judged on every check shape of the task on
# PoCL at knob settings that cover each mapping (the CUDA default, 32 and 512 work-items, a B tile
# smaller than the work-group, BK 8 to 32, 2 to 4 stages, a last group of fewer block rows than
# GROUP, 4 to 16 lanes along N; and a shape that PoCL's optimiser once turned into a crash); and
# the CUDA kernel is compiled for sm_90 by NVRTC at its default, at the older tiled.cu's best shape
# and at 128x256 with 16x8 per thread and 4 stages, each of which its requires must allow, with no
# spills and within the registers its MINB blocks per SM leave (ptxas -v).
# usage: sgemm_async_test.sh TEMPER_BINARY SOURCE_DIR   (exit 77: neither PoCL nor NVRTC is here)
# (the mechanics: tests/sgemm_twin_lib.sh)
set -u
. "$(dirname "$0")/sgemm_twin_lib.sh"
OPENCL_SETTINGS='BM=128 BN=128 BK=8 TM=8 TN=16 LX=4 STAGES=3 GROUP=8
BM=256 BN=128 BK=16 TM=8 TN=8 LX=8 STAGES=4 GROUP=3
BM=256 BN=64 BK=8 TM=8 TN=8 LX=8 STAGES=2 GROUP=8
BM=64 BN=64 BK=32 TM=8 TN=16 LX=4 STAGES=4 GROUP=3
BM=128 BN=256 BK=16 TM=16 TN=8 LX=16 STAGES=3 GROUP=1
BM=256 BN=64 BK=16 TM=16 TN=4 LX=8 STAGES=4 GROUP=8'
NVRTC_SETTINGS='BM=256 BN=128 BK=16 TM=8 TN=16 LX=8 STAGES=3
BM=128 BN=256 BK=16 TM=16 TN=8 LX=8 STAGES=4 GROUP=1'
sgemm_twin_check "$1" "$2" async sgemm_async
