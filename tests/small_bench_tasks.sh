#!/usr/bin/env bash
# small_bench_tasks.sh OUT SUITE TASK=SHAPE...: test fixtures, for the tests that need a timed
# evaluation of a suite task but assert nothing that depends on its content (no task hash, no
# shape string, no timing value): copies each named task folder of SUITE (tasks/...) into OUT, at
# the same level, with its CPU bench shapes replaced by the one given (a JSON object), e.g.
# softmax='{"R": 64, "C": 1024}'. The suite's CPU bench shapes are sized for a meaningful CPU
# timing; at least MIN_SAMPLES runs of each, each checked against the baseline's run, dominate
# such a test on PoCL. Put OUT before SUITE in TEMPER_TASKS (OUT:SUITE): the copies shadow the
# suite's tasks of the same name, and the other tasks still come from SUITE. The copies are not
# the suite's tasks: their task_hash differs, so nothing they store stands for a suite result.
# Exit status 1 when a task is not in SUITE or its task.json has no CPU bench shapes.
set -u
out=$1
suite=$2
shift 2
for spec in "$@"; do
    name=${spec%%=*}
    shape=${spec#*=}
    dir=$(find "$suite" -mindepth 2 -maxdepth 2 -type d -name "$name" | head -1)
    [ -n "$dir" ] || { echo "small_bench_tasks: no task '$name' in $suite" >&2; exit 1; }
    level=$(basename "$(dirname "$dir")")
    mkdir -p "$out/$level"
    cp -R "$dir" "$out/$level/" || exit 1
    python3 - "$out/$level/$name/task.json" "$shape" <<'PY' || exit 1
import json, sys
path, shape = sys.argv[1], json.loads(sys.argv[2])
task = json.load(open(path))
bench = task.get("shapes", {}).get("bench", {})
if not isinstance(bench, dict) or "cpu" not in bench:
    sys.exit("small_bench_tasks: %s has no CPU bench shapes" % path)
bench["cpu"] = [shape]
json.dump(task, open(path, "w"), indent=2)
PY
done
