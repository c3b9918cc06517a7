#!/usr/bin/env bash
# search_pocl.sh: the search-efficiency comparison on PoCL (the development machine's CPU):
# exhaustive landscapes of three tunable candidates whose knob spaces exceed 200
# configurations, then every strategy replayed on them with a fifth of the evaluations.
# usage: bench/search_pocl.sh [STORE_DIR]   (reuses the store there if it holds the landscapes)
set -eu
cd "$(dirname "$0")/.."
export TEMPER_TASKS=${TEMPER_TASKS:-$PWD/tasks} # tasks of this checkout (docs/task.md)
export TEMPER_HOME=${1:-/tmp/temper-search-pocl}
files="tasks/L1/vector_add/fast.cl tasks/L1/gelu/fast.cl tasks/L1/cumsum/fast.cl"
for f in $files; do
    build/temper tune "$f" --strategy exhaustive --budget 100000 --no-compiler-knobs --screen-budget 0.1 \
        --retime 1 --full-budget 0.3 >"$TEMPER_HOME.$(basename "$(dirname "$f")").log" 2>&1 || true
    tail -4 "$TEMPER_HOME.$(basename "$(dirname "$f")").log"
done
build/search_efficiency "$TEMPER_HOME/temper.db" opencl:0 0.2 5 0 $files
