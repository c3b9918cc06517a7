#!/usr/bin/env bash
# agent_interactive_test.sh: `temper agent --interactive`, driven through standard input, against
# a scripted model server (tests/agent/fake_model.py, the only stand-in: no language model runs
# here) on PoCL: a person adds a constraint that every later prompt carries, edits a failing
# proposal with $EDITOR (the edit is evaluated as the person's kernel, the proposal its parent),
# rejects a correct one (it joins nothing) and stops the run.
# usage: agent_interactive_test.sh TEMPER_BINARY SOURCE_DIR
set -u
temper=$1
src=$2
. "$src/tests/agent/lib.sh"

python3 "$src/tests/agent/make_script.py" "$work/script.json" "$src/tests/agent/kernels" "$src/tasks" '{
 "roles": {"coder": [{"kernel": "overflow.cl"}, {"kernel": "task/rows.cl"}, {"kernel": "task/block.cl"}]},
 "defaults": {"planner": {"content": "Plan."}, "coder": {"content": "No more."}}
}'
printf '#!/bin/sh\ncp "%s" "$1"\n' "$src/tasks/L1/softmax/block.cl" >"$work/editor.sh"
chmod +x "$work/editor.sh"
start_server "$work/script.json"
printf 'x\nc keep local memory under 16 KB\ne\nr\ns\n' | EDITOR=$work/editor.sh "$temper" agent softmax --device opencl \
    --endpoint "http://127.0.0.1:$port/v1" --model scripted --budget 5 --plateau 20 --no-timing --debug-rounds 0 \
    --interactive --json >"$work/summary.json" 2>"$work/agent.err"
status=$?
stop_server
[ $status -eq 0 ] && ok "exit 0" || { fail "exit $status"; tail -5 "$work/agent.err"; }
grep -q "answer a, r, e, c TEXT or s" "$work/agent.err" && ok "an unknown answer is asked again" || fail "no re-ask"
grep -q "verdict: incorrect" "$work/agent.err" && ok "the proposal is shown with its verdict" || fail "no verdict shown"
j() { python3 -c "import json,sys; d=json.load(open('$work/summary.json')); print($1)" 2>/dev/null; }
[ "$(j "d['best']['made_by'], d['best']['source'] == open('$src/tasks/L1/softmax/block.cl').read()")" = "person True" ] &&
    ok "the person's edit is the best" || fail "best: $(j "d['best']['made_by']")"
[ "$(j "d['stop_reason']")" = "the person stopped the run" ] && ok "the person stopped the run" ||
    fail "stop reason: $(j "d['stop_reason']")"
[ "$(j "d['kernels'], d['outcomes']")" = "3 {'correct': 2, 'incorrect': 1, 'rejected': 1}" ] &&
    ok "three proposals: the first incorrect and edited (the edit correct), the second rejected, the third correct" || fail "outcomes: $(j "d['kernels'], d['outcomes']")"
session=$(j "d['session_id']")
parent=$(sqlite3 "$db" "select count(*) from evaluations e join evaluations p on p.id = e.parent_id
    where e.operator = 'person' and p.operator = 'coder' and p.verdict = 'incorrect'")
[ "$parent" = 1 ] && ok "the edit's parent is the failing proposal" || fail "person lineage: $parent"
rejected=$(sqlite3 "$db" "select count(*) from agent_candidates where session_id = $session and outcome = 'rejected'
    and island is null and instr(source, 'softmax_rows_cpu') > 0")
[ "$rejected" = 1 ] && ok "the rejected kernel joined no island" || fail "rejected: $rejected"
carried=$(python3 -c "
import json
rs = [json.loads(l) for l in open('$log')]
print(' '.join(str(int('- keep local memory under 16 KB' in r['body']['messages'][1]['content'])) for r in rs))")
[ "$carried" = "0 0 1 1 1 1" ] && ok "every prompt after the constraint carries it" || fail "constraint in prompts: $carried"
[ $failures -eq 0 ] || { echo "$failures failures"; exit 1; }
