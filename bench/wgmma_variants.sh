#!/usr/bin/env bash
# wgmma_variants.sh DIR: writes variants of tasks/L1/hgemm/wgmma.cu into DIR for one GPU run that
# settles what only the hardware can: the default, its single-barrier form (WS=0), 256x128 tiles,
# the default without the consumer's proxy fence after each stage lands, and B's descriptor with
# LBO and SBO swapped (right only if the PTX rule was read wrongly). Prints their paths.
set -eu
cd "$(dirname "$0")/.."
export TEMPER_TASKS=${TEMPER_TASKS:-$PWD/tasks} # tasks of this checkout (docs/task.md)
dir=$1
mkdir -p "$dir"
w=tasks/L1/hgemm/wgmma.cu
cp "$w" "$dir/wgmma.cu"
sed 's/@temper param WS 1 0/@temper param WS 0 1/' "$w" >"$dir/wgmma_ws0.cu"
sed -e 's/@temper param BM 128 256 64/@temper param BM 256 128 64/' \
    -e 's/@temper param BN 256 128/@temper param BN 128 256/' "$w" >"$dir/wgmma_256x128.cu"
sed '/full: tile kt has landed/{n;d}' "$w" >"$dir/wgmma_nofence.cu"
sed -e 's/^#define B_LBO B_BLOCK/#define B_LBO 1024/' -e 's/^#define B_SBO 1024/#define B_SBO B_BLOCK/' "$w" \
    >"$dir/wgmma_swap.cu"
for f in wgmma wgmma_ws0 wgmma_256x128 wgmma_nofence wgmma_swap; do
    cmp -s "$w" "$dir/$f.cu" && [ "$f" != wgmma ] && { echo "$f: the edit did not apply" >&2; exit 1; }
    echo "$dir/$f.cu"
done
