#!/usr/bin/env bash
# invalid_task_test.sh: an evaluation that fails at parse time keeps the task its candidate names
# when that task directive was read before the error and names a task there is: the result says
# it, the store records it, `temper history TASK` lists it and `temper export --task TASK` writes
# it. A candidate whose error comes before its task line, or whose task does not exist, has
# task "" (docs/result.md). Real evaluations on a real store.
# usage: invalid_task_test.sh TEMPER_BINARY SOURCE_DIR
set -u
temper=$1
src=$2
work=$(mktemp -d /tmp/temper-invalid-task-XXXXXX)
trap 'rm -rf "$work"' EXIT
export TEMPER_HOME=$work/home TEMPER_CACHE=$work/cache TEMPER_TASKS=$src/tasks
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }
db=$TEMPER_HOME/temper.db

body='__kernel void vector_add(__global float *c, __global const float *a, __global const float *b, int N)
{
    int i = get_global_id(0);
    if (i < N)
        c[i] = a[i] + b[i];
}'
printf '// @temper task vector_add\n// @temper launch vector_add grid(ceil_div(N, 256) block(256) args(c, a, b, N)\n%s\n' \
    "$body" >"$work/bad_launch.cl"
printf '// @temper launch vector_add grid(ceil_div(N, 256) block(256) args(c, a, b, N)\n// @temper task vector_add\n%s\n' \
    "$body" >"$work/launch_first.cl"
printf '// @temper task no_such_task\n// @temper launch vector_add grid(ceil_div(N, 256) block(256) args(c, a, b, N)\n%s\n' \
    "$body" >"$work/unknown_task.cl"

check() { # check FILE WANT_TASK
    "$temper" eval "$work/$1" --json >"$work/$1.json" 2>"$work/$1.err"
    local status=$?
    python3 - "$work/$1.json" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["verdict"] == "invalid", r["verdict"]
assert r["task"] == sys.argv[2], (r["task"], r["message"])
PY
    [ $? -eq 0 ] && [ $status -eq 1 ] && ok "$1: invalid (exit 1), task '$2' in the result" ||
        fail "$1: exit $status: $(cat "$work/$1.json" "$work/$1.err")"
    local stored
    stored=$(sqlite3 "$db" "SELECT task FROM evaluations WHERE json_extract(result, '\$.candidate') = '$work/$1'")
    [ "$stored" = "$2" ] && ok "$1: stored with task '$2'" || fail "$1: stored with task '$stored', want '$2'"
}
check bad_launch.cl vector_add
check launch_first.cl ""
check unknown_task.cl ""

"$temper" history vector_add >"$work/history.out" 2>"$work/history.err"
[ $? -eq 0 ] && grep -q "bad_launch.cl" "$work/history.out" && ! grep -q "launch_first.cl\|unknown_task.cl" "$work/history.out" &&
    ok "history vector_add lists the invalid evaluation of bad_launch.cl (only)" ||
    fail "history vector_add: $(cat "$work/history.out" "$work/history.err")"
"$temper" export --format jsonl --task vector_add -o "$work/export.jsonl" 2>"$work/export.err"
status=$?
python3 - "$work/export.jsonl" "$work/bad_launch.cl" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
assert len(rows) == 1, len(rows)
assert rows[0]["task"]["name"] == "vector_add" and rows[0]["verdict"] == "invalid", rows[0]["task"]["name"]
assert rows[0]["candidate"]["path"] == sys.argv[2], rows[0]["candidate"]
PY
[ $? -eq 0 ] && [ $status -eq 0 ] && ok "export --task vector_add writes it" ||
    fail "export --task vector_add: exit $status: $(cat "$work/export.err")"

[ $failures -eq 0 ] && echo "all passed" || echo "$failures failed"
[ $failures -eq 0 ]
