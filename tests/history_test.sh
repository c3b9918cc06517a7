#!/usr/bin/env bash
# history_test.sh: `temper history` and `temper compare` on PoCL over real evaluations: history
# lists every evaluation, run and bench newest first with the verdict, time, spread, speedup,
# roofline share, parent and origin the store holds for it, filtered by task, device and limit;
# compare shows two stored results or files side by side, and --retime evaluates both again,
# interleaved, recording each re-timing with its parent, and reports the median ratio of the
# rounds it ran. Bad input gets exit status 2. On a fresh TEMPER_HOME, history and the other
# commands that only read the store say there is nothing and make no store.
# usage: history_test.sh TEMPER_BINARY SOURCE_DIR
set -u
temper=$1
src=$2
work=$(mktemp -d /tmp/temper-history-XXXXXX)
trap 'rm -rf "$work"' EXIT
export TEMPER_HOME=$work/home TEMPER_CACHE=$work/cache TEMPER_TASKS=$src/tasks
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }
db=$TEMPER_HOME/temper.db
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to read the JSON (scripts/install-deps.sh installs it)"; exit 77; }
sgemm=$src/tasks/L1/sgemm
sed 's/c\[i\] = a\[i\] + b\[i\];/c[i] = a[i] - b[i];/' "$src/tasks/L1/vector_add/naive.cl" >"$work/minus.cl"

# 0. A fresh TEMPER_HOME: the commands that only read the store say there is nothing (1: nothing
# found; 2: an id that names nothing) and make no store, nor its folder.
fresh() { # STATUS PATTERN ARGS...: the exit status and the message
    local want=$1 pattern=$2
    shift 2
    "$temper" "$@" >"$work/fresh.out" 2>"$work/fresh.err"
    local s=$?
    [ $s -eq "$want" ] && grep -q -- "$pattern" "$work/fresh.err" && ok "no store yet: $*: exit $want, '$(head -1 "$work/fresh.err")'" ||
        fail "no store yet: $*: exit $s, '$(cat "$work/fresh.err")'"
}
fresh 1 "no history: no store yet at $db" history
fresh 1 "no store yet" history --json
[ "$(tr -d ' \n' <"$work/fresh.out")" = "[]" ] && ok "history --json prints [] with no store" || fail "history --json: $(cat "$work/fresh.out")"
fresh 1 "no store yet" best vector_add
fresh 1 "no evaluation of task 'vector_add': no store yet" report --task vector_add -o "$work/fresh.html"
fresh 2 "no store yet" report --run 1 -o "$work/fresh.html"
fresh 1 "no evaluation: no store yet" export --format jsonl --all
fresh 2 "no store yet" export --format jsonl --run 1
fresh 2 "no store yet" bench --show 1
fresh 2 "no store yet" compare 1 2
# An unknown task is bad input (2) in every command that takes one, as `best` says.
fresh 2 "no task named 'no_such_task' under" best no_such_task
fresh 2 "no task named 'no_such_task' under .* (and nothing in the store for it)" history no_such_task
fresh 2 "no task named 'no_such_task' under .* (and nothing in the store for it)" report --task no_such_task -o "$work/fresh.html"
fresh 2 "no task named 'no_such_task' under .* (and nothing in the store for it)" export --format jsonl --task no_such_task
[ ! -e "$TEMPER_HOME" ] && ok "none of them made the store or its folder" || fail "a read-only command made $(ls -d "$TEMPER_HOME"/*)"

# Real evaluations: two timed sgemm kernels and a wrong vector_add, a small tune (operator
# "tune", a run), and a re-timing of the stored tiled kernel against the naive file.
"$temper" eval "$sgemm/tiled.cl" "$sgemm/naive.cl" --time-budget 0.01 >"$work/eval.out" 2>&1 || fail "eval of the sgemm kernels"
"$temper" eval "$work/minus.cl" --no-timing >/dev/null 2>&1
[ $? -eq 1 ] && ok "the wrong vector_add is evaluated, not correct" || fail "eval of the wrong kernel"
"$temper" tune "$sgemm/tiled.cl" --budget 2 --batch 2 --retime 1 --screen-budget 0.01 --full-budget 0.01 --json \
    >"$work/tune.json" 2>"$work/tune.err" || { fail "tune"; tail -3 "$work/tune.err"; }
tiled=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"select min(id) from evaluations where candidate in (select hash from candidates where path like '%tiled.cl')\").fetchone()[0])" "$db")
naive=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"select min(id) from evaluations where candidate in (select hash from candidates where path like '%sgemm/naive.cl')\").fetchone()[0])" "$db")

# 1. compare: two stored results side by side, exactly as stored.
"$temper" compare "$tiled" "$naive" --json >"$work/cmp.json" 2>"$work/cmp.err"
status=$?
python3 - "$work/cmp.json" "$db" "$tiled" "$naive" <<'PY' && [ $status -eq 0 ] && ok "compare $tiled $naive: both as stored, their time ratio, exit 0" || { fail "compare of stored results (exit $status)"; cat "$work/cmp.err"; }
import json, sqlite3, sys
c = json.load(open(sys.argv[1]))
db = sqlite3.connect(sys.argv[2])
ms = {}
for side, i in (("x", int(sys.argv[3])), ("y", int(sys.argv[4]))):
    row = db.execute("select verdict, median_ms, speedup from evaluations where id = ?", (i,)).fetchone()
    s = c[side]
    assert s["stored_id"] == i and s["evaluations"] == [i], s
    assert (s["verdict"], s["median_ms"], s["speedup"]) == row, (s, row)
    ms[side] = row[1]
assert c["ratio"]["rounds"] == 1 and abs(c["ratio"]["median"] - ms["x"] / ms["y"]) < 1e-12, c["ratio"]
assert c["retimed"] is False
PY
"$temper" compare "$tiled" "$naive" >"$work/cmp.txt" 2>&1 && grep -q "^time X/Y " "$work/cmp.txt" &&
    grep -q "^verdict  *correct  *correct" "$work/cmp.txt" && ok "compare prints both side by side and the ratio" ||
    { fail "compare's table"; cat "$work/cmp.txt"; }
minus=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"select max(id) from evaluations where task = 'vector_add'\").fetchone()[0])" "$db")
"$temper" compare "$minus" "$tiled" >"$work/cmp2.txt" 2>&1
status=$?
[ $status -eq 1 ] && grep -q "different tasks" "$work/cmp2.txt" && ok "compare with an incorrect result exits 1; no ratio across tasks" ||
    { fail "compare $minus $tiled: exit $status"; cat "$work/cmp2.txt"; }

# 2. compare --retime: both evaluated again, alternating, each re-timing recorded with its parent.
before=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select max(id) from evaluations').fetchone()[0])" "$db")
"$temper" compare "$tiled" "$sgemm/naive.cl" --retime --rounds 2 --time-budget 0.01 --json >"$work/retime.json" 2>"$work/retime.err"
status=$?
python3 - "$work/retime.json" "$db" "$tiled" "$before" <<'PY' && [ $status -eq 0 ] && ok "compare --retime: 2 rounds interleaved (x, y, x, y), re-timings of $tiled have it as parent, the ratio is the median of the rounds'" || { fail "compare --retime (exit $status)"; tail -3 "$work/retime.err"; }
import json, sqlite3, sys
c = json.load(open(sys.argv[1]))
db = sqlite3.connect(sys.argv[2])
tiled, before = int(sys.argv[3]), int(sys.argv[4])
rows = db.execute("select id, parent_id, batch_id, median_ms, options from evaluations where id > ? order by id", (before,)).fetchall()
assert len(rows) == 4, rows
x, y = c["x"]["evaluations"], c["y"]["evaluations"]
assert x == [rows[0][0], rows[2][0]] and y == [rows[1][0], rows[3][0]], (x, y, rows)   # interleaved
assert all(r[1] == tiled and r[2] == "compare" for r in (rows[0], rows[2])), rows
assert rows[1][1] is None and rows[3][1] is None, rows
orig = db.execute("select options from evaluations where id = ?", (tiled,)).fetchone()[0]
assert rows[0][4] == orig and rows[2][4] == orig, (orig, rows)   # the same knobs and options again
ratios = sorted([rows[0][3] / rows[1][3], rows[2][3] / rows[3][3]])
r = c["ratio"]
assert r["rounds"] == 2 and abs(r["median"] - sum(ratios) / 2) < 1e-12 and r["min"] == ratios[0] and r["max"] == ratios[1], (r, ratios)
assert c["retimed"] is True
PY

# 3. A bench, so that history lists one.
mkdir -p "$work/samples/sgemm"
cp "$sgemm/naive.cl" "$work/samples/sgemm/"
"$temper" bench --from "$work/samples" --no-timing --json >"$work/bench.json" 2>/dev/null || fail "bench for history"

# 4. history: everything, newest first, as the store holds it.
"$temper" history --limit 0 --json >"$work/history.json" 2>"$work/history.err" || fail "history --json"
python3 - "$work/history.json" "$db" "$tiled" <<'PY' && ok "history lists every evaluation, the run and the bench, newest first, with the store's verdict, time, spread, speedup, roofline share, parent and origin" || fail "history against the store"
import json, sqlite3, sys
h = json.load(open(sys.argv[1]))
db = sqlite3.connect(sys.argv[2])
tiled = int(sys.argv[3])
times = [r["time"] for r in h]
assert times == sorted(times, reverse=True), times
evals = [r for r in h if r["kind"] == "evaluation"]
rows = db.execute("select id, verdict, nullif(median_ms, 0), nullif(speedup, 0), roofline_share, parent_id, operator, "
                  "json_extract(timings, '$[0].spread'), run_id, task from evaluations order by id desc").fetchall()
assert [e["id"] for e in evals] == [r[0] for r in rows], ([e["id"] for e in evals], rows)
for e, r in zip(evals, rows):
    got = (e["id"], e["verdict"], e["median_ms"], e["speedup"], e["roofline_share"], e["parent_id"], e["operator"],
           e["spread"], e["run_id"], e["task"])
    assert got == r, (got, r)
assert any(e["parent_id"] == tiled for e in evals), "no re-timing with its parent"
assert any(e["operator"] == "tune" and e["run_id"] for e in evals), "no tune evaluation with its origin"
assert any(e["verdict"] == "incorrect" for e in evals)
runs = [r for r in h if r["kind"] == "run"]
assert len(runs) == 1 and runs[0]["evaluations"] == db.execute("select count(*) from evaluations where run_id = ?", (runs[0]["id"],)).fetchone()[0]
assert runs[0]["finished_at"] and runs[0]["task"] == "sgemm"
benches = [r for r in h if r["kind"] == "bench"]
assert len(benches) == 1 and benches[0]["tasks"] == 1 and benches[0]["samples"] == 1, benches
PY
"$temper" history sgemm --limit 3 --json >"$work/h3.json" 2>&1
python3 - "$work/h3.json" <<'PY' && ok "history sgemm --limit 3: the three newest sgemm rows" || fail "history with a task and a limit"
import json, sys
h = json.load(open(sys.argv[1]))
assert len(h) == 3 and all(r.get("task", None) in ("sgemm", None) and (r["kind"] != "bench" or r["tasks"] == 1) for r in h), h
PY
"$temper" history vector_add --device opencl --json >"$work/hv.json" 2>&1
python3 -c "import json,sys; h=json.load(open(sys.argv[1])); assert [r['verdict'] for r in h] == ['incorrect'], h" "$work/hv.json" &&
    ok "history vector_add --device opencl: its one incorrect evaluation" || fail "history vector_add --device opencl"
"$temper" history --device cuda >"$work/hc.out" 2>&1
status=$?
[ $status -eq 1 ] && grep -q "nothing in the store on cuda" "$work/hc.out" && ok "history --device cuda: nothing, exit 1" ||
    fail "history --device cuda: exit $status"
"$temper" history vectoradd >"$work/hx.out" 2>&1
status=$?
[ $status -eq 2 ] && grep -q "no task named 'vectoradd' under .* (and nothing in the store for it)" "$work/hx.out" &&
    ok "history of a name no task has: exit 2, says there is no such task" || fail "history vectoradd: exit $status, $(cat "$work/hx.out")"
for cmd in "report --task" "export --format jsonl --task"; do
    "$temper" $cmd vectoradd -o "$work/vectoradd.out" >/dev/null 2>"$work/hx.err"
    status=$?
    [ $status -eq 2 ] && grep -q "no task named 'vectoradd' under" "$work/hx.err" && [ ! -e "$work/vectoradd.out" ] &&
        ok "$cmd of a name no task has: exit 2, says there is no such task" || fail "$cmd vectoradd: exit $status, $(cat "$work/hx.err")"
done
"$temper" history --limit 0 >"$work/history.txt" 2>&1 || fail "history table"
grep -q "^time  *kind  *id  *task" "$work/history.txt" && grep -Eq " eval +[0-9]+ +sgemm +correct .* tune " "$work/history.txt" &&
    grep -Eq " eval +[0-9]+ +sgemm +correct .* $tiled +- " "$work/history.txt" && grep -Eq " run +[0-9]+ +sgemm +finished " "$work/history.txt" &&
    ok "history's table shows origins, parents and runs" || { fail "history's table"; cat "$work/history.txt"; }

# 5. Bad input.
"$temper" compare 987654 "$sgemm/naive.cl" >/dev/null 2>"$work/bad.err"
status=$?
[ $status -eq 2 ] && grep -q "no evaluation 987654" "$work/bad.err" && ok "compare of an unknown id: exit 2" || fail "compare unknown id: exit $status"
"$temper" compare "$work/nofile.cl" "$tiled" >/dev/null 2>"$work/bad.err"
status=$?
[ $status -eq 2 ] && grep -q "neither a file nor a stored evaluation" "$work/bad.err" && ok "compare of a missing file: exit 2" ||
    fail "compare missing file: exit $status"
"$temper" history --limit -1 >/dev/null 2>"$work/bad.err"
[ $? -eq 2 ] && grep -q -- "--limit: -1 is out of range" "$work/bad.err" && ok "history --limit -1: exit 2" || fail "history --limit -1"
"$temper" compare "$tiled" "$naive" --retime --rounds 0 >/dev/null 2>"$work/bad.err"
[ $? -eq 2 ] && grep -q -- "--rounds: 0 is out of range" "$work/bad.err" && ok "compare --rounds 0: exit 2" || fail "compare --rounds 0"

echo "$failures failures"
[ $failures -eq 0 ]
