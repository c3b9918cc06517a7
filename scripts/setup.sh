#!/bin/sh
# setup.sh: the first command of the README. Installs temper's dependencies from Debian's
# packages, builds build/temper, and runs the main job: a tune of the softmax task on the default
# device (the first CUDA GPU, else OpenCL: PoCL on a machine without a GPU), which ends with the
# best kernel found, written out and evaluated again, with its verdict and speedup.
set -eu
cd "$(dirname "$0")/.."
export TEMPER_TASKS=${TEMPER_TASKS:-$PWD/tasks} # tasks of this checkout (docs/task.md)
./scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
if ./build/temper devices --json 2>/dev/null | grep -q '"id": "cuda:'; then
    candidate=tasks/L1/softmax/block.cu best=build/best_softmax.cu
else
    candidate=tasks/L1/softmax/rows.cl best=build/best_softmax.cl
fi
echo "== temper tune $candidate"
./build/temper tune "$candidate" --budget 12 --out "$best"
echo "== temper eval $best"
./build/temper eval "$best"
