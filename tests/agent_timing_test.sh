#!/usr/bin/env bash
# agent_timing_test.sh: `temper agent` with timing on PoCL against a scripted model server
# (tests/agent/fake_model.py, the only stand-in: no language model runs here): a correct kernel
# with knobs is tuned through the session's tune before the judge sees it, the judge's prompt
# carries its result (time, roofline share, bound) and its reply becomes the next prompts'
# reflection; the exit status follows found_better (no assertion on speed: timing on a busy
# machine is not deterministic). The first timed evaluation calibrates the fresh store's device.
# A second run stops at its roofline target; then the store's fastest kernel is in the
# knowledge base.
# usage: agent_timing_test.sh TEMPER_BINARY SOURCE_DIR
set -u
temper=$1
src=$2
. "$src/tests/agent/lib.sh"

python3 "$src/tests/agent/make_script.py" "$work/script.json" "$src/tests/agent/kernels" "$src/tasks" '{
 "roles": {"coder": [{"kernel": "task/rows.cl"}],
           "judge": [{"content": "Memory-bound: 2 GB/s of 40.\nAvoid: scalar loads.\nTry: SENTINEL-REFLECTION vload4."}]},
 "defaults": {"planner": {"content": "Plan."}, "coder": {"content": "No more kernels."}}
}'
start_server "$work/script.json"
"$temper" agent softmax --device opencl --endpoint "http://127.0.0.1:$port/v1" --model scripted --budget 2 \
    --time-budget 0.02 --tune-budget 2 --json >"$work/summary.json" 2>"$work/agent.err"
status=$?
stop_server
found=$(python3 -c "import json; print(json.load(open('$work/summary.json'))['found_better'])" 2>/dev/null)
{ [ $status -eq 0 ] && [ "$found" = True ]; } || { [ $status -eq 1 ] && [ "$found" = False ]; } &&
    ok "exit $status agrees with found_better $found" || { fail "exit $status, found_better '$found'"; tail -5 "$work/agent.err"; }
session=$(python3 -c "import json; print(json.load(open('$work/summary.json'))['session_id'])" 2>/dev/null)
tuned=$(sqlite3 "$db" "select count(*) from evaluations where operator = 'tune' or json_extract(result, '$.tune_phase') is not null")
[ "${tuned:-0}" -ge 2 ] && ok "the correct kernel's knobs were tuned ($tuned tune evaluations)" || fail "tune evaluations: '$tuned'"
judged=$(python3 -c "
import json
rs = [json.loads(l) for l in open('$log')]
j = [r for r in rs if r['role'] == 'judge']
u = j[0]['body']['messages'][1]['content'] if j else ''
print(len(j), '## result' in u and 'roofline' in u and 'bound' in u)")
[ "$judged" = "1 True" ] && ok "the judge saw the tuned kernel's result (time, roofline, bound)" || fail "judge: '$judged'"
reflected=$(python3 -c "
import json
rs = [json.loads(l) for l in open('$log')]
p = [r for r in rs if r['role'] == 'planner']
print(len(p), '## reflection' in p[-1]['body']['messages'][1]['content'] and 'SENTINEL-REFLECTION' in p[-1]['body']['messages'][1]['content'])")
[ "$reflected" = "2 True" ] && ok "the judge's reflection is in the next planner prompt" || fail "reflection: '$reflected'"
best_eval=$(python3 -c "import json; print(json.load(open('$work/summary.json'))['best']['eval_id'])")
timed=$(sqlite3 "$db" "select verdict = 'correct' and median_ms > 0 from evaluations where id = $best_eval")
[ "$timed" = 1 ] && ok "the best is a correct, timed evaluation" || fail "best eval $best_eval: '$timed'"


# The roofline target stops the loop at the first kernel that reaches it (on the store now
# calibrated; no tune this time).
start_server "$work/script.json"
"$temper" agent softmax --device opencl --endpoint "http://127.0.0.1:$port/v1" --model scripted --budget 5 \
    --time-budget 0.02 --tune-budget 0 --target-share 0.001 --json >"$work/target.json" 2>"$work/target.err"
stop_server
got=$(python3 -c "import json; d = json.load(open('$work/target.json')); print(d['kernels'], d['stop_reason'][:30])" 2>/dev/null)
case "$got" in
"1 a kernel reached"*) ok "the roofline target stops the loop at the first kernel that reaches it" ;;
*) fail "target: '$got'"; tail -3 "$work/target.err" ;;
esac

# The store's fastest correct softmax kernel on this device (each configuration at its latest timed
# evaluation of any verdict, kept when that one is correct, as best counts it) is in the knowledge
# base now.
fastest=$(sqlite3 "$db" "with latest as (select max(id) as id from evaluations where task = 'softmax' and
    (verdict != 'correct' or median_ms > 0) and task_hash is not null group by candidate, coalesce(options, ''),
    device_key) select e.id from latest l join evaluations e on e.id = l.id where e.verdict = 'correct' and
    e.median_ms > 0 order by e.median_ms, e.id limit 1")
hit=$("$temper" knowledge search softmax --json --limit 1 | python3 -c "
import json, sys
h = json.load(sys.stdin)[0]
print(h['kind'], h['task'], h['ref'])")
[ "$hit" = "kernel softmax eval $fastest" ] && ok "knowledge search finds the store's fastest softmax kernel" ||
    fail "knowledge search: '$hit', want the kernel of eval $fastest"
# Once the task changes (a copy of the suite whose softmax has another tolerance note), a kernel
# judged against the old task is no example any more.
cp -r "$src/tasks" "$work/tasks_changed"
sed -i 's/"tolerance_note": "/"tolerance_note": "Changed. /' "$work/tasks_changed/L1/softmax/task.json"
kinds=$(TEMPER_TASKS=$work/tasks_changed "$temper" knowledge search softmax --json --limit 50 | python3 -c "
import json, sys
print(sum(1 for h in json.load(sys.stdin) if h['kind'] == 'kernel' and h.get('task') == 'softmax'))")
[ "$kinds" = 0 ] && ok "a kernel judged against an older softmax is not offered" ||
    fail "knowledge search offers $kinds softmax kernels judged against the older task"
[ $failures -eq 0 ] || { echo "$failures failures"; exit 1; }
