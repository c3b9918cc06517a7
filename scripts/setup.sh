#!/bin/sh
# setup.sh: the first command of the README. Installs temper's dependencies from Debian's
# packages, builds build/temper, and runs the main job: an evaluation of a softmax kernel on the
# default device (the first CUDA GPU, else OpenCL, which is PoCL on a machine without a GPU),
# ending with its verdict table.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
if ./build/temper devices --json 2>/dev/null | grep -q '"id": "cuda:'; then
    candidate=tasks/L1/softmax/block.cu
else
    candidate=tasks/L1/softmax/block.cl
fi
echo "== temper eval $candidate"
./build/temper eval "$candidate"
