#!/usr/bin/env bash
# history_paths_test.sh: the same source bytes evaluated from two files are one candidate in the
# store, but each evaluation names its own file: `temper history` (table and --json) and `temper
# export` show the file that evaluation read, as its result does, not the first one stored.
# usage: history_paths_test.sh TEMPER_BINARY SOURCE_DIR
set -u
temper=$1
src=$2
work=$(mktemp -d /tmp/temper-history-paths-XXXXXX)
trap 'rm -rf "$work"' EXIT
export TEMPER_HOME=$work/home TEMPER_CACHE=$work/cache TEMPER_TASKS=$src/tasks
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }

mkdir -p "$work/one" "$work/two"
cp "$src/tasks/L1/vector_add/naive.cl" "$work/one/first.cl"
cp "$src/tasks/L1/vector_add/naive.cl" "$work/two/second.cl"
for f in one/first.cl two/second.cl; do
    "$temper" eval "$work/$f" --no-timing --json >"$work/eval.json" 2>"$work/eval.err" ||
        { fail "eval $f: $(cat "$work/eval.json" "$work/eval.err")"; exit 1; }
done
ok "evaluated the same bytes as one/first.cl and two/second.cl"

"$temper" history vector_add --json >"$work/history.json" 2>"$work/history.err"
status=$?
python3 - "$work/history.json" "$work" <<'PY'
import json, sys
rows = [r for r in json.load(open(sys.argv[1])) if r["kind"] == "evaluation"]
got = [r["candidate"] for r in rows]
assert got == [sys.argv[2] + "/two/second.cl", sys.argv[2] + "/one/first.cl"], got
assert rows[0]["source_hash"] == rows[1]["source_hash"], rows
PY
[ $? -eq 0 ] && [ $status -eq 0 ] && ok "history --json: each evaluation names its own file" ||
    fail "history --json (exit $status): $(cat "$work/history.err")"
"$temper" history vector_add >"$work/history.out" 2>"$work/history.err"
[ "$(head -2 "$work/history.out" | tail -1 | awk '{print $NF}')" = "$work/two/second.cl" ] &&
    [ "$(head -3 "$work/history.out" | tail -1 | awk '{print $NF}')" = "$work/one/first.cl" ] &&
    ok "history: the newest row names two/second.cl, the one before one/first.cl" ||
    fail "history: $(cat "$work/history.out" "$work/history.err")"
"$temper" export --format jsonl --task vector_add -o "$work/export.jsonl" 2>"$work/export.err"
status=$?
python3 - "$work/export.jsonl" "$work" <<'PY'
import json, sys
got = [json.loads(line)["candidate"]["path"] for line in open(sys.argv[1])]
assert got == [sys.argv[2] + "/one/first.cl", sys.argv[2] + "/two/second.cl"], got
PY
[ $? -eq 0 ] && [ $status -eq 0 ] && ok "export: each record's candidate.path is its own file" ||
    fail "export (exit $status): $(cat "$work/export.err")"

[ $failures -eq 0 ] && echo "all passed" || echo "$failures failed"
[ $failures -eq 0 ]
