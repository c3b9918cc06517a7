#!/usr/bin/env bash
# agent_loop_test.sh: `temper agent` runs its whole loop on PoCL (OpenCL softmax) against a
# scripted model server in one API shape (openai: chat completions; anthropic: the Messages API).
# The server (tests/agent/fake_model.py, Python's standard library) is the only stand-in: no
# language model runs on the test machine; the harness, PoCL and the store are real. Its replies
# do not compile, fail a check, cheat (write only the first rows; skip each row's tail; a correct
# kernel for another, easier task, which is refused before it is evaluated), win,
# carry reasoning text, hold no code block, are cut off, or are slow (past the client's timeout,
# then retried); it also answers 429 with Retry-After, 500, a 200 whose body is a proxy's page (and,
# as OpenAI's reasoning models do, 400s asking for max_completion_tokens and refusing a temperature). The loop must end with the first correct kernel (with
# --no-timing, the best is the first correct one), judge both cheats incorrect, record every call
# with its tokens, latency and reasoning apart from the code, never store the key, and not crash.
# usage: agent_loop_test.sh TEMPER_BINARY SOURCE_DIR openai|anthropic
set -u
temper=$1
src=$2
api=$3
. "$src/tests/agent/lib.sh"

export TEST_MODEL_KEY=sk-temper-test-5f1a9c
require=false
[ "$api" = openai ] && require=true
python3 "$src/tests/agent/make_script.py" "$work/script.json" "$src/tests/agent/kernels" "$src/tasks" '{
 "require_completion_tokens": '$require', "reject_temperature": '$require',
 "roles": {
  "planner": [{"content": "Plan 1: one work-group per row."},
              {"status": 429, "error": "rate limited, slow down", "type": "rate_limit_error", "retry_after": 1},
              {"content": "Plan 2: fewer passes."},
              {"status": 500, "error": "the upstream failed"},
              {"content": "Plan 3: vector loads."},
              {"delay": 4, "content": "too late"},
              {"content": "Plan 4: one row per work-item."},
              {"raw": "<html><body>502 Bad Gateway</body></html>"},
              {"content": "Plan 5."}, {"content": "Plan 6."}],
  "coder": [{"kernel": "compile_error.cl"},
            {"kernel": "first_rows.cl"},
            {"content": "```c\n// @temper task softmax\n__kernel void softmax_cut(__global float *y", "finish": "length"},
            {"content": "I would use vector loads, but I have no kernel for you today."},
            {"kernel": "tasks/L1/vector_add/naive.cl"},
            {"kernel": "task/rows.cl", "reasoning": "The CPU wants one row per work-item.",
             "before": "<think>Rows are independent, so no barriers are needed.</think>\nHere it is:\n\n"},
            {"kernel": "task/block.cl"}],
  "debugger": [{"kernel": "overflow.cl"}, {"kernel": "skip_tail.cl"}]},
 "defaults": {"planner": {"content": "Keep going."}, "coder": {"content": "No more."},
              "debugger": {"content": "No more."}, "judge": {"content": "Memory-bound.\nAvoid: two passes.\nTry: one."}}
}'
start_server "$work/script.json"
endpoint=http://127.0.0.1:$port
[ "$api" = openai ] && endpoint=$endpoint/v1
"$temper" agent softmax --device opencl --endpoint "$endpoint" --api "$api" --model scripted --key-env TEST_MODEL_KEY \
    --budget 10 --plateau 20 --no-timing --timeout 2 --backoff 0.05 --retries 3 --out "$work/best.cl" --json \
    >"$work/summary.json" 2>"$work/agent.err"
status=$?
stop_server
[ $status -eq 0 ] && ok "agent exits 0 (a correct kernel was found)" ||
    { fail "agent exit $status"; tail -20 "$work/agent.err" | sed 's/^/     /'; }
grep -qiE 'sanitizer|segmentation|abort' "$work/agent.err" && fail "agent crashed: $(grep -iE 'sanitizer|segmentation|abort' "$work/agent.err" | head -2)"
j() { python3 -c "import json,sys; d=json.load(open('$work/summary.json')); print($1)" 2>/dev/null; }
[ "$(j "d['best']['made_by']")" = coder ] && ok "the best was written by the coder" || fail "best made by '$(j "d['best']['made_by']")'"
[ "$(j "d['best']['source'] == open('$src/tasks/L1/softmax/rows.cl').read()")" = True ] &&
    ok "the best is the first correct kernel (rows.cl, from the reply that carried reasoning)" ||
    fail "the best is not rows.cl"
[ "$(j "d['found_better']")" = True ] && ok "found_better" || fail "found_better is $(j "d['found_better']")"
[ "$(j "d['stop_reason']")" = "the budget of 10 kernels was spent" ] && ok "stopped at the budget" ||
    fail "stop reason '$(j "d['stop_reason']")'"
outcomes=$(j "' '.join(f'{k}={v}' for k, v in sorted(d['outcomes'].items()))")
[ "$outcomes" = "compile_error=1 correct=2 cut_off=1 incorrect=3 no_code=2 wrong_task=1" ] && ok "outcomes: $outcomes" ||
    fail "outcomes '$outcomes'"
session=$(j "d['session_id']")

# The cheats were judged incorrect by the harness.
for cheat in "only the first rows" "the tail is skipped" "exp(xr[j]) / (sum * exp(m))"; do
    v=$(sqlite3 "$db" "select group_concat(e.verdict) from agent_candidates a join evaluations e on e.id = a.eval_id
        where a.session_id = $session and instr(a.source, '$cheat') > 0")
    [ "$v" = incorrect ] && ok "the kernel with '$cheat' is incorrect" || fail "the kernel with '$cheat' got '$v'"
done
v=$(sqlite3 "$db" "select e.verdict from agent_candidates a join evaluations e on e.id = a.eval_id
    where a.session_id = $session and a.source glob '*undeclared_offset*'")
[ "$v" = compile_error ] && ok "the kernel that does not compile is compile_error" || fail "compile failure got '$v'"

wrong=$(sqlite3 "$db" "select count(*) from agent_candidates where session_id = $session and outcome = 'wrong_task'
    and eval_id is null and instr(source, '@temper task vector_add') > 0")
[ "$wrong" = 1 ] && ok "a kernel for another task is refused, not evaluated" || fail "wrong task: $wrong"

# Lineage: every evaluation of the agent has its role, its parent and its prompt.
lineage=$(sqlite3 "$db" "select count(*) from agent_candidates d join agent_candidates c on d.parent_eval_id = c.eval_id
    where d.session_id = $session and d.role = 'debugger' and c.role = 'coder' and c.outcome != 'correct'")
[ "$lineage" = 2 ] && ok "each repair's parent is the coder's failing kernel" || fail "debugger lineage: $lineage"
unparented=$(sqlite3 "$db" "select count(*) from evaluations e join agent_candidates a on a.eval_id = e.id
    where a.session_id = $session and a.role != 'start' and (e.parent_id is null or e.operator is not a.role
    or e.batch_id is not ('agent-' || $session || '-prompt-' || a.prompt_id))")
[ "$unparented" = 0 ] && ok "every evaluation carries its parent, role and prompt" || fail "$unparented evaluations lack lineage"

# Calls: tokens and latency of every answered one, the failures retried, reasoning kept apart.
untallied=$(sqlite3 "$db" "select count(*) from agent_calls where session_id = $session and status = 200 and error is null
    and (prompt_tokens is null or completion_tokens is null or latency_ms is null or latency_ms <= 0)")
[ "$untallied" = 0 ] && ok "every answered call has its tokens and latency" || fail "$untallied calls lack tokens or latency"
failed=$(sqlite3 "$db" "select group_concat(coalesce(status, 'none') || ':' || (error like '%imed out%'), ' ') from (
    select status, error from agent_calls where session_id = $session and error is not null and coalesce(status, 0) != 400
    order by id)")
[ "$failed" = "429:0 500:0 none:1 200:0" ] && ok "the 429, the 500, the slow answer and a 200 that is no answer were each retried" ||
    fail "failed calls: '$failed'"
reasoning=$(sqlite3 "$db" "select count(*) from agent_calls where session_id = $session and reasoning like
    '%one row per work-item%' and reasoning like '%Rows are independent%' and content not like '%<think>%'
    and content like '%@temper task softmax%'")
[ "$reasoning" = 1 ] && ok "reasoning (the API's and <think>'s) is stored apart from the code" ||
    fail "reasoning kept apart in $reasoning calls"
wait_s=$(python3 -c "
import json
rs = [json.loads(l) for l in open('$log')]
p = [r for r in rs if r['role'] == 'planner' and r['answer'] != 400]
i = next(k for k, r in enumerate(p) if r['answer'] == 429)
print('%.2f' % (p[i + 1]['time'] - p[i]['time']))")
python3 -c "import sys; sys.exit(0 if $wait_s >= 0.95 else 1)" && ok "Retry-After: 1 was honoured (${wait_s} s)" ||
    fail "the retry after Retry-After: 1 came after $wait_s s"
if [ "$api" = openai ]; then
    switched=$(python3 -c "
import json
rs = [json.loads(l) for l in open('$log')]
print(rs[0]['answer'], 'max_tokens' in rs[0]['body'], rs[1]['answer'], 'temperature' in rs[1]['body'],
      all('max_completion_tokens' in r['body'] and 'max_tokens' not in r['body'] and 'temperature' not in r['body']
          for r in rs[2:]))")
    [ "$switched" = "400 True 400 True True" ] &&
        ok "400s naming max_completion_tokens and temperature change the request for good" ||
        fail "token field switch and temperature drop: '$switched'"
    auth=$(python3 -c "import json; print(set(json.loads(l)['authorization'] for l in open('$log')))")
    [ "$auth" = "{'Bearer $TEST_MODEL_KEY'}" ] && ok "the key went as a bearer token" || fail "authorization: $auth"
else
    auth=$(python3 -c "import json; print(set((json.loads(l)['x_api_key'], json.loads(l)['anthropic_version'], 'system' in json.loads(l)['body']) for l in open('$log')))")
    [ "$auth" = "{('$TEST_MODEL_KEY', '2023-06-01', True)}" ] && ok "the key, version and system prompt went as Anthropic's API wants" ||
        fail "anthropic headers: $auth"
fi
leaks=$(sqlite3 "$db" .dump | grep -c "$TEST_MODEL_KEY")
[ "$leaks" = 0 ] && ok "the key is nowhere in the store" || fail "the key is in the store ($leaks lines)"
grep -q "$TEST_MODEL_KEY" "$work/agent.err" "$work/summary.json" && fail "the key was printed"

# The best kernel written to --out passes on its own.
"$temper" eval "$work/best.cl" --device opencl --no-timing --no-store >/dev/null 2>&1 && ok "--out's kernel is correct" ||
    fail "--out's kernel does not pass"

[ $failures -eq 0 ] || { echo "$failures failures"; exit 1; }
