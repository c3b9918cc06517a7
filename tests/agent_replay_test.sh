#!/usr/bin/env bash
# agent_replay_test.sh: `temper agent --replay RUN` re-evaluates a recorded agent session's replies
# from the store, without an endpoint (the scripted server, tests/agent/fake_model.py, the only
# stand-in, is stopped first), with the session's settings, and reaches the same best kernel
# through the same outcomes; an unknown session is bad input. And a quota error from the endpoint is
# never retried and ends the run as bad input.
# usage: agent_replay_test.sh TEMPER_BINARY SOURCE_DIR
set -u
temper=$1
src=$2
. "$src/tests/agent/lib.sh"

python3 "$src/tests/agent/make_script.py" "$work/script.json" "$src/tests/agent/kernels" "$src/tasks" '{
 "roles": {"planner": [{"content": "Plan 1."}, {"content": "Plan 2."}],
           "coder": [{"kernel": "compile_error.cl"}, {"kernel": "task/rows.cl"}],
           "debugger": [{"kernel": "overflow.cl"}]},
 "defaults": {"planner": {"content": "Keep going."}, "coder": {"content": "No more."}}
}'
start_server "$work/script.json"
"$temper" agent softmax --device opencl --endpoint "http://127.0.0.1:$port/v1" --model scripted --budget 3 --no-timing \
    --seed 7 --json >"$work/first.json" 2>"$work/first.err"
status=$?
stop_server
[ $status -eq 0 ] && ok "the recorded run exits 0" || { fail "recorded run exit $status"; tail -5 "$work/first.err"; }
session=$(python3 -c "import json; print(json.load(open('$work/first.json'))['session_id'])")
before=$(sqlite3 "$db" "select count(*) from evaluations")

"$temper" agent --replay "$session" --json >"$work/replay.json" 2>"$work/replay.err"
status=$?
[ $status -eq 0 ] && ok "the replay exits 0 without an endpoint" || { fail "replay exit $status"; tail -5 "$work/replay.err"; }
same=$(python3 -c "
import json
a, b = json.load(open('$work/first.json')), json.load(open('$work/replay.json'))
print(a['best']['source_hash'] == b['best']['source_hash'] != '', a['outcomes'] == b['outcomes'], a['kernels'] == b['kernels'],
      b['replay_of'] == a['session_id'], b['session_id'] != a['session_id'])")
[ "$same" = "True True True True True" ] && ok "the replay reaches the same best kernel through the same outcomes" ||
    fail "replay differs (best, outcomes, kernels, replay_of, new session): $same"
after=$(sqlite3 "$db" "select count(*) from evaluations")
[ $((after - before)) -eq 4 ] && ok "the replay evaluated the start and the 3 recorded kernels again" ||
    fail "the replay added $((after - before)) evaluations"
replayed=$(sqlite3 "$db" "select count(*) || ' ' || sum(url = 'replay') from agent_calls where session_id = (select max(id) from agent_sessions)")
[ "$replayed" = "5 5" ] && ok "the replay records its 5 calls as replayed" || fail "replay calls: '$replayed'"

"$temper" agent --replay 999 >/dev/null 2>"$work/missing.err"
status=$?
[ $status -eq 2 ] && grep -q "no agent session 999" "$work/missing.err" && ok "an unknown session: exit 2, named" ||
    fail "unknown session: exit $status, $(cat "$work/missing.err")"
# A quota error is never retried: one request, exit 2, the message says so.
python3 "$src/tests/agent/make_script.py" "$work/quota.json" "$src/tests/agent/kernels" "$src/tasks" '{
 "roles": {"planner": [{"status": 429, "error": "You exceeded your current quota, please check your plan and billing details.",
                        "type": "insufficient_quota", "code": "insufficient_quota"}]}
}'
start_server "$work/quota.json"
"$temper" agent softmax --device opencl --endpoint "http://127.0.0.1:$port/v1" --model scripted --no-timing --retries 5 \
    --backoff 0.05 >/dev/null 2>"$work/quota.err"
status=$?
stop_server
requests=$(wc -l <"$log")
[ $status -eq 2 ] && [ "$requests" = 1 ] && grep -q "quota or billing error (not retried)" "$work/quota.err" &&
    ok "a quota error: one request, not retried, exit 2" ||
    fail "quota: exit $status, $requests requests, $(tail -1 "$work/quota.err")"
[ $failures -eq 0 ] || { echo "$failures failures"; exit 1; }
