#!/usr/bin/env bash
# report_test.sh: `temper report` of a real PoCL tune, rendered by headless Chromium: the PNG has
# the window's size and is not blank, and the SVG's points are checked against the run's data in
# the store (tests/report/check_report.py: every evaluation a point at its arithmetic intensity
# and achieved GFLOP/s on the axes, the baseline marked, the roof from the device's calibration);
# a task's report marks the evaluations that have no time; a bench's report (a bench stored by
# `temper bench`, and one from a bench's JSON) places the fast_p values; bad usage is refused
# clearly.
# usage: report_test.sh TEMPER_BINARY SOURCE_DIR LINEAGE_EVAL
set -u
temper=$1
src=$2
lineage_eval=$3
python=python3
chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium" ]; then
    echo "SKIP: chromium is not installed (scripts/install-deps.sh installs it): the report cannot be rendered"
    exit 77
fi
work=$(mktemp -d /tmp/temper-report-XXXXXX)
trap 'rm -rf "$work"' EXIT
# softmax and vector_add at small CPU bench shapes (tests/small_bench_tasks.sh): what is checked is
# the page against the store, which no shape changes, and every timed evaluation of the tune and
# the bench takes at least 10 samples of the whole bench shape however short its budget.
"$src/tests/small_bench_tasks.sh" "$work/tasks" "$src/tasks" softmax='{"R": 128, "C": 4096}' \
    vector_add='{"N": 8388608}' || exit 1
export TEMPER_HOME=$work/home TEMPER_TASKS=$work/tasks:$src/tasks
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }
db=$TEMPER_HOME/temper.db

"$temper" calibrate >/dev/null 2>"$work/cal.err" && ok "calibrate" || { fail "calibrate: $(cat "$work/cal.err")"; exit 1; }
"$temper" tune "$src/tasks/L1/softmax/rows.cl" --budget 5 --batch 2 --retime 1 --json >"$work/tune.json" 2>"$work/tune.err"
status=$?
[ $status -eq 0 ] && ok "tune exits 0" || { fail "tune exit $status"; tail -5 "$work/tune.err"; exit 1; }
run=$(sqlite3 "$db" "select json_extract(readfile('$work/tune.json'), '\$.run_id')")

"$temper" report --run "$run" -o "$work/run.html" 2>"$work/report.err"
[ $? -eq 0 ] && [ -s "$work/run.html" ] && ok "report --run $run writes the page" || fail "report: $(cat "$work/report.err")"
width=1280 height=2000
(cd "$work" && HOME=$work timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --user-data-dir="$work/chromium" --screenshot="$work/run.png" --window-size=$width,$height "file://$work/run.html" \
    >"$work/chromium.log" 2>&1)
[ -s "$work/run.png" ] && ok "headless Chromium renders it" || { fail "no screenshot"; tail -5 "$work/chromium.log"; }
"$python" "$src/tests/report/check_report.py" run "$db" "$run" "$work/run.html" "$work/run.png" $width $height ||
    failures=$((failures + 1))
[ -n "${TEMPER_REPORT_KEEP:-}" ] && cp "$work/run.html" "$work/run.png" "$TEMPER_REPORT_KEEP/"

# A task's report, with an evaluation that was not correct (so not timed) beside the tune's.
export TEMPER_WORKER=${TEMPER_WORKER:-$(dirname "$temper")/temper-worker}  # for the session client
"$lineage_eval" "$src/tests/cases/opencl/unstable_softmax.cl" 0 test-agent >/dev/null 2>"$work/l.err" ||
    fail "lineage_eval: $(cat "$work/l.err")"
"$temper" report --task softmax -o "$work/task.html" 2>"$work/report.err" && ok "report --task softmax" ||
    fail "report --task: $(cat "$work/report.err")"
"$python" "$src/tests/report/check_report.py" task "$db" softmax "$work/task.html" || failures=$((failures + 1))

# A real bench stored by `temper bench` (two vector_add samples, a softmax one), rendered by id:
# the page must show the fast_p values that `temper bench --show ID --json` gives.
mkdir -p "$work/samples/vector_add" "$work/samples/softmax"
cp "$src/tasks/L1/vector_add/naive.cl" "$src/tasks/L1/vector_add/fast.cl" "$work/samples/vector_add/"
cp "$src/tasks/L1/softmax/rows.cl" "$work/samples/softmax/"
"$temper" bench --from "$work/samples" --suite L1 --time-budget 0.05 --json >"$work/bench_run.json" 2>"$work/bench.err"
bench_id=$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$work/bench_run.json" 2>/dev/null)
if [ -n "$bench_id" ]; then
    "$temper" bench --show "$bench_id" --json >"$work/bench_show.json" 2>>"$work/bench.err"
    "$temper" report --bench "$bench_id" -o "$work/bench_stored.html" 2>"$work/report.err" &&
        ok "report --bench $bench_id (a stored bench)" || fail "report --bench: $(cat "$work/report.err")"
    "$python" "$src/tests/report/check_report.py" bench "$work/bench_show.json" "$work/bench_stored.html" ||
        failures=$((failures + 1))
else
    fail "temper bench stored no bench: $(tail -3 "$work/bench.err")"
fi
"$temper" report --bench 999 -o "$work/none.html" 2>"$work/e5"
[ $? -eq 2 ] && grep -q "no bench 999" "$work/e5" && [ ! -e "$work/none.html" ] &&
    ok "unknown bench: exit 2 (an id that names nothing is bad input), no file" || fail "unknown bench: $(cat "$work/e5")"

"$temper" report --bench-json "$src/tests/report/bench_fixture.json" -o "$work/bench.html" 2>"$work/report.err" &&
    ok "report --bench-json" || fail "report --bench-json: $(cat "$work/report.err")"
"$python" "$src/tests/report/check_report.py" bench "$src/tests/report/bench_fixture.json" "$work/bench.html" ||
    failures=$((failures + 1))

# Bad usage and nothing to report: clear messages, no file left behind.
"$temper" report --run "$run" 2>"$work/e1"
[ $? -eq 2 ] && grep -q "needs -o FILE" "$work/e1" && ok "no -o: exit 2" || fail "no -o: $(cat "$work/e1")"
"$temper" report --run 999 -o "$work/none.html" 2>"$work/e2"
[ $? -eq 2 ] && grep -q "no run 999 in the store" "$work/e2" && [ ! -e "$work/none.html" ] &&
    ! ls "$work"/none.html.tmp.* >/dev/null 2>&1 && ok "unknown run: exit 2 (as bench --run and compare), no file" ||
    fail "unknown run: $(cat "$work/e2")"
"$temper" report --task mlp_block -o "$work/none.html" 2>"$work/e6"
[ $? -eq 1 ] && grep -q "no evaluation of task 'mlp_block'" "$work/e6" && [ ! -e "$work/none.html" ] &&
    ok "a task with no evaluation: exit 1 (nothing to report), no file" || fail "task without evaluations: $(cat "$work/e6")"
"$temper" report --run 1 --task softmax -o "$work/x.html" 2>"$work/e3"
[ $? -eq 2 ] && grep -q "exactly one of" "$work/e3" && ok "two selectors: exit 2" || fail "two selectors: $(cat "$work/e3")"
echo '{"id": 1}' >"$work/bad.json"
"$temper" report --bench-json "$work/bad.json" -o "$work/x.html" 2>"$work/e4"
[ $? -eq 2 ] && grep -q '"tasks"' "$work/e4" && grep -q "$work/bad.json" "$work/e4" &&
    ok "a bench without tasks: exit 2, says what is missing and in which file" || fail "bad bench: $(cat "$work/e4")"
"$temper" report --bench-json "$work/missing.json" -o "$work/x.html" 2>"$work/e5"
[ $? -eq 2 ] && grep -q "cannot read $work/missing.json: No such file" "$work/e5" && ! grep -q ":-1" "$work/e5" &&
    ok "a missing bench file: exit 2, says it cannot be read" || fail "missing bench file: $(cat "$work/e5")"

echo "$failures failed"
[ $failures -eq 0 ]
