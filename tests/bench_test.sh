#!/usr/bin/env bash
# bench_test.sh: `temper bench` on PoCL, end to end: a bench of the L1 suite's naive OpenCL
# baselines with deliberately wrong candidates beside them (a wrong sum, a syntax error, a kernel
# of another task) prints the suite table; its counts are right, no wrong candidate is counted
# correct, and pass@k, fast_p and the geomean speedups in its JSON agree with the same metrics
# computed here (with exact binomials) from the evaluations the store holds for it. The stored
# bench reads back as printed (--show), --samples and --suite select, --compare reports changes,
# --run sums up a tune run (the same run again reuses its stored bench), and bad input gets a
# clear message and exit status 2.
# usage: bench_test.sh TEMPER_BINARY SOURCE_DIR
set -u
temper=$1
src=$2
work=$(mktemp -d /tmp/temper-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
export TEMPER_HOME=$work/home TEMPER_CACHE=$work/cache TEMPER_TASKS=$src/tasks
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }
db=$TEMPER_HOME/temper.db
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to read the JSON (scripts/install-deps.sh installs it)"; exit 77; }

# The samples: every L1 task's naive OpenCL baseline, and in vector_add three wrong ones, a CUDA
# file (no CUDA device: left out) and a file that is no candidate (ignored).
dir=$work/samples
for t in "$src"/tasks/L1/*/; do
    name=$(basename "$t")
    mkdir -p "$dir/$name"
    cp "$t/naive.cl" "$dir/$name/naive.cl"
done
sed 's/c\[i\] = a\[i\] + b\[i\];/c[i] = a[i] - b[i];/' "$src/tasks/L1/vector_add/naive.cl" >"$dir/vector_add/minus.cl"
sed 's/int i = get_global_id(0);/int i = get_global_id(0) this is not C;/' "$src/tasks/L1/vector_add/naive.cl" \
    >"$dir/vector_add/syntax.cl"
cp "$src/tasks/L1/gelu/naive.cl" "$dir/vector_add/gelu_kernel.cl"
cp "$src/tasks/L1/vector_add/naive.cu" "$dir/vector_add/naive.cu"
echo "notes, not a candidate" >"$dir/vector_add/README.txt"
grep -q 'a\[i\] - b\[i\]' "$dir/vector_add/minus.cl" && grep -q 'not C' "$dir/vector_add/syntax.cl" ||
    fail "the wrong candidates were not made"

# 1. The bench, as JSON, then its table (from the store).
"$temper" bench --from "$dir" --suite L1 --time-budget 0.01 --json >"$work/bench.json" 2>"$work/bench.err"
status=$?
[ $status -eq 0 ] && ok "bench exits 0" || { fail "bench exit $status"; tail -5 "$work/bench.err"; }
id=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['id'])" "$work/bench.json" 2>/dev/null)
"$temper" bench --show "${id:-0}" >"$work/table.txt" 2>&1 || fail "bench --show $id"
echo "---- the suite table (bench --show $id) ----"
cat "$work/table.txt"
echo "----"
grep -q "^suite: 13 tasks (13 with a correct sample), 16 samples, 13 correct" "$work/table.txt" &&
    ok "the table's suite line counts 13 tasks, 16 samples, 13 correct" || fail "suite line of the table"
grep -Eq "^vector_add +1 +4 +1 " "$work/table.txt" && ok "vector_add: 4 samples, 1 correct in the table" ||
    fail "vector_add row of the table"
grep -q "pass@1 " "$work/table.txt" && grep -q "fast_1.5 " "$work/table.txt" && ok "pass@1 and fast_p in the table" ||
    fail "metrics missing from the table"
"$temper" bench --show "${id:-0}" --json >"$work/shown.json" 2>&1
python3 - "$work/bench.json" "$work/shown.json" <<'PY' && ok "the stored bench reads back as --json printed it" || fail "bench --show --json differs"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
sys.exit(0 if a == b else 1)
PY

# 2. Counts, wrong candidates, and the metrics against the store's evaluations.
python3 - "$work/bench.json" "$db" <<'PY'
import json, math, sqlite3, sys
bench = json.load(open(sys.argv[1]))
db = sqlite3.connect(sys.argv[2])
bad = []
def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        bad.append(what)

tasks = {t["task"]: t for t in bench["tasks"]}
check(len(tasks) == 13 and bench["suite"]["tasks"] == 13, "13 L1 tasks in the bench")
check(bench["missing_tasks"] == [], "no L1 task missing")
check([x["path"].endswith("vector_add/naive.cu") for x in bench["left_out"]] == [True],
      "the CUDA file is left out, named (no CUDA device)")
check(all(t["samples"] == 1 and t["correct"] == 1 for n, t in tasks.items() if n != "vector_add"),
      "every other task: its naive baseline, 1 sample, correct")
va = tasks["vector_add"]
check(va["samples"] == 4 and va["correct"] == 1, "vector_add: 4 samples, 1 correct")
verdicts = {e["candidate"].rsplit("/", 1)[1]: e for e in va["evaluations"]}
check(verdicts["minus.cl"]["verdict"] == "incorrect" and not verdicts["minus.cl"]["correct"],
      "the wrong sum is incorrect, not counted")
check(verdicts["syntax.cl"]["verdict"] == "compile_error" and not verdicts["syntax.cl"]["correct"],
      "the syntax error is a compile_error, not counted")
check(verdicts["gelu_kernel.cl"]["verdict"] == "other_task" and not verdicts["gelu_kernel.cl"]["correct"],
      "a kernel of another task in vector_add's folder is not counted for it")

# Every evaluation of the bench is stored and linked; recompute the metrics from those rows.
rows = db.execute("select be.task, e.result from bench_evaluations be join evaluations e on e.id = be.evaluation_id "
                  "where be.bench_id = ?", (bench["id"],)).fetchall()
check(len(rows) == 16, "16 evaluations stored and linked to bench %d (got %d)" % (bench["id"], len(rows)))
per = {}
for task, text in rows:
    r = json.loads(text)
    sp = [t["speedup"] for t in r["timings"] if t.get("speedup") and t["speedup"] > 0]
    speed = math.exp(sum(map(math.log, sp)) / len(sp)) if sp else 0
    correct = r["verdict"] == "correct" and r["task"] == task
    per.setdefault(task, []).append((correct, speed))
check(sum(c for s in per.values() for c, _ in s) == 13, "13 correct evaluations in the store")
def pass_at_k(n, c, k):
    return 1 - math.comb(n - c, k) / math.comb(n, k)
suite = bench["suite"]
for k in (1, 5, 10):
    ts = [s for s in per.values() if len(s) >= k]
    want = sum(pass_at_k(len(s), sum(c for c, _ in s), k) for s in ts) / len(ts) if ts else None
    got = suite["pass_at_k"].get(str(k))
    check((want is None and got is None) or (got is not None and abs(got - want) < 1e-12),
          "pass@%d: %s, from the store %s" % (k, got, want))
best = {t: max([sp for c, sp in s if c] or [0]) for t, s in per.items()}
solved = {t: any(c for c, _ in s) for t, s in per.items()}
for p in ("0", "0.5", "0.8", "1", "1.5", "2"):
    pv = float(p)
    want = sum(1 for t in per if solved[t] and (pv <= 0 or best[t] > pv)) / len(per)
    got = suite["fast_p"][p]
    check(abs(got - want) < 1e-12, "fast_%s: %s, from the store %s" % (p, got, want))
correct_speeds = [sp for s in per.values() for c, sp in s if c and sp > 0]
want = math.exp(sum(map(math.log, correct_speeds)) / len(correct_speeds))
check(abs(suite["geomean_speedup"] - want) < 1e-9 * want, "geomean speedup %s, from the store %s" % (suite["geomean_speedup"], want))
check(suite["timed_correct_samples"] == 13, "13 correct timed samples")
for t, v in tasks.items():
    if abs((v["best_speedup"] or 0) - best[t]) > 1e-9 * max(best[t], 1):
        check(False, "%s: best speedup %s, from the store %s" % (t, v["best_speedup"], best[t]))
check(suite["vs_expert"]["tasks"] == 0 and suite["vs_expert"]["geomean_speedup"] is None,
      "no expert on OpenCL: vs_expert empty")
check(suite["both_backends_tasks"] == 0 and suite["both_backends_share"] is None, "one backend: no both-backends share")
sys.exit(1 if bad else 0)
PY
[ $? -eq 0 ] || fail "the bench's JSON (above)"

# 3. --samples and --suite select; --compare reports what changed.
small=$work/small
mkdir -p "$small/vector_add" "$small/sgemm" "$small/softmax_backward"
cp "$dir/vector_add/minus.cl" "$dir/vector_add/naive.cl" "$small/vector_add/"
cp "$dir/sgemm/naive.cl" "$small/sgemm/"
echo "// new to the store: its path is stored as this bench names it" >>"$small/vector_add/minus.cl"
"$temper" bench --from "$small//" --suite L1 --samples 1 --no-timing --json >"$work/small.json" 2>"$work/small.err"
status=$?
python3 - "$work/small.json" "$db" <<'PY' && ok "--samples 1 takes the first candidate by name; --suite L1 passes over an L2 folder; the L1 tasks without a folder are listed; DIR// gives paths with one slash" || { fail "--samples/--suite bench (exit $status)"; tail -3 "$work/small.err"; }
import json, sqlite3, sys
b = json.load(open(sys.argv[1]))
paths = [e["candidate"] for t in b["tasks"] for e in t["evaluations"]] + [x["path"] for x in b["left_out"]]
assert paths and not any("//" in p for p in paths), paths
stored = [r[0] for r in sqlite3.connect(sys.argv[2]).execute("SELECT path FROM candidates WHERE path LIKE '%small%'")]
assert any(p.endswith("/small/vector_add/minus.cl") for p in stored) and not any("//" in p for p in stored), stored
t = {x["task"]: x for x in b["tasks"]}
assert sorted(t) == ["sgemm", "vector_add"], t.keys()
assert t["vector_add"]["samples"] == 1 and t["vector_add"]["correct"] == 0  # minus.cl comes first
assert any(x["path"].endswith("vector_add/naive.cl") and x["why"] == "past --samples" for x in b["left_out"])
assert len(b["missing_tasks"]) == 11 and "softmax" in b["missing_tasks"], b["missing_tasks"]
assert b["suite"]["geomean_speedup"] is None and b["suite"]["fast_p"]["0"] == 0.5 and b["suite"]["fast_p"]["1"] == 0
PY
small_id=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['id'])" "$work/small.json" 2>/dev/null)
"$temper" bench --compare "${small_id:-0}" "${id:-0}" >"$work/compare.txt" 2>&1
status=$?
grep -Eq "^vector_add +0/1 -> 1/4 .* better$" "$work/compare.txt" && grep -Eq "^softmax +- -> 1/1 .* added$" "$work/compare.txt" &&
    grep -q "pass_at_k.1" "$work/compare.txt" && [ $status -eq 0 ] &&
    ok "bench --compare: vector_add better, softmax added, the suite's metrics side by side" ||
    { fail "bench --compare (exit $status)"; cat "$work/compare.txt"; }

# 4. --run: a small tune's evaluations summed up.
"$temper" tune "$src/tasks/L1/sgemm/tiled.cl" --budget 2 --batch 2 --retime 1 --screen-budget 0.01 --full-budget 0.01 \
    --json >"$work/tune.json" 2>"$work/tune.err" || { fail "the tune for --run"; tail -3 "$work/tune.err"; }
run=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['run_id'])" "$work/tune.json" 2>/dev/null)
"$temper" bench --run "${run:-0}" --json >"$work/run.json" 2>"$work/run.err"
n=$(python3 - "$work/run.json" "$db" "${run:-0}" <<'PY'
import json, sqlite3, sys
b = json.load(open(sys.argv[1]))
rows = sqlite3.connect(sys.argv[2]).execute("select id, verdict from evaluations where run_id = ?", (int(sys.argv[3]),)).fetchall()
t = b["tasks"][0]
ok = (len(b["tasks"]) == 1 and t["task"] == "sgemm" and t["samples"] == len(rows) and
      t["correct"] == sum(v == "correct" for _, v in rows) and
      sorted(e["store_id"] for e in t["evaluations"]) == sorted(i for i, _ in rows) and b["source"] == {"run": int(sys.argv[3])})
print(len(rows) if ok else "mismatch")
PY
)
case $n in [1-9]*) ok "bench --run $run: one task, its $n evaluations, their store ids" ;; *) fail "bench --run: $n"; tail -3 "$work/run.err" ;; esac
# The same run again makes the same bench: the stored one is reused (its id, and it says so), not
# stored twice.
count() { python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from benches').fetchone()[0])" "$db"; }
before=$(count)
"$temper" bench --run "${run:-0}" >"$work/run2.txt" 2>"$work/run2.err"
first_id=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['id'])" "$work/run.json" 2>/dev/null)
[ "$(count)" = "$before" ] && grep -q "^bench ${first_id:-x}$" "$work/run2.txt" &&
    grep -q "this bench is stored already, as bench ${first_id:-x}: not stored again" "$work/run2.err" &&
    ok "bench --run again: bench $first_id reused, not stored twice" ||
    fail "bench --run again: benches $before -> $(count), $(head -1 "$work/run2.txt"), $(cat "$work/run2.err")"
grep -q "^suite: 1 task (" "$work/run2.txt" && ok "one task reads '1 task'" || fail "suite line: $(grep suite: "$work/run2.txt")"

# 5. Bad input: a clear message and exit status 2, and nothing stored.
benches=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from benches').fetchone()[0])" "$db")
expect_usage() { # WHAT PATTERN ARGS...
    local what=$1 pattern=$2
    shift 2
    "$temper" bench "$@" >"$work/bad.out" 2>"$work/bad.err"
    local s=$?
    [ $s -eq 2 ] && grep -q -- "$pattern" "$work/bad.err" && ok "$what: exit 2, '$(head -1 "$work/bad.err")'" ||
        fail "$what: exit $s, '$(head -1 "$work/bad.err")'"
}
expect_usage "a missing folder" "no such folder" --from "$work/nowhere"
mkdir -p "$work/odd/not_a_task" "$work/odd/vector_add"
expect_usage "a folder named after no task" "the folder 'not_a_task' is named after no task" --from "$work/odd"
mkdir -p "$work/empty"
expect_usage "a folder with no task folders" "no task folders" --from "$work/empty"
expect_usage "an unknown run" "no run 987654" --run 987654
expect_usage "a run id that is no number" "--run" --run abc
expect_usage "an unknown bench (--compare)" "no bench 987654" --compare "${id:-0}" 987654
expect_usage "an unknown bench (--show)" "no bench 987654" --show 987654
expect_usage "an unknown level" "not a level" --from "$dir" --suite L7
expect_usage "two modes" "give one of" --from "$dir" --run 1
expect_usage "--samples 0" "--samples: 0 is out of range" --from "$dir" --samples 0
expect_usage "a negative --time-budget" "--time-budget: -1 is out of range" --from "$dir" --time-budget -1
"$temper" bench --from "$small" --device opencl:0 --device opencl:0 >/dev/null 2>"$work/bad.err"
status=$?
[ $status -eq 2 ] && grep -q "both take opencl candidates" "$work/bad.err" && ok "two devices of one backend: exit 2" ||
    fail "two OpenCL devices: exit $status, '$(head -1 "$work/bad.err")'"
"$temper" bench --from "$small" --device cuda:0 >/dev/null 2>"$work/bad.err"
status=$?
[ $status -eq 3 ] && ok "no CUDA device: exit 3, '$(head -1 "$work/bad.err")'" ||
    fail "--device cuda:0 here: exit $status, '$(head -1 "$work/bad.err")'"
# Only a CUDA sample, on a machine whose bench has no CUDA device: nothing to measure, said (exit 1).
mkdir -p "$work/cuda_only/softmax"
cp "$src/tasks/L1/softmax/block.cu" "$work/cuda_only/softmax/"
"$temper" bench --from "$work/cuda_only" --no-timing >/dev/null 2>"$work/bad.err"
status=$?
[ $status -eq 1 ] && grep -q "left out .*block.cu" "$work/bad.err" && grep -q "no sample in .* can be evaluated here" "$work/bad.err" &&
    ok "nothing a device here takes: exit 1, the file named" || fail "CUDA-only folder: exit $status, '$(cat "$work/bad.err")'"
after=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from benches').fetchone()[0])" "$db")
[ "$benches" = "$after" ] && ok "bad input stored no bench" || fail "benches $benches -> $after after bad input"

echo "$failures failures"
[ $failures -eq 0 ]
