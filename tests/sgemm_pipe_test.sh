#!/usr/bin/env bash
# sgemm_pipe_test.sh: the pipelined SGEMM (tasks/L1/sgemm/pipe.cu) and its OpenCL twin (pipe.cl).
# CUDA kernels cannot run here, so the twin, which has the same tiles, ring of NS stages, register
# fragments, read of the next tile's first fragment before the barrier, unchecked interior loads
# and zero-filled edges, is judged on every check shape of the task (and the CPU bench shape,
# 256^3, where 256x128 tiles lie inside the matrices and FAST's unchecked loads run) on PoCL at
# knob settings that cover each path: the CUDA default, two stages (the first read after the
# barrier), four stages, BK 8, FAST=0, chunks of 4 and 2 k rows (KU), 16x8 and 4x4 per work-item,
# 4 lanes along N. The CUDA kernel
# is compiled for sm_90 by NVRTC at its default and at the alternatives its header names, each of
# which its requires must allow, with no spills and at most 255 registers (ptxas -v).
# usage: sgemm_pipe_test.sh TEMPER_BINARY SOURCE_DIR   (exit 77: neither PoCL nor NVRTC is here)
# (the mechanics: tests/sgemm_twin_lib.sh)
set -u
. "$(dirname "$0")/sgemm_twin_lib.sh"
OPENCL_SETTINGS='BM=256 BN=128 BK=16 TM=8 TN=16 WX=8 NS=3 FAST=1 KU=0
BM=256 BN=128 BK=16 TM=8 TN=16 WX=8 NS=2 FAST=1 KU=4
BM=128 BN=128 BK=8 TM=8 TN=16 WX=4 NS=4 FAST=1 KU=2 CP=1 ZZ=0
BM=128 BN=256 BK=8 TM=16 TN=8 WX=4 NS=3 FAST=0 KU=0 CP=1
BM=64 BN=64 BK=16 TM=4 TN=4 WX=8 NS=3 FAST=1 KU=4 ZZ=0
BM=64 BN=64 BK=8 TM=4 TN=4 WX=4 NS=2 FAST=0 KU=2'
NVRTC_SETTINGS='NS=2
BK=8
KU=4
BK=8 NS=2 ZZ=0
CP=1
CP=1 NS=4 BK=8
CP=1 NS=4 KU=4 FAST=0
TM=16 TN=8
BM=128 BN=128 BK=8
BM=128 BN=128 TN=8
BM=128 BN=256 TM=16 TN=8 FAST=0'
sgemm_twin_check "$1" "$2" pipe sgemm_pipe
