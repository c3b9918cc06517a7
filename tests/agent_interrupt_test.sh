#!/usr/bin/env bash
# agent_interrupt_test.sh: Ctrl-C (SIGINT) in the middle of `temper agent`, on PoCL against the
# scripted model server (tests/agent/fake_model.py, the only stand-in): the signal comes while
# the planner's call is in flight (its reply is held back); the loop ends that step, asks nothing
# more, finishes the session in the store as interrupted with every step kept, says where it
# stopped, and exits 130.
# usage: agent_interrupt_test.sh TEMPER_BINARY SOURCE_DIR
set -u
temper=$1
src=$2
. "$src/tests/agent/lib.sh"

python3 "$src/tests/agent/make_script.py" "$work/script.json" "$src/tests/agent/kernels" "$src/tasks" '{
 "roles": {"planner": [{"content": "Plan: one work-group per row.", "delay": 3}]},
 "defaults": {"planner": {"content": "Plan."}, "coder": {"content": "A reply without a kernel."}}
}'
start_server "$work/script.json"
"$temper" agent softmax --device opencl --endpoint "http://127.0.0.1:$port/v1" --model scripted --no-timing \
    --budget 6 --plateau 6 --json >"$work/run.json" 2>"$work/run.err" &
pid=$!
# the planner's request has reached the server: its reply is 3 s away
for _ in $(seq 1 600); do
    grep -q '"role": "planner"' "$log" 2>/dev/null && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
done
grep -q '"role": "planner"' "$log" 2>/dev/null || fail "the planner was never asked: $(tail -3 "$work/run.err")"
kill -INT $pid 2>/dev/null
wait $pid
status=$?
stop_server
[ $status -eq 130 ] && ok "Ctrl-C: exit 130" || fail "exit $status, not 130: $(tail -3 "$work/run.err")"
grep -q '"role": "coder"' "$log" && fail "the coder was asked after Ctrl-C" ||
    ok "the planner's step ended, nothing more was asked"
grep -q "interrupted (Ctrl-C) in iteration 1, after 0 kernels and 1 model call; recorded in the store as interrupted" \
    "$work/run.err" && ok "it says where it stopped and that the store has it" ||
    fail "no word of where it stopped: $(tail -3 "$work/run.err")"
python3 - "$work/run.json" <<'PY' && ok "the summary says interrupted, with the starting kernel as the best" || fail "the summary"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["interrupted"] is True and s["stop_reason"].startswith("interrupted (Ctrl-C)"), s
assert s["best"]["made_by"] == "start" and s["model_calls"] == 1, s
PY
# The store: the session finished as interrupted, the planner's prompt and call, the starting
# kernel's candidate row and evaluation, all kept.
got=$(sqlite3 "$db" "SELECT json_extract(summary, '\$.interrupted'), finished_at IS NOT NULL,
    (SELECT count(*) FROM agent_prompts p WHERE p.session_id = s.id AND p.role = 'planner'),
    (SELECT count(*) FROM agent_calls c WHERE c.session_id = s.id AND c.status = 200),
    (SELECT count(*) FROM agent_candidates a WHERE a.session_id = s.id AND a.role = 'start'),
    (SELECT count(*) FROM evaluations e WHERE e.id = s.best_eval_id) FROM agent_sessions s")
[ "$got" = "1|1|1|1|1|1" ] && ok "the store holds the interrupted session and every step of it" ||
    fail "the store: '$got'"
[ $failures -eq 0 ] || { echo "$failures failures"; exit 1; }
