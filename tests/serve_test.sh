#!/usr/bin/env bash
# serve_test.sh: `temper serve` with real processes on PoCL (tests/serve/serve_test.py), then the
# running server fuzzed against docs/openapi.yaml by Schemathesis (tests/serve/fuzz_test.sh).
# usage: serve_test.sh TEMPER_BINARY SOURCE_DIR
set -u
temper=$1
src=$2
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (scripts/install-deps.sh installs it)"; exit 77; }
"$temper" devices 2>/dev/null | grep -q opencl: || { echo "SKIP: no OpenCL device"; exit 77; }
python3 "$src/tests/serve/serve_test.py" "$temper" "$src"
