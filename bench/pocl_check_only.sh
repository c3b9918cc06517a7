#!/usr/bin/env bash
# pocl_check_only.sh: how long a check-only evaluation of the naive softmax takes on PoCL with a
# warm cache, and where the time goes. Runs each binary given (default build/temper) RUNS times,
# interleaved so that a noisy machine affects them alike, and prints the median wall time of
# the whole command and the median of each phase the evaluation reports.
# usage: bench/pocl_check_only.sh [RUNS] [BINARY...]
set -eu
cd "$(dirname "$0")/.."
export TEMPER_TASKS=${TEMPER_TASKS:-$PWD/tasks} # tasks of this checkout (docs/task.md)
runs=${1:-15}
shift || true
binaries=("$@")
[ ${#binaries[@]} -gt 0 ] || binaries=(build/temper)
export TEMPER_HOME=$(mktemp -d /tmp/temper-bench-XXXXXX)
candidate=tasks/L1/softmax/naive.cl
# Each binary its own build cache (binaries of different versions need not agree on its format),
# warmed by two evaluations (a binary that the first one built is rebuilt with the work-group
# functions PoCL compiled for it at launch once it is asked for again).
cache_of() { echo "$TEMPER_HOME/cache-$(echo "$1" | md5sum | cut -c1-8)"; }
for b in "${binaries[@]}"; do
    for warm in 1 2 3; do TEMPER_CACHE=$(cache_of "$b") "$b" eval "$candidate" --no-timing --device opencl >/dev/null; done
done
out=$(mktemp)
for ((i = 0; i < runs; i++)); do
    for b in "${binaries[@]}"; do
        start=$(date +%s.%N)
        TEMPER_CACHE=$(cache_of "$b") "$b" eval "$candidate" --no-timing --device opencl --json >"$out.json"
        end=$(date +%s.%N)
        python3 - "$b" "$start" "$end" "$out.json" >>"$out" <<'PY'
import json, sys
b, start, end, path = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
r = json.load(open(path))
assert r["verdict"] == "correct", r["message"]
p = r["phases_ms"]
print(b, (end - start) * 1e3, r["elapsed_ms"], p["build"], p.get("inputs", 0), p["reference"], p["device"],
      p["compare"], p["worker"])
PY
    done
done
python3 - "$out" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    rows.setdefault(f[0], []).append([float(x) for x in f[1:]])
cols = ["wall", "eval", "build", "inputs", "reference", "device", "compare", "worker"]
print("%-28s" % "binary (median ms)" + "".join("%10s" % c for c in cols))
base = None
for b, rs in rows.items():
    med = [statistics.median(r[i] for r in rs) for i in range(len(cols))]
    base = base or med
    print("%-28s" % b[-28:] + "".join("%10.1f" % m for m in med) + "   wall ratio %.3f" % (med[0] / base[0]))
PY
rm -f "$out" "$out.json"
