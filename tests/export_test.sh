#!/usr/bin/env bash
# export_test.sh: `temper export` on a real PoCL tune: every evaluation of the run is exported
# once in jsonl and rl, the sft pairs are exactly the improving steps, the rewards follow the
# documented formula, every line parses with Python's json module, and Hugging Face `datasets`
# loads each file (from .venv, made by scripts/install-pydeps.sh); bad usage is refused clearly.
# usage: export_test.sh TEMPER_BINARY SOURCE_DIR LINEAGE_EVAL
set -u
temper=$1
src=$2
lineage_eval=$3
python=$src/.venv/bin/python3
if [ ! -x "$python" ]; then
    echo "SKIP: $python is missing (run scripts/install-pydeps.sh): datasets cannot be loaded"
    exit 77
fi
work=$(mktemp -d /tmp/temper-export-XXXXXX)
trap 'rm -rf "$work"' EXIT
# softmax at a small CPU bench shape (tests/small_bench_tasks.sh): what is checked is the export
# against the store, which no shape changes, and every timed evaluation of the tune takes at
# least 10 samples of the whole bench shape however short its budget.
"$src/tests/small_bench_tasks.sh" "$work/tasks" "$src/tasks" softmax='{"R": 128, "C": 4096}' || exit 1
export TEMPER_HOME=$work/home TEMPER_TASKS=$work/tasks:$src/tasks
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }
db=$TEMPER_HOME/temper.db

# A small real tune; outside it, an agent's step recorded with lineage (through the session API):
# an incorrect softmax, then a correct one made from it (an improving step whatever the timing).
"$temper" tune "$src/tasks/L1/softmax/rows.cl" --budget 5 --batch 2 --retime 1 --json >"$work/tune.json" 2>"$work/tune.err"
status=$?
[ $status -eq 0 ] && ok "tune exits 0" || { fail "tune exit $status"; tail -5 "$work/tune.err"; exit 1; }
run=$(sqlite3 "$db" "select json_extract(readfile('$work/tune.json'), '\$.run_id')")
export TEMPER_WORKER=${TEMPER_WORKER:-$(dirname "$temper")/temper-worker}  # for the session client
parent=$("$lineage_eval" "$src/tests/cases/opencl/unstable_softmax.cl" 0 test-agent 2>"$work/l1.err")
child=$("$lineage_eval" "$src/tests/cases/opencl/correct_softmax_block.cl" "${parent:-0}" test-agent 2>"$work/l2.err")
[ -n "$parent" ] && [ -n "$child" ] && ok "an agent's step stored with lineage ($parent -> $child)" ||
    { fail "lineage_eval: $(cat "$work/l1.err" "$work/l2.err")"; exit 1; }

for format in jsonl sft rl; do
    "$temper" export --format $format --run "$run" -o "$work/$format.jsonl" 2>"$work/$format.err"
    status=$?
    [ $status -eq 0 ] && ok "export --format $format --run $run exits 0" ||
        fail "export $format exit $status: $(cat "$work/$format.err")"
done
"$temper" export --format jsonl --task softmax >"$work/task.jsonl" 2>"$work/task.err" && ok "export --task to stdout" ||
    fail "export --task: $(cat "$work/task.err")"
"$temper" export --format sft --task softmax >"$work/task_sft.jsonl" 2>"$work/task.err" ||
    fail "export --format sft --task: $(cat "$work/task.err")"
"$python" "$src/tests/report/check_export.py" "$db" "$run" "$work/jsonl.jsonl" "$work/sft.jsonl" "$work/rl.jsonl" \
    "$work/task.jsonl" "$work/task_sft.jsonl" "$parent" "$child" || failures=$((failures + 1))

# Hugging Face datasets' JSON loader, offline, with its cache inside the work folder.
n() { wc -l <"$1" | tr -d ' '; }
HF_HOME=$work/hf HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1 "$python" "$src/tests/report/load_datasets.py" \
    "$work/jsonl.jsonl:$(n "$work/jsonl.jsonl")" "$work/sft.jsonl:$(n "$work/sft.jsonl")" \
    "$work/rl.jsonl:$(n "$work/rl.jsonl")" "$work/task.jsonl:$(n "$work/task.jsonl")" \
    "$work/task_sft.jsonl:$(n "$work/task_sft.jsonl")" 2>"$work/datasets.err" ||
    { fail "datasets could not load the exports"; tail -5 "$work/datasets.err"; }

# Bad usage (an unknown run id too): a clear message and exit 2; nothing matched: exit 1; a failed export leaves no file.
"$temper" export --format jsonl >/dev/null 2>"$work/e1"
[ $? -eq 2 ] && grep -q "exactly one of --run ID, --task T and --all" "$work/e1" && ok "no selector: exit 2" ||
    fail "no selector: $(cat "$work/e1")"
"$temper" export --format csv --all >/dev/null 2>"$work/e2"
[ $? -eq 2 ] && grep -q "'csv' is not a format" "$work/e2" && ok "unknown format: exit 2" || fail "format: $(cat "$work/e2")"
"$temper" export --format rl --run x1 >/dev/null 2>"$work/e3"
[ $? -eq 2 ] && grep -q "'x1' is not a run id" "$work/e3" && ok "bad run id: exit 2" || fail "run id: $(cat "$work/e3")"
"$temper" export --format jsonl --run 9999 -o "$work/none.jsonl" 2>"$work/e4"
[ $? -eq 2 ] && grep -q "no run 9999 in the store" "$work/e4" && [ ! -e "$work/none.jsonl" ] &&
    ok "unknown run: exit 2 (as bench --run and compare), says so" || fail "unknown run: $(cat "$work/e4")"
"$temper" export --format jsonl --task mlp_block -o "$work/empty.jsonl" 2>"$work/e6"
[ $? -eq 1 ] && grep -q "no evaluation of task 'mlp_block'" "$work/e6" && [ ! -e "$work/empty.jsonl" ] &&
    ! grep -q "records written" "$work/e6" && ok "a task with no evaluation: exit 1, says so, writes no file" ||
    fail "task without evaluations: $(cat "$work/e6"; ls "$work/empty.jsonl" 2>&1)"
"$temper" export --format jsonl --all -o "$work/no/such/dir/x.jsonl" 2>"$work/e5"
[ $? -eq 2 ] && grep -q "cannot write $work/no/such/dir/x.jsonl:" "$work/e5" && ok "unwritable -o: exit 2, names the file" ||
    fail "unwritable: $(cat "$work/e5")"
all=$("$temper" export --format jsonl --all 2>/dev/null | wc -l)
[ "$all" -eq "$(sqlite3 "$db" 'select count(*) from evaluations')" ] && ok "--all: every evaluation ($all)" ||
    fail "--all gave $all records"

echo "$failures failed"
[ $failures -eq 0 ]
